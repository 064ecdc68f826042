"""The lab is an optional extra: without its packages the core still runs, and the
built-in endpoint and ``latdoc lab`` say in one line how to install them.

Each case runs ``latdoc`` in a child process where a meta path finder makes the
named packages impossible to import, as they are when the extra is not installed.
"""

from __future__ import annotations

import importlib.metadata
import re

from latdoc.cli._lab_extra import LAB_PACKAGES


def test_the_lab_packages_are_the_lab_extra_and_not_the_core() -> None:
    requires = importlib.metadata.requires("llm-latency-doctor") or []
    name = re.compile(r"[A-Za-z0-9_.-]+")

    def names(extra: str | None) -> set[str]:
        return {
            m.group(0).lower()
            for r in requires
            if (m := name.match(r))
            and (f'extra == "{extra}"' in r if extra else "extra ==" not in r)
        }

    assert names("lab") == set(LAB_PACKAGES)
    assert not names(None) & set(LAB_PACKAGES)
