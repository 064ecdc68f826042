"""The newest watch of an endpoint, as a diagnosis reads it, sending nothing.

A watch is kept as one run of kind ``watch`` under its name (:mod:`latdoc.features.watch`
sends it and reads it back by the clock). Each time it has sent, the watch keeps in its
run's ``meta["hourly_verdict"]`` what its requests by hour of day say
(:func:`keep_hourly_verdict`); :func:`watch_note` hands that to the load step of a
diagnosis, whose single-moment measurement cannot tell the time of day. A diagnosis reads
the watch here, in the core, so that no feature reaches into another.
"""

from __future__ import annotations

from latdoc.i18n import Message
from latdoc.records import Step, StepNote
from latdoc.store import WATCH_KIND, RunInfo, Store

HOURLY_VERDICT = "hourly_verdict"


def keep_hourly_verdict(store: Store, run_id: str, verdict: str) -> None:
    """Keep what the watch ``run_id``'s requests by hour of day say, for
    :func:`watch_note`."""
    store.update_meta(run_id, {HOURLY_VERDICT: verdict})


def latest_watch(store: Store, endpoint: str, model: str) -> RunInfo | None:
    """The newest watch of this endpoint and model, if any."""
    for info in store.find_runs(WATCH_KIND):
        if info.endpoint == endpoint and info.model == model and info.requests > 0:
            return info
    return None


def watch_note(store: Store, endpoint: str, model: str) -> StepNote | None:
    """What the newest watch of this endpoint and model says about the time of day, as a
    note for the load step of a diagnosis (``None``: no watch, or one that has not kept
    its verdict by hour of day)."""
    info = latest_watch(store, endpoint, model)
    if info is None:
        return None
    verdict = info.meta.get(HOURLY_VERDICT)
    if not isinstance(verdict, str):
        return None
    name = str(info.meta.get("name", info.run_id))
    return StepNote(
        Step.LOAD,
        Message(
            "watch {name!r} ({n} requests by hour of day): {verdict}",
            name=name,
            n=info.requests,
            verdict=verdict,
        ),
    )
