"""The provider presets (``--provider NAME``) as a block each, and as the
``latdoc.providers/1`` document: each one's dialects, base URL, auth header and key
variables, with whether each variable is set, and its quirks. A key's value is never
shown: only whether its variable holds one. Builds; prints nothing.

Blocks, not a table: a base URL a user copies must stay whole, and at 80 columns a
table's URL column folds every one of them (``https://api.opena`` / ``i.com/v1``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from latdoc.errors import UsageError
from latdoc.probe.providers import ProviderSpec

PROVIDERS_SCHEMA = "latdoc.providers/1"


def _shown_url(spec: ProviderSpec, environ: Mapping[str, str]) -> tuple[str, bool]:
    """The base URL ``--provider`` would use here, and whether it is known; else the
    pattern the environment fills in."""
    try:
        return spec.url(environ), True
    except UsageError:
        return spec.base_url, False


INDENT = "    "
"""Where a preset's lines start under its name."""


def _heading(spec: ProviderSpec) -> Text:
    """``  groq  --api chat (also responses)``: the name, then the dialect it speaks
    unless ``--api`` names another it serves."""
    text = Text("  ")
    text.append(spec.name, style="bold")
    text.append(f"  --api {spec.api}")
    if spec.apis[1:]:
        text.append(f" (also {', '.join(spec.apis[1:])})", style="dim")
    return text


def _url(spec: ProviderSpec, environ: Mapping[str, str]) -> Text:
    """The base URL on a line of its own, never folded: a URL a user copies stays whole
    at any width (one wider than the terminal runs on, for the terminal to wrap)."""
    url, known = _shown_url(spec, environ)
    text = Text(INDENT, no_wrap=True, overflow="ignore")
    text.append(url, style="" if known else "dim")
    return text


def _keys(spec: ProviderSpec, environ: Mapping[str, str]) -> Text:
    """``key GROQ_API_KEY (set), in Authorization: Bearer``: each variable the key is
    read from in turn, whether it is set here, and the header the key goes in."""
    if not spec.key_variables:
        return Text("no key needed", style="dim")
    text = Text("key ")
    for n, variable in enumerate(spec.key_variables):
        if n:
            text.append(", else ")
        text.append(variable)
        text.append(" (set)" if environ.get(variable) else " (not set)", style="dim")
    text.append(f", in {spec.auth}", style="dim")
    return text


def _indented(text: Text) -> Padding:
    return Padding(text, (0, 0, 0, len(INDENT)), expand=False)


def render_providers(specs: Sequence[ProviderSpec], environ: Mapping[str, str]) -> RenderableType:
    """The presets, a block each: its name and dialect (and the others it serves), its
    base URL alone on a line, its key variables (whether each is set in ``environ``, and
    the header the key goes in), and its quirks in words."""
    lines: list[RenderableType] = []
    for spec in specs:
        lines += [_heading(spec), _url(spec, environ), _indented(_keys(spec, environ))]
        lines += [_indented(Text(said, style="dim")) for said in spec.quirks.words()]
        lines.append(Text(""))
    notes = Text(
        "--provider NAME picks its first api, its base URL and its key variable; a URL or "
        "--api given takes their place where the provider serves it. azure's URL is "
        "AZURE_OPENAI_ENDPOINT, and an Entra ID token in AZURE_OPENAI_AD_TOKEN goes as "
        "Authorization: Bearer; vertex's URL is built from GOOGLE_CLOUD_PROJECT and "
        "GOOGLE_CLOUD_LOCATION (global unless set). A NAME-intl preset is the provider's "
        "international host.",
        style="dim",
    )
    return Group(*lines, Padding(notes, (0, 0, 0, 2), expand=False))


def providers_to_dict(specs: Sequence[ProviderSpec], environ: Mapping[str, str]) -> dict[str, Any]:
    """The ``latdoc.providers/1`` document: each preset, its ``base_url`` null where the
    environment does not give it (``base_url_pattern`` says what would), each key
    variable with ``set``."""
    rows = []
    for spec in specs:
        url, known = _shown_url(spec, environ)
        rows.append(
            {
                "name": spec.name,
                "api": spec.api,
                "apis": list(spec.apis),
                "base_url": url if known else None,
                "base_url_pattern": spec.base_url,
                "auth": spec.auth,
                "key_variables": [
                    {"name": v, "set": bool(environ.get(v))} for v in spec.key_variables
                ],
                "hosts": list(spec.hosts),
                "quirks": _quirks_document(spec),
            }
        )
    return {"schema": PROVIDERS_SCHEMA, "providers": rows}


def _quirks_document(spec: ProviderSpec) -> dict[str, Any]:
    """A preset's quirks: the usage fields (dotted paths in the usage object) that count
    cached and reasoning tokens, where in a chunk the usage is, the thinking switch
    (its field, and the values that turn thinking on and off) or null, and notes."""
    quirks = spec.quirks
    switch = quirks.thinking
    return {
        "cached_tokens": list(quirks.usage.cached),
        "reasoning_tokens": list(quirks.usage.reasoning),
        "usage_at": quirks.usage.at,
        "thinking": None
        if switch is None
        else {"field": switch.path, "on": switch.on, "off": switch.off},
        "notes": list(quirks.notes),
    }


@dataclass(frozen=True)
class ShownProviders:
    """The presets as ``latdoc providers`` shows them (a
    :class:`~latdoc.report.shown.Shown`): the table, or the document, for ``environ``;
    no page, no run kept."""

    specs: Sequence[ProviderSpec]
    environ: Mapping[str, str]

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        return providers_to_dict(self.specs, self.environ)

    def shown(self) -> tuple[RenderableType, ...]:
        return (render_providers(self.specs, self.environ),)

    def page(self) -> None:
        return None

    def kept(self) -> None:
        return None
