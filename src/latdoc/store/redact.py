"""Keep credentials out of the store.

Traces carry no headers, but URLs and messages can still hold a key: userinfo
(``https://user:pass@host``), query or fragment parameters such as ``api_key``
or ``sig``, a ``Bearer`` token, an ``sk-…`` key or a Google API key (``AIza…``) or
OAuth access token (``ya29.…``) in an error message, or a
``--api-key`` option in recorded command-line arguments, an AWS access key id
(``AKIA…``, ``ASIA…``) or a SigV4 ``Credential=`` and ``Signature=``. :class:`Redactor`
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
_GOOGLE_KEY = re.compile(r"\b(?:AIza[A-Za-z0-9_-]{35}|ya29\.[A-Za-z0-9._-]+)")
_AWS_KEY = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
_SIGV4 = re.compile(r"\b(Credential|Signature)=[^,\s]+")
_KEY_MARKS = ("sk-", "AIza", "ya29.", "AKIA", "ASIA")
_OPTION = re.compile(r"^(-{1,2}[A-Za-z0-9_-]+)=(.*)$", re.DOTALL)

_SECRET_NAMES = frozenset(
    {"key", "sig", "signature", "auth", "authorization", "password", "passwd", "pwd", "secret"}
)
_PLAIN = re.compile(r"[A-Za-z0-9_.:+-]*\Z")
_PLAIN_TYPES = (int, float, bool)
_REMEMBER_CHARS = 512
_REMEMBER_TEXTS = 4096
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
        self._seen: dict[str, str] = {}

    def text(self, text: str) -> str:
        """``text`` with URLs redacted, bearer tokens, ``sk-`` and Google keys and known
        secrets masked."""
        # A busy run repeats the same URL, model and messages in every record:
        # each distinct short text is scrubbed once.
        clean = self._seen.get(text)
        if (
            clean is None
            and _PLAIN.match(text)
            and not any(mark in text for mark in _KEY_MARKS)
            and not self._secrets
        ):
            # Ids, names and timestamps of letters, digits and ``._:+-`` hold no URL, token or key.
            return text
        if clean is None:
            clean = self._scrub(text)
            if len(text) <= _REMEMBER_CHARS:
                if len(self._seen) >= _REMEMBER_TEXTS:
                    self._seen.clear()
                self._seen[text] = clean
        return clean

    def record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """A codec record (fixed field names, numbers, strings, nested values) scrubbed
        like :meth:`value`, faster: its own field names and plain numbers are kept as
        they are, and the chunk lists, integers only, are not walked."""
        out = dict(record)
        seen = self._seen
        for name, item in record.items():
            kind = type(item)
            if kind is str:
                out[name] = seen.get(item) or self.text(item)
            elif item is not None and kind not in _PLAIN_TYPES and name != "chunks":
                out[name] = self.value(item)
        return out

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
        text = _BEARER.sub(rf"\g<1> {MASK}", text)
        text = _GOOGLE_KEY.sub(MASK, text)
        text = _SIGV4.sub(rf"\g<1>={MASK}", text)
        text = _AWS_KEY.sub(MASK, text)
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
