"""The lab is an optional extra: the built-in endpoint and ``latdoc lab`` need its servers.

Checked before anything of :mod:`latdoc.lab` is imported, so a missing package is
one ``Error: …`` line saying how to install it, not a traceback from the middle of
a server start (uvicorn, hypercorn and trustme are imported only then).
"""

from __future__ import annotations

import importlib.util

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message

LAB_PACKAGES = ("starlette", "uvicorn", "hypercorn", "trustme", "dnslib")
"""The ``[lab]`` extra's packages, as they are imported."""

INSTALL = "pip install 'llm-latency-doctor[lab]'"


def missing_packages(names: tuple[str, ...]) -> list[str]:
    """Those of ``names`` that cannot be imported here, without importing any (an
    extra's packages, checked before a command that needs them starts)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def require_lab(what: str, otherwise: str = "") -> None:
    """A :class:`UsageError` naming the install command when ``what`` cannot have the lab."""
    require_extra(what, N_("the lab"), LAB_PACKAGES, INSTALL, otherwise)


def require_extra(
    what: str, extra: str, packages: tuple[str, ...], install: str, otherwise: str = ""
) -> None:
    """A :class:`UsageError` naming ``install`` when ``what`` cannot import the optional
    ``extra``'s ``packages`` here."""
    missing = missing_packages(packages)
    if missing:
        raise UsageError(
            Message(
                "{what} needs {extra}, an optional extra ({missing} not installed): "
                "{install}{otherwise}",
                what=Message.of(what),
                extra=Message.of(extra),
                missing=", ".join(missing),
                install=install,
                otherwise=Message.of(otherwise),
            )
        )
