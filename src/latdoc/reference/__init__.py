"""What a healthy endpoint is: the reference profile, one cited definition.

latdoc's verdict asks what the user's request would save if a kind of slow were at a
healthy endpoint's level; its truth bank asks the same of the scenarios it draws. Both
read the level from here, and neither derives it from the other: each value is a
public figure with its source (``healthy.toml``, beside this module), shown with its
sources in ``docs/method.md``. How a run's measurements are held against it (the
estimation) belongs to each side and is never shared.

Each :class:`Quantity` has its value at the *slow edge* of healthy (past it, an
endpoint is slower than healthy ones are) and its *typical* value, a unit, which way is
slower, its sources and a line on why. :func:`healthy_reference` is the profile latdoc
ships; :func:`load_reference` reads a user's file of the same fields (any subset), laid
over it.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from latdoc.errors import UsageError
from latdoc.i18n import Message

__all__ = [
    "QUANTITIES",
    "Quantity",
    "ReferenceProfile",
    "Source",
    "healthy_reference",
    "load_reference",
    "parse",
    "reference_from_record",
    "reference_to_record",
]

QUANTITIES: tuple[str, ...] = (
    "dns_ms",
    "rtt_ms",
    "rtt_cross_region_ms",
    "tls_handshake_ms",
    "upload_mbit_s",
    "ttft_short_ms",
    "prefill_ms_per_1k",
    "prefill_growth_exponent",
    "tpot_ms",
    "ttft_p95_over_p50",
    "stall_ms",
    "error_rate",
    "client_delay_ms",
)
"""Every quantity the profile latdoc ships defines, in the order it shows them."""

Slower = Literal["higher", "lower"]
SUPPORTS = frozenset({"slow_edge", "typical", "both", "why"})
_BUILT_IN = "healthy.toml"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a value comes from."""

    cite: str
    """What the source says, in a line, with its figures."""
    by: str
    """Who says it, in a few words (``Artificial Analysis``)."""
    url: str
    """Its address (``seed/`` for the seed article the method implements)."""
    date: str = ""
    """When it was measured, where the source says."""
    supports: str = "both"
    """Which value it backs: ``slow_edge``, ``typical``, ``both`` or ``why``."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """One quantity of a healthy endpoint."""

    key: str
    label: str
    unit: str
    slower: Slower
    """Which way is slower: ``higher`` for a time, ``lower`` for a rate."""
    slow_edge: float
    """The slowest value a healthy endpoint has."""
    typical: float
    """A healthy endpoint's typical (median) value."""
    why: str
    sources: tuple[Source, ...] = ()

    def beyond_edge(self, value: float) -> float:
        """How far ``value`` lies past the slow edge, in the quantity's unit: 0 when it
        is on the healthy side."""
        gap = value - self.slow_edge if self.slower == "higher" else self.slow_edge - value
        return max(0.0, gap)

    def is_slow(self, value: float) -> bool:
        """``value`` lies past the slow edge."""
        return self.beyond_edge(value) > 0.0

    def cited(self) -> str:
        """Who says what its typical value is, with the date: ``Artificial Analysis,
        2025-11-20``; empty for a value the user set."""
        for source in self.sources:
            if source.supports in ("typical", "both"):
                return f"{source.by}, {source.date}" if source.date else source.by
        return ""


@dataclass(frozen=True, slots=True)
class ReferenceProfile:
    """What healthy is, quantity by quantity, and where that was said."""

    name: str
    scope: str
    compiled: str
    quantities: Mapping[str, Quantity]
    origin: str = "latdoc"
    """``latdoc`` for the profile latdoc ships, else the file (or run) it came from."""

    def __getitem__(self, key: str) -> Quantity:
        try:
            return self.quantities[key]
        except KeyError:
            raise KeyError(f"the reference profile has no quantity {key!r}") from None

    def __contains__(self, key: object) -> bool:
        return key in self.quantities

    def __iter__(self) -> Iterator[Quantity]:
        return iter(self.quantities.values())

    def edge(self, key: str) -> float:
        """The slow edge of ``key``."""
        return self[key].slow_edge

    def typical(self, key: str) -> float:
        """The typical value of ``key``."""
        return self[key].typical

    @property
    def tls_work_edge_ms(self) -> float:
        """The most a healthy handshake spends beyond its two round trips (ms): the
        handshake's slow edge less two typical round trips of a near region. What a
        handshake costs past that is the server's (a long chain, a slow key exchange),
        not the path's, whose round trips it pays whatever it is."""
        return max(0.0, self.edge("tls_handshake_ms") - 2 * self.typical("rtt_ms"))


