"""What sending a level cost the client process (:class:`ClientLoad`): its CPU, how late
its event loop and its kernel-stamp reader ran, and whether that shaped the level's
numbers; the busiest of several processes' loads, and how many processes would hold
the load.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from latdoc.analysis.policy import CLIENT_CPU_SHARE, CLIENT_CPU_TARGET, CLIENT_LAG_MS


@dataclass(frozen=True, slots=True)
class ClientLoad:
    """What sending one level cost the client process, measured while it ran."""

    cpu_share: float
    """The process's CPU time over the level's wall time: 1.0 is one core kept busy."""
    loop_lag_ms_p99: float | None
    """How late its event loop woke against a timer, p99; ``None`` without readings."""
    reader_lag_ms_p99: float | None
    """How late the kernel-stamp reader read a stamped segment, p99; ``None`` without
    kernel stamps."""
    processes: int = 1
    """Processes that sent the level; the figures are the busiest one's."""
    read_together: float | None = None
    """The share of the level's gaps between tokens whose two tokens carry one stamp:
    read together, so the later one's own arrival is lost. A reader that falls behind
    makes them (the kernel merges a segment into the unread one before it), and so does
    a server or proxy that writes several tokens at once: alone it names no one, and it
    is shown beside the reasons, not counted among them. ``None`` without two tokens."""

    def reasons(self) -> list[str]:
        """Why the client shaped the level's numbers; empty when it did not."""
        out: list[str] = []
        if self.cpu_share >= CLIENT_CPU_SHARE:
            out.append(f"the process used {self.cpu_share:.0%} of a core")
        if self.loop_lag_ms_p99 is not None and self.loop_lag_ms_p99 > CLIENT_LAG_MS:
            out.append(f"its event loop ran {self.loop_lag_ms_p99:.0f} ms late (p99)")
        if self.reader_lag_ms_p99 is not None and self.reader_lag_ms_p99 > CLIENT_LAG_MS:
            out.append(f"its kernel-stamp reader read {self.reader_lag_ms_p99:.0f} ms late (p99)")
        return out

    @property
    def saturated(self) -> bool:
        return bool(self.reasons())

    def document(self) -> dict[str, float | int | None]:
        return {"cpu_share": self.cpu_share, "loop_lag_ms_p99": self.loop_lag_ms_p99,
                "reader_lag_ms_p99": self.reader_lag_ms_p99,
                "processes": self.processes, "read_together": self.read_together}  # fmt: skip

    @classmethod
    def from_document(cls, raw: object) -> ClientLoad | None:
        """The load as :meth:`document` wrote it; ``None`` for anything else."""
        if not isinstance(raw, dict) or not isinstance(raw.get("cpu_share"), int | float):
            return None

        def number(key: str) -> float | None:
            value = raw.get(key)
            return float(value) if isinstance(value, int | float) else None

        processes = raw.get("processes")
        return cls(float(raw["cpu_share"]), number("loop_lag_ms_p99"),
                   number("reader_lag_ms_p99"),
                   processes if isinstance(processes, int) and processes > 0 else 1,
                   number("read_together"))  # fmt: skip


def busiest(loads: Iterable[ClientLoad | None], processes: int = 1) -> ClientLoad | None:
    """The busiest of several processes' (or rounds') loads, field by field."""
    known = [load for load in loads if load is not None]
    if not known:
        return None

    def worst(values: Iterable[float | None]) -> float | None:
        seen = [v for v in values if v is not None]
        return max(seen) if seen else None

    return ClientLoad(
        max(load.cpu_share for load in known),
        worst(load.loop_lag_ms_p99 for load in known),
        worst(load.reader_lag_ms_p99 for load in known),
        processes,
        worst(load.read_together for load in known),
    )


def processes_for(load: ClientLoad) -> int:
    """Processes that would hold what ``load.processes`` of them sent, each at
    ``CLIENT_CPU_TARGET`` of a core; at least one more than now when the client was
    saturated (a saturated share is a floor on the need, not the need)."""
    now = load.processes
    wanted = math.ceil(load.cpu_share * now / CLIENT_CPU_TARGET)
    return max(wanted, now + 1) if load.saturated else max(1, wanted)
