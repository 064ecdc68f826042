"""What the user's checks say of two arms: each arm's pass rate with its 95% interval
(the policy's :data:`~latdoc.analysis.policy.PROPORTION_INTERVAL`), and whether B passes
them less or more often than A, by McNemar's exact test on the same cases in both arms
(:func:`~latdoc.analysis.stats.mcnemar_p`, significant below
:data:`~latdoc.analysis.policy.ALPHA`).

A ``same_as_a`` case is B's alone: it asks whether B answers as A did, and A always
agrees with itself. It counts in B's rate, not in A's, and not in the test, which
pairs only the cases both arms can fail. A case an arm got no answer to (the request
failed) fails there; one whose answer latdoc could not read is left out of both, as is
a ``same_as_a`` case A got no answer to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from latdoc.analysis.policy import ALPHA
from latdoc.analysis.stats import mcnemar_p, proportion_interval
from latdoc.features.verify.checks.cases import CheckCase

WORSE = "worse"
BETTER = "better"
NO_DIFFERENCE = "no_difference"


@dataclass(frozen=True, slots=True)
class Answer:
    """What an arm answered to one case: its text, or why there is none."""

    text: str | None
    """``None``: no answer to judge (see :attr:`error`)."""
    error: str | None = None
    """Why there is no answer: the request failed (the case fails), or its text could
    not be read (the case is left out)."""
    unread: bool = False
    """The request succeeded but latdoc could not read the answer's text."""


@dataclass(frozen=True, slots=True)
class Judged:
    """One case in one arm: passed, or why not."""

    case: str
    passed: bool
    why: str | None = None


@dataclass(frozen=True, slots=True)
class ArmChecks:
    """One arm's checks: how many passed of how many, with the rate's 95% interval."""

    passed: int
    total: int
    interval: tuple[float, float] | None
    failing: tuple[Judged, ...]
    """The cases it failed, in the file's order, each with why."""

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The user's checks on both arms, and the test of their difference."""

    source: str
    """The file the cases came from."""
    cases: int
    """Cases in the file."""
    checked: int
    """Cases sent in both arms (the budget may afford fewer than the file has)."""
    a: ArmChecks
    b: ArmChecks
    against_a: int
    """``same_as_a`` cases among those checked: in B's count, not in A's."""
    only_a: int
    """Cases A passed and B failed (of those both arms can fail)."""
    only_b: int
    """Cases B passed and A failed."""
    p_value: float | None
    """McNemar's exact test on :attr:`only_a` and :attr:`only_b`; ``None`` with neither."""
    left_out: int = 0
    """Cases sent but not judged: an answer's text could not be read, or A gave none for
    B to agree with."""

    @property
    def quality(self) -> str | None:
        """``worse`` when B passes significantly fewer of the cases both arms can fail,
        ``better`` when more, else ``no_difference``; ``None`` when no such case was
        checked."""
        if self.a.total == 0:  # none judged, or only same_as_a cases
            return None
        if self.p_value is None or self.p_value >= ALPHA:
            return NO_DIFFERENCE
        return WORSE if self.only_a > self.only_b else BETTER


def judge_checks(
    source: str,
    cases: Sequence[CheckCase],
    answers: Mapping[str, Mapping[str, Answer]],
) -> CheckReport:
    """Both arms' checks from their ``answers`` (by arm, then by case id) to ``cases``:
    the cases answered in both arms are judged, the rest were not sent."""
    a_answers, b_answers = answers.get("A", {}), answers.get("B", {})
    sent = [c for c in cases if c.id in a_answers and c.id in b_answers]
    readable = [c for c in sent if _judgeable(c, a_answers[c.id], b_answers[c.id])]
    judged_a: list[Judged] = []
    judged_b: list[Judged] = []
    only_a = only_b = 0
    for case in readable:
        a, b = a_answers[case.id], b_answers[case.id]
        in_b = _judge(case, b, a.text)
        judged_b.append(in_b)
        if case.against_a:
            continue
        in_a = _judge(case, a, None)
        judged_a.append(in_a)
        only_a += in_a.passed and not in_b.passed
        only_b += in_b.passed and not in_a.passed
    return CheckReport(
        source=source,
        cases=len(cases),
        checked=len(sent),
        a=_arm(judged_a),
        b=_arm(judged_b),
        against_a=sum(c.against_a for c in readable),
        only_a=only_a,
        only_b=only_b,
        p_value=mcnemar_p(only_a, only_b),
        left_out=len(sent) - len(readable),
    )


def _judgeable(case: CheckCase, a: Answer, b: Answer) -> bool:
    return not (a.unread or b.unread or (case.against_a and a.text is None))


def _judge(case: CheckCase, answer: Answer, baseline: str | None) -> Judged:
    if answer.text is None:
        return Judged(case.id, False, f"no answer: {answer.error}")
    why = case.judge(answer.text, baseline)
    return Judged(case.id, why is None, why)


def _arm(judged: Sequence[Judged]) -> ArmChecks:
    passed = sum(j.passed for j in judged)
    return ArmChecks(
        passed=passed,
        total=len(judged),
        interval=proportion_interval(passed, len(judged)),
        failing=tuple(j for j in judged if not j.passed),
    )
