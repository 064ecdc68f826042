"""``verify --remedy retry`` shown: each arm's success rate and end-to-end p95, with intervals."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.features.verify.retry.analysis import Reliability, RetryComparison
from latdoc.report import format_p
from latdoc.report.names import format_ms

RETRY_SCHEMA = "latdoc.retry/1"


def _rate(r: Reliability) -> str:
    ci = "" if r.success_ci is None else f" ({r.success_ci[0]:.0%}–{r.success_ci[1]:.0%})"
    return f"{r.succeeded}/{r.trials} = {r.success_rate:.0%}{ci}"


def _p95(r: Reliability) -> str:
    ci = (
        "" if r.p95_ci_ms is None else f" ({format_ms(r.p95_ci_ms[0])}–{format_ms(r.p95_ci_ms[1])})"
    )
    return f"{format_ms(r.p95_ms)}{ci}"


def retry_sentence(c: RetryComparison) -> str:
    a, b = c.a, c.b
    return (
        f"Verdict: {c.verdict} — answered {b.success_rate:.0%} of requests with the policy "
        f"against {a.success_rate:.0%} without ({format_p(c.p_value)}, Fisher's exact test, "
        f"n = {a.trials}/{b.trials}); end-to-end p95 {format_ms(a.p95_ms)} → {format_ms(b.p95_ms)}"
    )


def render_retry(
    c: RetryComparison, *, labels: tuple[str, str], reason: str | None = None
) -> RenderableType:
    """Both arms' rates and p95s, and the verdict; only the verdict and ``reason`` when
    the experiment could not apply."""
    if reason is not None:
        return Group(
            Text(f"  A: {labels[0]}"),
            Text(f"  B: {labels[1]}"),
            Text(""),
            Text(f"Verdict: not applicable — {reason}"),
        )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for header in ("arm", "answered (95% CI)", "end-to-end p95 (95% CI)", "attempts", "waited"):
        table.add_column(header, justify="left" if header == "arm" else "right")
    for name, r in (("A", c.a), ("B", c.b)):
        table.add_row(name, _rate(r), _p95(r), f"{r.attempts_mean:.2f}", f"{r.waited_s:.1f} s")
    return Group(
        Text(f"  A: {labels[0]}"),
        Text(f"  B: {labels[1]}"),
        Text(""),
        Padding(table, (0, 0, 0, 2)),
        Text(""),
        Text(retry_sentence(c)),
    )


def _reliability_dict(r: Reliability) -> dict[str, Any]:
    return {
        "trials": r.trials,
        "succeeded": r.succeeded,
        "success_rate": r.success_rate,
        "success_ci": None if r.success_ci is None else list(r.success_ci),
        "p95_ms": r.p95_ms,
        "p95_ci_ms": None if r.p95_ci_ms is None else list(r.p95_ci_ms),
        "attempts_mean": r.attempts_mean,
        "waited_ms": r.waited_s * 1000,
    }


def retry_to_dict(
    c: RetryComparison, *, labels: tuple[str, str], run_ids: tuple[str, str]
) -> dict[str, Any]:
    return {
        "schema": RETRY_SCHEMA,
        "verdict": c.verdict,
        "p_value": c.p_value,
        "arms": {
            "A": {"label": labels[0], "run_id": run_ids[0], **_reliability_dict(c.a)},
            "B": {"label": labels[1], "run_id": run_ids[1], **_reliability_dict(c.b)},
        },
        "summary": retry_sentence(c),
    }
