"""Load workers as Ray actors (``latdoc load --ray ADDRESS --workers N``).

Each actor is a :class:`~latdoc.features.load.send.workers.LoadWorker`, the same worker loop a local
process runs, placed by Ray with the ``SPREAD`` strategy so the streams leave
from as many nodes as there are; its batches come back through a Ray streaming
generator. An actor that dies ends its generator with a Ray error, which is
the :class:`~latdoc.features.load.send.fleet.WorkerLost` the driver counts. Ray is joined
through :mod:`latdoc.pipeline`, only when ``--ray`` is used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from types import ModuleType
from typing import Any

from latdoc.errors import UsageError
from latdoc.features.load.send.fleet import Fleet, WorkerLost
from latdoc.features.load.send.sweep import LoadPlan
from latdoc.features.load.send.workers import Batch, LevelOrder, LoadWorker
from latdoc.i18n import Message
from latdoc.pipeline import connect, first_line

WORKER_CPUS = 1.0
"""CPUs each load actor asks of Ray: a worker's event loop keeps one core busy."""


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
            raise WorkerLost(first_line(exc)) from None
        raise WorkerLost("its actor ended the level without its last batch")

    def stop(self) -> None:
        self._ray.kill(self.actor, no_restart=True)

    async def _call(self, ref: Any) -> Any:
        try:
            return await ref
        except self._ray.exceptions.RayError as exc:
            raise WorkerLost(first_line(exc)) from None


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
                    Message(
                        "{workers} load workers need {needed:g} CPUs; the Ray cluster at {address} "
                        "has {cpus:g}",
                        workers=len(plans),
                        needed=len(plans) * WORKER_CPUS,
                        address=address,
                        cpus=cpus,
                    )
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
