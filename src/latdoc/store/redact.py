"""Keep credentials out of the store.

Traces carry no headers, but URLs and messages can still hold a key: userinfo
(``https://user:pass@host``), query or fragment parameters such as ``api_key``
or ``sig``, a ``Bearer`` token, an ``sk-…`` key in an error message, or a
``--api-key`` option in recorded command-line arguments. :class:`Redactor`
replaces each with ``***`` before anything is written, as does any exact
secret the caller names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")
_PARAM = re.compile(r"([?&;#])([^=&;#]*)=([^&;#]*)")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")
_OPTION = re.compile(r"^(-{1,2}[A-Za-z0-9_-]+)=(.*)$", re.DOTALL)

_SECRET_NAMES = frozenset(
    {"key", "sig", "signature", "auth", "authorization", "password", "passwd", "pwd", "secret"}
)
_SECRET_ENDINGS = ("key", "token", "secret", "password", "credential", "credentials")


def is_secret_name(name: str) -> bool:
    """True for names like ``api_key``, ``X-Api-Key``, ``access_token``, ``sig``."""
    normal = name.strip().lstrip("-").lower().replace("-", "_")
    return normal in _SECRET_NAMES or normal.endswith(_SECRET_ENDINGS)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and secret-named parameter values replaced by ``***``."""
    url = _USERINFO.sub(rf"\g<1>{MASK}@", url)
    return _PARAM.sub(_mask_param, url)


def _mask_param(match: re.Match[str]) -> str:
    sep, name, value = match.groups()
    return f"{sep}{name}={MASK if is_secret_name(name) and value else value}"


class Redactor:
    """Scrubs text and JSON-like values; ``secrets`` are exact strings never to keep."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def text(self, text: str) -> str:
        """``text`` with URLs redacted, bearer tokens, ``sk-`` keys and known secrets masked."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
        text = _BEARER.sub(rf"\g<1> {MASK}", text)
        return _SK_KEY.sub(f"sk-{MASK}", text)

    def value(self, value: Any, *, mask_names: bool = False) -> Any:
        """A JSON-ready copy of ``value`` with every string passed through :meth:`text`.

        With ``mask_names``, mapping entries named like a credential and the argument
        after an option named like one (``--api-key KEY``) become ``***``. Values that
        are not JSON types become their ``str``.
        """
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self._option(value) if mask_names else self.text(value)
        if isinstance(value, Mapping):
            return {
                self.text(str(k)): MASK
                if mask_names and is_secret_name(str(k)) and v is not None
                else self.value(v, mask_names=mask_names)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple | set | frozenset):
            return self._items(list(value), mask_names)
        return self.text(str(value))

    def _items(self, items: list[Any], mask_names: bool) -> list[Any]:
        out: list[Any] = []
        after_secret_option = False
        for item in items:
            if after_secret_option and isinstance(item, str):
                out.append(MASK)
            else:
                out.append(self.value(item, mask_names=mask_names))
            after_secret_option = (
                mask_names
                and isinstance(item, str)
                and item.startswith("-")
                and "=" not in item
                and is_secret_name(item)
            )
        return out

    def _option(self, text: str) -> str:
        match = _OPTION.match(text)
        if match and is_secret_name(match.group(1)):
            return f"{match.group(1)}={MASK}"
        return self.text(text)