@functools.cache
def healthy_reference() -> ReferenceProfile:
    """The reference profile latdoc ships (``healthy.toml``)."""
    text = resources.files(__package__).joinpath(_BUILT_IN).read_text(encoding="utf-8")
    return parse(tomllib.loads(text), origin="latdoc", complete=True)


def load_reference(path: str | Path, base: ReferenceProfile | None = None) -> ReferenceProfile:
    """A user's reference from a TOML file of the same fields, any subset, laid over
    ``base`` (the shipped profile by default): a quantity the file names takes its
    values from it, the rest stay ``base``'s. A file latdoc cannot use is a
    :class:`~latdoc.errors.UsageError` that says what is wrong."""
    where = Path(path)
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(
            Message(
                "cannot read the reference file {path}: {error}",
                path=str(where),
                error=exc.strerror or str(exc),
            )
        ) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            Message(
                "the reference file {path} is not TOML: {error}", path=str(where), error=str(exc)
            )
        ) from exc
    return parse(data, origin=str(where), base=base or healthy_reference())


def parse(
    data: Mapping[str, Any],
    *,
    origin: str,
    base: ReferenceProfile | None = None,
    complete: bool = False,
) -> ReferenceProfile:
    """A profile from TOML ``data``. Over ``base``, each quantity may give any of its
    fields; ``complete`` asks for every quantity of :data:`QUANTITIES` with every field
    (the shipped profile)."""
    head = data.get("profile", {})
    table = data.get("quantity")
    if not isinstance(head, Mapping) or (table is not None and not isinstance(table, Mapping)):
        raise _bad(origin, Message("[profile] and [quantity.NAME] must be tables"))
    table = table or {}
    if not table:
        raise _bad(
            origin,
            Message("it names no [quantity.NAME]; known: {known}", known=", ".join(QUANTITIES)),
        )
    known = set(QUANTITIES) | set(base.quantities if base else ())
    unknown = sorted(set(table) - known)
    if unknown:
        raise _bad(
            origin,
            Message(
                "unknown quantity {names}; known: {known}",
                names=", ".join(unknown),
                known=", ".join(QUANTITIES),
            ),
        )
    quantities: dict[str, Quantity] = dict(base.quantities) if base else {}
    for key, fields in table.items():
        if not isinstance(fields, Mapping):
            raise _bad(origin, Message("[quantity.{key}] must be a table", key=key))
        quantities[key] = _quantity(key, fields, quantities.get(key), origin, complete=complete)
    if complete:
        missing = [key for key in QUANTITIES if key not in quantities]
        if missing:
            raise _bad(origin, Message("it lacks {names}", names=", ".join(missing)))
    order = {key: i for i, key in enumerate(QUANTITIES)}
    ordered = sorted(quantities.values(), key=lambda q: order.get(q.key, len(order)))
    return ReferenceProfile(
        name=str(head.get("name", Path(origin).stem if base else origin)),
        scope=str(head.get("scope", base.scope if base else "")),
        compiled=str(head.get("compiled", base.compiled if base else "")),
        quantities=MappingProxyType({q.key: q for q in ordered}),
        origin=origin,
    )


