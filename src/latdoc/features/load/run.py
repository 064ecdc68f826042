"""A load sweep kept as a run, analysed level by level, and analysed again from the store."""

from __future__ import annotations

import asyncio
import ipaddress
import sqlite3
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from latdoc.analysis.gates import Gate, GateReport, check_gates
from latdoc.errors import UsageError
from latdoc.features.load.analysis import (
    USER_TURNS_META,
    FindMax,
    LevelWindow,
    LoadAnalysis,
    Slo,
    UserTurns,
    analyse_load,
    user_turns,
    windows_kept,
)
from latdoc.features.load.document import load_from_record, load_to_record
from latdoc.features.load.render import ShownLoad
from latdoc.features.load.send.auto import choose_processes
from latdoc.features.load.send.findmax import FindMaxAsk, find_max_sweep
from latdoc.features.load.send.fleet import Fleet, FleetSweep, join
from latdoc.features.load.send.processes import ProcessFleet
from latdoc.features.load.send.replay import Replay, find_max_replay_sweep, replay_sweep
from latdoc.features.load.send.sweep import LoadPlan, run_load
from latdoc.features.load.send.workers import worker_plans
from latdoc.i18n import N_, Message
from latdoc.model import price_to_dict
from latdoc.pipeline import host_meta
from latdoc.probe import run_sending
from latdoc.records import Sample, Step, StepNote
from latdoc.store import LOAD_KIND, Store

MAX_REMOTE_STREAMS = 64
"""Streams a sweep may hold open against an endpoint off this host without ``--yes``."""
DEFAULT_RAY_WORKERS = 2
"""Ray actors a sweep sends from when the count is not given."""


@dataclass(frozen=True)
class LoadRun:
    """A sweep's analysis and what it was made from."""

    run_id: str
    analysis: LoadAnalysis
    samples: tuple[Sample, ...]
    notes: tuple[StepNote, ...]
    status: str
    endpoint: str
    model: str
    store_path: str
    store_error: str | None = None
    """Why the store stopped taking traces (a full disk), when it did: the sweep stopped
    there, and only ``kept`` of ``samples`` are in the store."""
    kept: int | None = None
    """Traces in the store, when that is not all of ``samples``."""
    gates: GateReport | None = None
    """The gates held against the baseline run, when asked for."""
    find_max: FindMax | None = None
    """``--find-max``'s answer, when it was asked for and the search finished."""
    user_turns: UserTurns | None = None
    """A replayed conversation's or agent's user turns: what the user waited."""

    @property
    def all_failed(self) -> bool:
        """Every request failed (and there was at least one)."""
        return bool(self.samples) and all(not s.trace.ok for s in self.samples)

    @property
    def gate_failed(self) -> bool:
        """A gate failed against the baseline run."""
        return self.gates is not None and bool(self.gates.failed)

    def shown(self) -> ShownLoad:
        """The sweep as the command shows it."""
        title = f"{self.model} at {self.endpoint} under load"
        return ShownLoad(
            self.analysis, self.notes, self.run_id, title, self.gates, self.model, self.find_max,
            self.user_turns,
        )  # fmt: skip


@dataclass(frozen=True)
class Workers:
    """Where a sweep's streams are sent from, when not from this process alone."""

    count: int
    """Workers, each with its own event loop and connections."""
    ray: str | None = None
    """A Ray cluster's address (``auto``: the one this machine is part of), for Ray
    actors; ``None`` for local processes."""

    @classmethod
    def on_ray(cls, address: str, count: int | None = None) -> Workers:
        """``count`` Ray actors (default :data:`DEFAULT_RAY_WORKERS`) on the cluster at
        ``address``."""
        return cls(DEFAULT_RAY_WORKERS if count is None else count, ray=address)

    @classmethod
    def asked(
        cls, processes: int | None = None, ray: str | None = None, actors: int | None = None
    ) -> Workers | None:
        """The workers a sweep is asked to send from: ``actors`` Ray actors on the cluster
        at ``ray`` (:meth:`on_ray`), else ``processes`` local processes; ``None``: this
        process alone. Actors without a cluster are a :class:`UsageError`."""
        if actors is not None and ray is None:
            raise UsageError(N_("--workers counts Ray actors: give --ray ADDRESS too"))
        if ray is not None:
            return cls.on_ray(ray, actors)
        return None if processes is None else cls(processes)


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost`` or a loopback address)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_load_target(plan: LoadPlan, *, confirmed: bool) -> None:
    """Refuse, before anything is sent, a heavy sweep of someone else's endpoint unasked."""
    streams = plan.peak_streams
    if streams > MAX_REMOTE_STREAMS and not confirmed and not is_loopback(plan.endpoint.base_url):
        what = "--concurrency" if plan.closed_loop else "--max-in-flight"
        raise UsageError(
            Message(
                "{flag} {streams} would hold up to {streams} streams open against {host}, "
                "which is not this host; more than {most} needs --yes (make sure "
                "you may load it that hard)",
                flag=what,
                streams=streams,
                host=urlsplit(plan.endpoint.base_url).hostname,
                most=MAX_REMOTE_STREAMS,
            )
        )


