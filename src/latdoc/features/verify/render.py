"""What ``latdoc verify`` shows.

- :class:`VerifyResult`: what an A/B experiment found, with its document
  (:data:`VERIFY_SCHEMA`), the blocks the terminal shows (the comparison, the user's
  checks, the notes, the verdict line, the gates) and its page;
- :func:`plan_line`: what an experiment will do, said before anything is sent.

Nothing here writes: the command prints what these return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from latdoc.analysis.compare import TRIAL_MEAN, Comparison, MetricComparison
from latdoc.analysis.gates import GateReport
from latdoc.features.verify.analysis import NOT_APPLICABLE, TRADE
from latdoc.features.verify.checks.analysis import CheckReport
from latdoc.features.verify.checks.render import checks_clause, checks_to_dict, render_checks
from latdoc.features.verify.plan import VerifyPlan, arm_summaries
from latdoc.i18n import N_
from latdoc.model import dollars
from latdoc.records import StepNote
from latdoc.report import (
    comparison_to_dict,
    format_ms,
    format_p,
    gates_to_dict,
    render_comparison,
    render_comparison_html,
    render_gates,
    run_to_dict,
)
from latdoc.report.costs import CostRow, cost_block, cost_rows_to_dict, cost_sentences
from latdoc.store import RunInfo

if TYPE_CHECKING:
    from rich.console import RenderableType

VERIFY_SCHEMA = "latdoc.verify/2"
"""/2: the ``checks`` section (``null`` without ``--check``) and the verdict ``trade``."""


@dataclass(frozen=True)
class VerifyResult:
    """What the experiment found, and where its arms are kept."""

    remedy: str
    verdict: str
    """``better``, ``worse``, ``no_difference``, ``trade`` (faster, but failing more of
    the user's checks) or ``not_applicable``."""
    reason: str | None = None
    """Why the remedy is not applicable here, in words."""
    headline: MetricComparison | None = None
    """The remedy's headline metric, A against B, tested alone: the row of
    :attr:`comparison` the verdict is."""
    comparison: Comparison | None = None
    """Every metric: the headline tested alone, the others Holm-adjusted together and
    read after it (each p at least the headline's)."""
    labels: tuple[str, str] = ("", "")
    run_ids: tuple[str, str] | None = None
    notes: tuple[StepNote, ...] = ()
    stopped_because: str | None = None
    cached_tokens_b: int | None = None
    """The median prompt tokens the server reported cached in arm B (prompt-cache)."""
    store_path: str = ""
    runs: tuple[RunInfo, RunInfo] | None = None
    """Both arms' runs as the store keeps them, A first."""
    gates: GateReport | None = None
    """The plan's gates checked on B against A, the baseline; ``None``: none asked."""
    interrupted: bool = False
    """The user stopped the sending; what was measured is compared."""
    costs: tuple[CostRow, CostRow] | None = None
    """What each arm's kept requests cost at its model's price, A first."""
    model: str = ""
    """The plan's model, to say its cost is unknown by name where it has no price."""
    checks: CheckReport | None = None
    """The user's checks on both arms (``--check``); ``None``: none asked."""
    caveat: str | None = None
    """What the experiment's measurement cannot say (its experiment's ``caveat``)."""
    spent: float | None = None
    """Dollars the whole run spent (calibration, warm-ups and checks with the trials);
    ``None`` where a model it sent to has no price."""

    @property
    def gain_ms(self) -> float | None:
        """What B saves on the headline metric, per request: A − B (median or mean)."""
        return None if self.headline is None else -self.headline.difference_ms

    @property
    def gain_interval_ms(self) -> tuple[float, float] | None:
        ci = None if self.headline is None else self.headline.difference_ci_ms
        return None if ci is None else (-ci[1], -ci[0])

    @property
    def not_applicable(self) -> bool:
        return self.verdict == NOT_APPLICABLE

    @property
    def gates_failed(self) -> bool:
        return self.gates is not None and bool(self.gates.failed)

    @property
    def page_kind(self) -> str:
        return "comparison"

    def document(self) -> dict[str, Any]:
        """The result as JSON (:data:`VERIFY_SCHEMA`): the verdict, the gain with its
        interval, both arms' cost, runs and comparison, the user's checks, the gates if
        any."""
        runs = self.runs
        document: dict[str, Any] = {
            "schema": VERIFY_SCHEMA,
            "remedy": str(self.remedy),
            "verdict": self.verdict,
            "reason": self.reason,
            "headline": None if self.headline is None else self.headline.key,
            "statistic": None if self.headline is None else self.headline.statistic,
            "gain_ms": self.gain_ms,
            "gain_interval_ms": None
            if self.gain_interval_ms is None
            else list(self.gain_interval_ms),
            "p_value": None if self.headline is None else self.headline.p_adjusted,
            "arms": {"A": self.labels[0], "B": self.labels[1]},
            "run_ids": None if self.run_ids is None else list(self.run_ids),
            "cached_tokens_b": self.cached_tokens_b,
            "stopped_because": self.stopped_because,
            "notes": [{"step": str(n.step), "text": n.text} for n in self.notes],
            "costs": None if self.costs is None else cost_rows_to_dict(self.costs),
            "spent_usd": self.spent,
            "summary": verdict_line(self),
            "comparison": None
            if self.comparison is None or runs is None
            else comparison_to_dict(
                self.comparison, a=run_to_dict(runs[0]), b=run_to_dict(runs[1])
            ),
            "checks": None if self.checks is None else checks_to_dict(self.checks),
        }
        if self.gates is not None:
            document["gates"] = gates_to_dict(self.gates)
        return document

    def shown(self) -> tuple[RenderableType, ...]:
        """The comparison of the arms, their cost, the user's checks, the notes, what the
        server cached, what the measurement cannot say, the verdict line and the gates."""
        blocks: list[RenderableType] = []
        if self.comparison is not None and self.runs is not None:
            a, b = self.labels
            blocks.append(render_comparison(self.comparison, a_label=a, b_label=b))
        if self.costs is not None:
            blocks.append(cost_block(N_("Cost by arm"), self.costs, self.model, difference=True))
        if self.spent is not None:
            blocks.append(
                f"  The whole run spent {dollars(self.spent)} (calibration, warm-ups and checks "
                "too; a request whose server reported no usage at its worst case)."
            )
        if self.checks is not None:
            blocks.append(render_checks(self.checks))
        blocks += [f"  Note: {note.text}" for note in self.notes]
        if self.cached_tokens_b is not None:
            blocks.append(f"  B: the server reported {self.cached_tokens_b} prompt tokens cached.")
        if self.caveat is not None:
            blocks.append(f"  {self.caveat}")
        blocks.append(verdict_line(self))
        if self.gates is not None:
            blocks.append(render_gates(self.gates))
        return tuple(blocks)

    def page(self) -> str | None:
        """The comparison as an HTML page headed by the verdict, once the arms ran."""
        if self.comparison is None or self.runs is None:
            return None
        return render_comparison_html(
            self.comparison,
            a_label=self.labels[0],
            b_label=self.labels[1],
            heading=f"verify {self.remedy}: {verdict_line(self)}",
            cost=()
            if self.costs is None
            else cost_sentences(self.costs, self.model, difference=True),
        )

    def kept(self) -> str | None:
        if self.run_ids is None:
            return None
        a, b = self.run_ids
        return (
            f"Runs {a} (A) and {b} (B) kept in {self.store_path}; `latdoc compare {a} {b}` "
            "shows them again."
        )


def verdict_line(result: VerifyResult) -> str:
    """The answer in one line: the verdict and what B saves, with its interval, and what
    the user's checks say; a :data:`~latdoc.features.verify.analysis.TRADE` leads with
    what B gives up."""
    if result.verdict == NOT_APPLICABLE:
        return f"Verdict: not applicable — {result.reason}"
    m, gain, ci = result.headline, result.gain_ms, result.gain_interval_ms
    assert m is not None and gain is not None
    interval = "" if ci is None else f" (95% CI {format_ms(ci[0])} … {format_ms(ci[1])})"
    what = "saves" if gain >= 0 else "adds"
    statistic, counted = m.statistic, ""
    if statistic == TRIAL_MEAN:
        statistic, counted = "mean", " trials (each trial's mean, the median over trials)"
    latency = (
        f"B {what} {format_ms(abs(gain))} of {statistic} {m.label} per request{interval}, "
        f"{format_p(m.p_adjusted)}, n = {m.n_a}/{m.n_b}{counted}"
    )
    if result.checks is None:
        return f"Verdict: {result.verdict} — {latency}"
    checked = checks_clause(result.checks)
    if result.verdict == TRADE:
        return f"Verdict: {TRADE} — faster, but {checked}; {latency}"
    return f"Verdict: {result.verdict} — {latency}; {checked}"


def plan_line(plan: VerifyPlan) -> str:
    """What the experiment will do: its endpoint, both arms, how it sends, its budget."""
    a, b = arm_summaries(plan)
    tokens = f", {plan.token_budget:,} tokens" if plan.token_budget else ""
    within = f"at most {plan.max_requests} requests{tokens} and {plan.max_seconds:g} s"
    schedule = plan.remedy.schedule
    how = (
        f"{schedule}; {within}."
        if schedule is not None
        else f"Trials of A and B interleaved in shuffled blocks; {within}; stops early once "
        f"the 95% interval of A ÷ B is within ±{plan.precision:.0%}."
    )
    checks = plan.checks
    if checks is not None:
        n = len(checks.cases)
        how += (
            f"\n  Then your {n} check{'s' if n != 1 else ''} ({checks.source}) in both arms, "
            "held in the budget first."
        )
    return (
        f"Plan: verify {plan.remedy.name} on {plan.endpoint.model} at {plan.endpoint.base_url}\n"
        f"  A: {a}\n  B: {b}\n  {how}"
    )