def _quantity(
    key: str, fields: Mapping[str, Any], under: Quantity | None, origin: str, *, complete: bool
) -> Quantity:
    allowed = {"label", "unit", "slower", "slow_edge", "typical", "why", "sources"}
    extra = sorted(set(fields) - allowed)
    if extra:
        raise _bad(
            origin,
            Message(
                "[quantity.{key}] has unknown fields {names}; allowed: {allowed}",
                key=key,
                names=", ".join(extra),
                allowed=", ".join(sorted(allowed)),
            ),
        )
    needed = allowed if complete or under is None else set()
    missing = sorted((needed - {"sources"}) - set(fields)) if needed else []
    if missing:
        raise _bad(
            origin, Message("[quantity.{key}] lacks {names}", key=key, names=", ".join(missing))
        )
    numbers = {}
    for name in ("slow_edge", "typical"):
        if name in fields:
            value = fields[name]
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise _bad(
                    origin,
                    Message(
                        "[quantity.{key}] {name} must be a number of at least 0, not {value!r}",
                        key=key,
                        name=name,
                        value=value,
                    ),
                )
            numbers[name] = float(value)
    slower = fields.get("slower", under.slower if under else "higher")
    if slower not in ("higher", "lower"):
        raise _bad(
            origin,
            Message(
                "[quantity.{key}] slower must be 'higher' or 'lower', not {value!r}",
                key=key,
                value=slower,
            ),
        )
    sources = _sources(key, fields.get("sources", ()), origin, complete=complete)
    if under is not None:
        if "slow_edge" in numbers and "typical" not in numbers:
            # An edge set alone, on the healthy side of the typical value it replaces:
            # the typical is no faster than the edge the user holds to.
            edge, typical = numbers["slow_edge"], under.typical
            past = typical > edge if slower == "higher" else typical < edge
            numbers["typical"] = edge if past else typical
        quantity = replace(
            under,
            slower=slower,
            label=str(fields.get("label", under.label)),
            unit=str(fields.get("unit", under.unit)),
            why=str(fields.get("why", under.why if not numbers else "")),
            sources=sources or (() if numbers else under.sources),
            slow_edge=numbers.get("slow_edge", under.slow_edge),
            typical=numbers.get("typical", under.typical),
        )
    else:
        quantity = Quantity(
            key=key,
            label=str(fields["label"]),
            unit=str(fields["unit"]),
            slower=slower,
            slow_edge=numbers["slow_edge"],
            typical=numbers["typical"],
            why=str(fields["why"]),
            sources=sources,
        )
    typical_side = (
        quantity.typical <= quantity.slow_edge
        if slower == "higher"
        else quantity.typical >= quantity.slow_edge
    )
    if not typical_side:
        raise _bad(
            origin,
            Message(
                "[quantity.{key}] typical {typical} lies past its slow edge {edge}",
                key=key,
                typical=quantity.typical,
                edge=quantity.slow_edge,
            ),
        )
    return quantity


def _sources(key: str, raw: object, origin: str, *, complete: bool) -> tuple[Source, ...]:
    if not isinstance(raw, list | tuple):
        raise _bad(origin, Message("[quantity.{key}] sources must be a list of tables", key=key))
    sources = []
    for entry in raw:
        if not isinstance(entry, Mapping) or not entry.get("cite") or not entry.get("url"):
            raise _bad(
                origin, Message("[quantity.{key}] each source needs a cite and a url", key=key)
            )
        supports = str(entry.get("supports", "both"))
        if supports not in SUPPORTS:
            raise _bad(
                origin,
                Message(
                    "[quantity.{key}] a source supports one of {allowed}, not {value!r}",
                    key=key,
                    allowed=", ".join(sorted(SUPPORTS)),
                    value=supports,
                ),
            )
        sources.append(
            Source(
                str(entry["cite"]),
                str(entry["by"]),
                str(entry["url"]),
                str(entry.get("date", "")),
                supports,
            )
        )
    if complete:
        backed = {s.supports for s in sources}
        for value in ("slow_edge", "typical"):
            if not backed & {value, "both"}:
                raise _bad(
                    origin,
                    Message(
                        "[quantity.{key}] cites no source for its {value}", key=key, value=value
                    ),
                )
    return tuple(sources)


def _bad(origin: str, what: Message) -> UsageError:
    return UsageError(
        Message("the reference {origin} cannot be used: {what}", origin=origin, what=what)
    )


def reference_to_record(profile: ReferenceProfile) -> dict[str, Any] | None:
    """What a run keeps of the reference it was held against, so its report gives the same
    verdict: ``None`` for the profile latdoc ships; else its name and origin and, for each
    quantity that differs from the shipped one, its edge and typical value."""
    shipped = healthy_reference()
    if profile == shipped:
        return None
    changed = {
        q.key: {"slow_edge": q.slow_edge, "typical": q.typical}
        for q in profile
        if q.key not in shipped
        or (q.slow_edge, q.typical)
        != (
            shipped.edge(q.key),
            shipped.typical(q.key),
        )
    }
    return {
        "profile": {"name": profile.name, "scope": profile.scope, "compiled": profile.compiled},
        "origin": profile.origin,
        "quantity": changed,
    }


def reference_from_record(record: Mapping[str, Any] | None) -> ReferenceProfile:
    """The reference a run kept (:func:`reference_to_record`); the shipped one for none."""
    if not record:
        return healthy_reference()
    origin = str(record.get("origin", "run"))
    if not record.get("quantity"):
        return replace(healthy_reference(), origin=origin, name=str(record["profile"]["name"]))
    return parse(record, origin=origin, base=healthy_reference())