def load_endpoint(
    plan: LoadPlan,
    *,
    store: Store,
    slo: Slo | None = None,
    confirmed: bool = False,
    on_sample: Callable[[Sample], None] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    workers: Workers | None = None,
    replay: Replay | None = None,
    find_max: FindMaxAsk | None = None,
    auto_processes: bool = False,
    baseline: str | None = None,
    gates: Sequence[Gate] = (),
) -> LoadRun:
    """Run ``plan``'s sweep, keep every sample as it finishes, and analyse each level.

    ``on_sample`` sees each sample as it is kept (a metrics exporter hooks in
    there). Ctrl-C stops the sending, not the report: the run is kept as
    ``interrupted`` with the notes made until then, and the levels measured are
    analysed, the one it cut short marked partial. With ``workers`` the streams are
    sent from worker processes or Ray actors; every one of them is stopped when
    this returns, also on Ctrl-C. With ``replay`` the levels are a trace's
    (:mod:`latdoc.features.load.send.replay`), read whole before anything is sent. With
    ``auto_processes`` a short calibration from this process chooses the local worker
    processes (:mod:`latdoc.features.load.send.auto`) before the sweep. With ``gates`` the
    sweep is held against the stored load run ``baseline`` (read before anything is
    sent), the same levels compared with each other, into :attr:`LoadRun.gates`.
    """
    if bool(gates) != (baseline is not None):
        raise UsageError(
            N_(
                "--fail-if and --baseline RUN_ID go together: the gates hold this run against the "
                "baseline"
            )
        )
    if find_max is not None and (
        workers is not None
        or auto_processes
        or len(plan.rates) > 1
        or (replay is not None and find_max.start_rate is not None)
    ):
        raise UsageError(
            N_(
                "--find-max probes its levels from this process: leave out --processes and "
                "--ray, and give --rate one starting rate at most (none with --trace, whose "
                "sessions it probes by streams)"
            )
        )
    if replay is not None and plan.rates:
        raise UsageError(N_("--trace sends at the trace's own times: leave out --rate"))
    held: list[Sample] = []
    if baseline is not None:
        _, held, _ = store.load_run(baseline)
    run = _load(
        plan, store, slo or Slo(), confirmed, on_sample, on_progress, workers, replay,
        find_max, auto_processes,
    )  # fmt: skip
    if not gates:
        return run
    return replace(run, gates=check_gates(held, run.samples, gates))


def _load(
    plan: LoadPlan,
    store: Store,
    slo: Slo,
    confirmed: bool,
    on_sample: Callable[[Sample], None] | None,
    on_progress: Callable[[str, int, int], None] | None,
    workers: Workers | None,
    replay: Replay | None,
    find_max: FindMaxAsk | None,
    auto_processes: bool,
) -> LoadRun:
    check_load_target(plan, confirmed=confirmed)
    meta: dict[str, Any] = {**host_meta(), "load": _plan_meta(plan, slo)}
    if plan.price is not None:
        meta["price"] = price_to_dict(plan.price)
    opening: list[StepNote] = []
    found: list[FindMax] = []
    if auto_processes:
        if workers is not None or replay is not None or find_max is not None:
            raise UsageError(
                N_(
                    "--processes auto chooses the processes itself: leave out --ray, --trace and "
                    "--find-max"
                )
            )
        choice = choose_processes(plan)
        meta["processes_auto"] = choice.document()
        opening.append(StepNote(Step.RUN, choice.sentence()))
        plan = replace(plan, max_requests=max(1, plan.max_requests - choice.requests))
        workers = Workers(choice.processes) if choice.processes > 1 else None
    if replay is not None:
        if workers is not None:
            raise UsageError(
                N_("--trace replays from this process: leave out --processes and --ray")
            )
        meta["replay"] = {"trace": replay.path, "format": replay.fmt, "speed": replay.speed,
                          "streams": replay.streams}  # fmt: skip
        if find_max is not None:
            return _find_max(
                plan, store, slo, meta, on_sample,
                find_max_replay_sweep(plan, replay, find_max.objectives, find_max.reach,
                                      on_progress, found.append),
                found,
            )  # fmt: skip
        turns: list[list[Any]] = []
        sweep = replay_sweep(plan, replay, on_progress, turns)
        run = _run_sweep(plan, sweep, store, slo, meta, on_sample)
        if not turns:
            return run
        store.update_meta(run.run_id, {USER_TURNS_META: turns})
        return replace(run, user_turns=user_turns(turns, run.samples, slo))
    if find_max is not None:
        sweep = find_max_sweep(plan, find_max.objectives, find_max.reach, on_progress,
                               found.append, find_max.start_rate)  # fmt: skip
        return _find_max(plan, store, slo, meta, on_sample, sweep, found)
    with ExitStack() as stack:
        if workers is None:
            return _run_sweep(
                plan, _local_sweep(plan, on_progress), store, slo, meta, on_sample, opening
            )
        sweep = _fleet_sweep(plan, workers, on_progress, stack, meta)
        return _run_sweep(plan, sweep, store, slo, meta, on_sample, opening)


