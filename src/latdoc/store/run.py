"""One diagnosis run as the store lists it: :class:`RunInfo`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from latdoc.model import Price, price_from_dict
from latdoc.records import Step, StepNote
from latdoc.store.process import Owner

RUN_STATUSES = frozenset({"running", "done", "interrupted", "failed", "recorded"})
DIAGNOSE_KIND = "diagnose"
"""A run of ``latdoc diagnose``, and the kind of a run stored or exported before runs had one."""
PROBE_KIND = "probe"
"""A run of ``latdoc probe``."""
VERIFY_KIND = "verify"
"""One arm of ``latdoc verify``."""
INSTRUMENT_KIND = "instrument"
"""An application's own traffic recorded by ``latdoc.instrument``, a replay or OTLP spans
(samples of step ``traffic``)."""
LOAD_KIND = "load"
"""A ``latdoc load`` sweep (samples of step ``load`` or ``arrivals``)."""
WATCH_KIND = "watch"
"""``latdoc watch``: one run per watch name, ``meta["name"]``, resumed by appending."""
RUN_KINDS = frozenset(
    {DIAGNOSE_KIND, PROBE_KIND, VERIFY_KIND, INSTRUMENT_KIND, LOAD_KIND, WATCH_KIND}
)
"""What made a run: the only names the store keeps in a run's ``kind``. Each is the name
of one kind a feature registers (with how a stored run of it is read back and shown
again); the store knows the names alone."""
"""``running`` until :meth:`Store.finish_run` sets one of the others: ``done``,
``interrupted`` (stopped by Ctrl-C or SIGTERM, or found with its process gone),
``failed``, or ``recorded`` (an application's recording, ended when its store closed)."""


@dataclass(frozen=True)
class RunInfo:
    """A run's identity, target and outcome, with the counts of its samples."""

    run_id: str
    started_at: datetime
    finished_at: datetime | None
    status: str
    endpoint: str
    model: str
    scenario: str
    requests: int
    """Samples stored for the run."""
    failed: int
    """Samples whose trace ended in an error."""
    verdict: str | None
    """The primary kind of slow (``diagnosis["verdict"]["primary"]``), for listings."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Tool and Python versions, host, platform, options: whatever the caller recorded."""
    notes: tuple[StepNote, ...] = ()
    """What the run's steps left out or could not measure."""
    kind: str = DIAGNOSE_KIND
    """One of :data:`RUN_KINDS`."""
    owner: Owner | None = field(default=None, compare=False)
    """The process that keeps (or kept) the run; ``None`` for runs stored before it was
    recorded, and for imported ones."""

    @property
    def price(self) -> Price | None:
        """The model's price the run kept in its meta; ``None``: it kept none."""
        return price_from_dict(self.meta.get("price")) if isinstance(self.meta, Mapping) else None


def notes_to_data(notes: Sequence[StepNote]) -> list[dict[str, str]]:
    """Notes as plain JSON data, for the store and export documents."""
    return [{"step": str(n.step), "text": n.text} for n in notes]


def notes_from_data(data: Any) -> tuple[StepNote, ...]:
    """The notes :func:`notes_to_data` wrote; entries of an unknown shape are skipped."""
    if not isinstance(data, list):
        return ()
    steps = {s.value for s in Step}
    return tuple(
        StepNote(Step(item["step"]), str(item.get("text", "")))
        for item in data
        if isinstance(item, Mapping) and item.get("step") in steps
    )


def utc_text(moment: datetime) -> str:
    """ISO 8601 in UTC, so that text order is time order."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment.isoformat()}: give a time zone")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_utc(text: str) -> datetime:
    """The aware datetime :func:`utc_text` wrote."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset")
    return moment.astimezone(UTC)
