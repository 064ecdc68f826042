"""The provider presets (``--provider NAME``) as a table, and as the
``latdoc.providers/1`` document: each one's dialects, base URL, auth header and key
variables, with whether each variable is set. A key's value is never shown: only
whether its variable holds one. Builds; prints nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
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


def _apis(spec: ProviderSpec) -> Text:
    text = Text(spec.api, style="bold")
    for other in spec.apis[1:]:
        text.append("\n" + other, style="dim")
    return text


def _keys(spec: ProviderSpec, environ: Mapping[str, str]) -> tuple[Text, Text]:
    """The key variables with the header the key goes in; ``yes`` or ``no`` beside each."""
    if not spec.key_variables:
        return Text("none needed", style="dim"), Text("")
    names = Text("\n".join(spec.key_variables))
    names.append(f"\n{spec.auth}", style="dim")
    marks = Text("\n".join("yes" if environ.get(v) else "no" for v in spec.key_variables))
    return names, marks


def render_providers(specs: Sequence[ProviderSpec], environ: Mapping[str, str]) -> RenderableType:
    """The presets in a table: name, dialect (then the others it serves), base URL, key
    variables (and the header the key goes in), whether each is set in ``environ``."""
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, show_edge=False)
    table.add_column("provider", no_wrap=True, style="bold")
    table.add_column("api", no_wrap=True)
    table.add_column("base URL", overflow="fold", ratio=1)
    table.add_column("key variable, header", no_wrap=True)
    table.add_column("set", no_wrap=True)
    for spec in specs:
        url, known = _shown_url(spec, environ)
        names, marks = _keys(spec, environ)
        table.add_row(spec.name, _apis(spec), Text(url, style="" if known else "dim"), names, marks)
    notes = Text(
        "--provider NAME picks its first api, its base URL and its key variable; a URL or "
        "--api given takes their place where the provider serves it. azure's URL is "
        "AZURE_OPENAI_ENDPOINT, and an Entra ID token in AZURE_OPENAI_AD_TOKEN goes as "
        "Authorization: Bearer; vertex's URL is built from GOOGLE_CLOUD_PROJECT and "
        "GOOGLE_CLOUD_LOCATION (global unless set).",
        style="dim",
    )
    return Group(Padding(table, (0, 0, 0, 2)), Padding(notes, (1, 0, 0, 2)))


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
            }
        )
    return {"schema": PROVIDERS_SCHEMA, "providers": rows}


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