Sweep = Callable[
    [Callable[[Sample], None], Callable[[LevelWindow], None], Callable[[StepNote], None]],
    Coroutine[Any, Any, list[StepNote]],
]
"""Runs a sweep: each sample, level and note reaches its hook as it is made."""


def _find_max(
    plan: LoadPlan,
    store: Store,
    slo: Slo,
    meta: Mapping[str, Any],
    on_sample: Callable[[Sample], None] | None,
    sweep: Sweep,
    found: list[FindMax],
) -> LoadRun:
    """The search run, its answer kept in the run's meta where it finished."""
    run = _run_sweep(plan, sweep, store, slo, meta, on_sample)
    if not found:
        return run
    store.update_meta(run.run_id, {"find_max": found[0].document()})
    return replace(run, find_max=found[0])


def _local_sweep(plan: LoadPlan, on_progress: Callable[[str, int, int], None] | None) -> Sweep:
    def sweep(
        keep: Callable[[Sample], None],
        on_level: Callable[[LevelWindow], None],
        on_note: Callable[[StepNote], None],
    ) -> Coroutine[Any, Any, list[StepNote]]:
        return run_load(
            plan, on_sample=keep, on_level=on_level, on_progress=on_progress, on_note=on_note
        )

    return sweep


def _fleet_sweep(
    plan: LoadPlan,
    workers: Workers,
    on_progress: Callable[[str, int, int], None] | None,
    stack: ExitStack,
    meta: dict[str, Any],
) -> Sweep:
    """Start the workers (stopped when ``stack`` closes), align their clocks, and record
    where each runs and its clock offset in ``meta``."""
    plans = worker_plans(plan, workers.count)
    if workers.ray is None:
        fleet: Fleet = stack.enter_context(ProcessFleet(plans))
    else:
        from latdoc.features.load.send.ray import RayFleet

        fleet = stack.enter_context(RayFleet(workers.ray, plans))
    members = asyncio.run(join(fleet.handles))
    meta["workers"] = {
        "backend": fleet.backend,
        "address": workers.ray,
        "count": workers.count,
        "members": [m.meta() for m in members],
    }

    def sweep(
        keep: Callable[[Sample], None],
        on_level: Callable[[LevelWindow], None],
        on_note: Callable[[StepNote], None],
    ) -> Coroutine[Any, Any, list[StepNote]]:
        return FleetSweep(
            plan, members, keep, on_level, on_progress, on_note, kind=fleet.kind
        ).run()

    return sweep


