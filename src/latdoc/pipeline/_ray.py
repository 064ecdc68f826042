"""Load workers as Ray actors (``latdoc load --ray ADDRESS --workers N``), and the
measuring done on vantage nodes (``latdoc probe|diagnose --ray ADDRESS --vantage a,b``).

Each actor is a :class:`~latdoc.workload.LoadWorker`, the same worker loop a local
process runs, placed by Ray with the ``SPREAD`` strategy so the streams leave
from as many nodes as there are; its batches come back through a Ray streaming
generator. An actor that dies ends its generator with a Ray error, which is
the :class:`~._fleet.WorkerLost` the driver counts. A vantage's measuring is a
Ray task that asks for a sliver of the node's ``vantage:NAME`` resource, so it runs
on a node labelled so and nowhere else. Ray is imported only here,
and only when ``--ray`` is used: ``import latdoc`` never imports it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

from latdoc.errors import LatdocError, UsageError
from latdoc.pipeline._fleet import Fleet, WorkerLost
from latdoc.workload import Batch, LevelOrder, LoadPlan, LoadWorker

INSTALL_HINT = "--ray needs Ray, an optional extra: pip install 'llm-latency-doctor[ray]'"
WORKER_CPUS = 1.0
"""CPUs each load actor asks of Ray: a worker's event loop keeps one core busy."""
VANTAGE_SHARE = 0.001
"""How much of a node's ``vantage:NAME`` resource one measuring task takes."""
_Plan = TypeVar("_Plan")
_Result = TypeVar("_Result")


def import_ray() -> ModuleType:
    """The ``ray`` module, or a :class:`UsageError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


def connect(address: str) -> ModuleType:
    """Join the Ray cluster at ``address`` (``auto``: the one this machine is part of)."""
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(
                address=address,
                logging_level=logging.WARNING,
                log_to_driver=False,
                configure_logging=False,
            )
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise UsageError(f"cannot join the Ray cluster at {address}: {exc}") from None
    return ray


class RayWorker:
    """The driver's end of one load actor."""

    def __init__(self, ray: ModuleType, actor: Any, worker: int) -> None:
        self.worker = worker
        self.actor = actor
        self._ray = ray

    async def clock(self) -> tuple[int, int]:
        value: tuple[int, int] = await self._call(self.actor.clock.remote())
        return value

    async def where(self) -> dict[str, Any]:
        value: dict[str, Any] = await self._call(self.actor.where.remote())
        return value

    async def run_level(self, order: LevelOrder) -> AsyncIterator[Batch]:
        try:
            stream = self.actor.run_level.options(num_returns="streaming").remote(order)
            async for ref in stream:
                batch: Batch = await ref
                yield batch
                if batch.window is not None:
                    return
        except self._ray.exceptions.RayError as exc:
            raise WorkerLost(_first_line(exc)) from None
        raise WorkerLost("its actor ended the level without its last batch")

    def stop(self) -> None:
        self._ray.kill(self.actor, no_restart=True)

    async def _call(self, ref: Any) -> Any:
        try:
            return await ref
        except self._ray.exceptions.RayError as exc:
            raise WorkerLost(_first_line(exc)) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"Ray: {text[0] if text else type(exc).__name__}"


class RayFleet(Fleet):
    """One load actor per plan on the cluster at ``address``; closing it kills every
    actor and leaves the cluster."""

    backend = "ray"
    kind = "Ray actors"

    def __init__(self, address: str, plans: Sequence[LoadPlan]) -> None:
        self._ray = connect(address)
        self.handles: list[RayWorker] = []
        with self._closed_on_error():
            cpus = float(self._ray.cluster_resources().get("CPU", 0.0))
            if cpus < len(plans) * WORKER_CPUS:
                raise UsageError(
                    f"{len(plans)} load workers need {len(plans) * WORKER_CPUS:g} CPUs; the Ray "
                    f"cluster at {address} has {cpus:g}"
                )
            actor = self._ray.remote(LoadWorker).options(
                num_cpus=WORKER_CPUS, max_restarts=0, scheduling_strategy="SPREAD"
            )
            for i, plan in enumerate(plans):
                self.handles.append(RayWorker(self._ray, actor.remote(plan, i), i))

    def close(self) -> None:
        for handle in self.handles:
            handle.stop()
        self._ray.shutdown()


def run_at_vantages(
    address: str,
    vantages: Sequence[str],
    measure: Callable[[_Plan, str], _Result],
    plan: _Plan,
) -> list[_Result]:
    """``measure(plan, name)`` on a node carrying ``vantage:NAME``, for every name at once;
    the results in the order of ``vantages``. Ctrl-C cancels every task."""
    ray = connect(address)
    try:
        have = ray.cluster_resources()
        missing = [n for n in vantages if f"vantage:{n}" not in have]
        if missing:
            labels = ", ".join(f"vantage:{n}" for n in missing)
            raise UsageError(
                f"no node of the Ray cluster at {address} carries {labels}; start one with "
                f"ray start --address ... --resources '{{\"vantage:{missing[0]}\": 1}}'"
            )
        task = ray.remote(measure)
        refs = [
            task.options(
                num_cpus=0, max_retries=0, resources={f"vantage:{n}": VANTAGE_SHARE}
            ).remote(plan, n)
            for n in vantages
        ]
        try:
            return [_result(ray, ref, name) for ref, name in zip(refs, vantages, strict=True)]
        except BaseException:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
    finally:
        ray.shutdown()


def _result(ray: ModuleType, ref: Any, name: str) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, BaseException) else None
        if isinstance(cause, LatdocError):
            raise cause from None
        raise LatdocError(f"the measuring at vantage {name} failed: {_first_line(exc)}") from None
    except ray.exceptions.RayError as exc:
        raise LatdocError(f"the measuring at vantage {name} was lost: {_first_line(exc)}") from None
