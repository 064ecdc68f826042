"""The bank's figures: every scenario diagnosed and scored against its truth.

:func:`run` draws the scenarios, records each one's run (:func:`bank.generate`),
diagnoses it with the real ``build_diagnosis`` and scores the verdict against the
counterfactual truth (:mod:`bank.counterfactual`) or the rule-copying one
(:mod:`bank.truth`), noting the hard slice (:mod:`bank.hard`) and what the other
truth says. :func:`flips` replays scenarios with other noise, and :func:`figures`
gives the figures ``bench/calibration.py --json`` writes.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bank.counterfactual import counterfactual, moved
from bank.draw import NOISE, draw_many
from bank.generate import context, generate
from bank.hard import facts_of, healthy_with_quirks, reasons
from bank.scenario import Scenario
from bank.score import (
    Outcome,
    accuracy,
    auroc,
    brier,
    brier_constant,
    calibration,
    recall_precision,
)
from bank.truth import truth as rule_truth
from latdoc.model import Kind
from latdoc.pipeline import build_diagnosis

TRUTHS = ("counterfactual", "rules")
REPLAYS = 10
"""Noise seeds each scenario of :func:`flips` is run with."""


def outcome(s: Scenario, which: str = "counterfactual", moved_by: float = 1.0) -> Outcome:
    """One scenario diagnosed and scored against the truth named ``which`` (the
    counterfactual one with the reference's values moved by ``moved_by``)."""
    cf = counterfactual(s) if moved_by == 1.0 else counterfactual(s, moved(moved_by))
    rules = rule_truth(s)
    true, other = (cf, rules.primary) if which == "counterfactual" else (rules, cf.primary)
    facts = facts_of(s, cf)
    noise = next(k for k, v in NOISE.items() if v == s.jitter)
    d = build_diagnosis(generate(s), context(s))
    return replace(
        Outcome.of(f"{s.label} @{noise}", true, d),
        hard=reasons(facts),
        healthy_quirks=healthy_with_quirks(facts),
        other_truth=other,
        prompt_tokens=s.prompt_tokens,
    )


def run(
    n: int,
    seed: int,
    *,
    realistic: bool = True,
    which: str = "counterfactual",
    moved_by: float = 1.0,
) -> tuple[list[Outcome], float]:
    """Every scenario's outcome, and the seconds it took."""
    start = time.perf_counter()
    out = [outcome(s, which, moved_by) for s in draw_many(n, seed, realistic=realistic)]
    return out, time.perf_counter() - start


@dataclass(frozen=True, slots=True)
class Flip:
    """One scenario replayed with :data:`REPLAYS` noise seeds."""

    label: str
    hard: bool
    primaries: tuple[Kind, ...]

    @property
    def flipped(self) -> bool:
        return len(set(self.primaries)) > 1


def flips(scenarios: Sequence[Scenario], replays: int = REPLAYS) -> list[Flip]:
    """Each scenario's primary kind under ``replays`` noise seeds (the model kept)."""
    out = []
    for s in scenarios:
        hard = bool(reasons(facts_of(s, counterfactual(s))))
        primaries = tuple(
            build_diagnosis(generate(again), context(again)).verdict.primary
            for again in (replace(s, seed=s.seed * 1000 + k) for k in range(replays))
        )
        out.append(Flip(s.label, hard, primaries))
    return out


def _rate(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def figures(outcomes: Sequence[Outcome], replayed: Sequence[Flip], seed: int) -> dict[str, object]:
    """The figures of one evaluation, by the names ``--json`` writes."""
    hard = [o for o in outcomes if o.hard]
    easy = [o for o in outcomes if not o.hard]
    quirky = [o for o in outcomes if o.healthy_quirks]
    recall, precision, _, _ = recall_precision(outcomes, contributing_only=True)
    kinds_recall, kinds_precision, _, _ = recall_precision(outcomes, contributing_only=False)
    easy_flips = [f.flipped for f in replayed if not f.hard]
    return {
        "n": len(outcomes),
        "seed": seed,
        "accuracy": accuracy(outcomes),
        "hard_slice_accuracy": accuracy(hard) if hard else None,
        "hard_slice_n": len(hard),
        "easy_accuracy": accuracy(easy) if easy else None,
        "outside_hard_accuracy": accuracy(easy) if easy else None,
        "healthy_quirks_accuracy": _rate([o.primary is Kind.HEALTHY for o in quirky]),
        "healthy_quirks_n": len(quirky),
        "kinds_recall": kinds_recall,
        "kinds_precision": kinds_precision,
        "contributing_recall": recall,
        "contributing_precision": precision,
        "contributing_only_recall": recall,
        "contributing_only_precision": precision,
        "ece": calibration(outcomes)[1],
        "ece_hard_slice": calibration(hard)[1] if hard else None,
        "auroc": auroc(outcomes),
        "auroc_hard_slice": auroc(hard) if hard else None,
        "brier": brier(outcomes),
        "brier_constant": brier_constant(outcomes),
        "flip_rate": _rate(easy_flips),
        "flip_rate_hard_slice": _rate([f.flipped for f in replayed if f.hard]),
        "flip_n": len(easy_flips),
        "requests_median": statistics.median(o.requests for o in outcomes),
        "truths_agree": _rate([o.other_truth is o.truth.primary for o in outcomes]),
    }