def _run_sweep(
    plan: LoadPlan,
    sweep: Sweep,
    store: Store,
    slo: Slo,
    meta: Mapping[str, Any],
    on_sample: Callable[[Sample], None] | None,
    opening: Sequence[StepNote] = (),
) -> LoadRun:
    """Run ``sweep``, keeping each sample as it comes, committed a batch at a time (see
    :meth:`Store.batch`): a commit is a disk sync of milliseconds, made on the event
    loop that times the streams, and one per sample at 256 streams held their next
    requests back by most of a second."""
    run_id = store.new_run(
        endpoint=plan.endpoint.base_url,
        model=plan.endpoint.model,
        scenario="",
        meta=meta,
        kind=LOAD_KIND,
    )
    samples: list[Sample] = []
    windows: list[LevelWindow] = []
    writer = store.batch(run_id, max_samples=5000)
    refused: list[sqlite3.Error] = []

    def keep(sample: Sample) -> None:
        samples.append(sample)
        if refused:
            return
        try:
            writer.add(sample)
        except sqlite3.Error as exc:
            # A full disk (or a store gone bad): nothing more can be kept, so nothing
            # more is sent. Raised into the sweep, this stops it as Ctrl-C would.
            refused.append(exc)
            raise _StoreRefused from exc
        if on_sample is not None:
            on_sample(sample)

    status = "done"
    notes: list[StepNote] = list(opening)
    try:
        with writer:
            run_sending(sweep(keep, windows.append, notes.append))
    except KeyboardInterrupt:
        status = "interrupted"
        notes.append(StepNote(Step.RUN, "interrupted by the user; reported what was measured"))
    except Exception as exc:
        # The refusal raised through the sweep, or the store failing as the writer closed.
        if not refused and isinstance(exc, sqlite3.Error):
            refused.append(exc)
        if not refused:
            raise
        status = "failed"
    error = None
    if refused:
        error = (
            f"the store {store.path} could not keep a trace ({refused[0]}): the sweep stopped "
            f"there; {writer.committed} of its {len(samples)} traces are kept"
        )
        notes.append(StepNote(Step.RUN, error))
    analysis = analyse_load(windows, samples, slo, plan.price)
    try:
        store.finish_run(run_id, status=status, notes=notes, diagnosis=load_to_record(analysis))
    except sqlite3.Error:
        if error is None:
            raise
        # It stays ``running`` until the next open of the store marks it interrupted,
        # with the count of what it kept.
        error += "; the run could not be closed, and is marked interrupted when next read"
    return LoadRun(
        run_id, analysis, tuple(samples), tuple(notes), status,
        plan.endpoint.base_url, plan.endpoint.model, store.path,
        error, writer.committed if error is not None else None,
    )  # fmt: skip


class _StoreRefused(Exception):
    """The store refused a trace: raised through the sweep to stop it."""


def reload_load(store: Store, run_id: str) -> LoadRun:
    """Analyse a stored sweep (an id or a unique prefix of one) again, sending nothing."""
    info, samples, document = store.load_run(run_id)
    if info.kind != LOAD_KIND:
        raise UsageError(
            Message(
                "run {run_id} is a {kind} run, not a load sweep", run_id=info.run_id, kind=info.kind
            )
        )
    stored = None if document is None else load_from_record(document)
    load_meta = info.meta.get("load", {}) if isinstance(info.meta, Mapping) else {}
    if stored is not None:
        windows = [lv.window for lv in stored.levels]
    else:
        # Still running (a live page), or killed before it kept its record.
        windows = windows_kept(samples, load_meta.get("rates") or ())
    slo_meta = load_meta.get("slo", {}) if isinstance(load_meta, Mapping) else {}
    slo = Slo(slo_meta.get("ttft_ms"), slo_meta.get("tpot_ms"), slo_meta.get("from") == "send")
    analysis = analyse_load(windows, samples, slo, info.price)
    meta = info.meta if isinstance(info.meta, Mapping) else {}
    found = FindMax.from_document(meta.get("find_max"))
    return LoadRun(
        info.run_id, analysis, tuple(samples), tuple(info.notes), info.status,
        info.endpoint, info.model, store.path, find_max=found,
        user_turns=user_turns(meta.get(USER_TURNS_META), samples, slo),
    )  # fmt: skip


def _plan_meta(plan: LoadPlan, slo: Slo) -> dict[str, Any]:
    return {
        "mode": "concurrency" if plan.closed_loop else "rate",
        "concurrency": list(plan.concurrency),
        "rates": list(plan.rates),
        "duration_per_level": plan.duration_per_level,
        "prompt_tokens": plan.prompt_tokens,
        "max_tokens": plan.max_tokens,
        "max_requests": plan.max_requests,
        "token_budget": plan.token_budget,
        "max_cost": plan.max_cost,
        "max_seconds": plan.max_seconds,
        "max_error_rate": plan.max_error_rate,
        "max_in_flight": plan.max_in_flight,
        "slo": {
            "ttft_ms": slo.ttft_ms,
            "tpot_ms": slo.tpot_ms,
            "from": "send" if slo.from_send else "due",
        },
        "http2": plan.connection.http2,
    }
