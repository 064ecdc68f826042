"""``latdoc verify --check FILE``: the file read into cases (and refused in one line,
naming the line and the fault, before anything is sent), each expectation judged, both
arms' checks compared, held in the budget, and what they do to the verdict."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from latdoc import UsageError
from latdoc.features.verify import TRADE, VerifyResult, verdict_line
from latdoc.features.verify.analysis import weigh_checks
from latdoc.features.verify.arms import Prompts
from latdoc.features.verify.checks import (
    Answer,
    CheckCase,
    checks_to_dict,
    hold_checks,
    judge_checks,
    normalise,
    read_checks,
    render_checks,
)
from latdoc.features.verify.checks.cases import (
    Contains,
    Equals,
    FollowsSchema,
    Matches,
    SameAsA,
)
from latdoc.features.verify.experiments.max_tokens import at_limit
from latdoc.features.verify.experiments.trim import trimmed
from latdoc.features.verify.send import MIN_TRIALS, Arm
from latdoc.model import Price, Rates
from latdoc.probe import ConnectionOptions, Endpoint
from latdoc.report import make_console
from latdoc.workload import Budget, TokenCalibration, answer_of, prompt_cost

SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}


def write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "checks.jsonl"
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    )
    return path


def test_each_expectation_is_read_with_the_case_around_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"id": "capital", "prompt": "Capital of France?", "contains": "Paris", "max_tokens": 9},
        {"prompt": "Year?", "regex": r"\b\d{4}\b"},
        "",
        {"messages": [{"role": "user", "content": "City as JSON"}], "json_schema": SCHEMA},
        {"prompt": "Say yes", "equals": "Yes"},
        {"prompt": "Anything", "same_as_a": True},
    )
    checks = read_checks(path)
    assert checks.source == str(path)
    kinds = [type(c.expectation) for c in checks.cases]
    assert kinds == [Contains, Matches, FollowsSchema, Equals, SameAsA]
    first, second, third = checks.cases[:3]
    assert (first.id, first.line, first.prompt, first.max_tokens) == (
        "capital",
        1,
        "Capital of France?",
        9,
    )
    assert (second.id, second.max_tokens) == ("line 2", None)
    assert (third.id, third.prompt) == ("line 4", [{"role": "user", "content": "City as JSON"}])
    assert [c.against_a for c in checks.cases] == [False] * 4 + [True]


@pytest.mark.parametrize(
    ("lines", "fault"),
    [
        (["{not json"], r":1: not JSON: Expecting property name"),
        (['{"prompt": "a", "contains": "b"}', "[1, 2]"], r":2: a case is a JSON object, not list"),
        (['{"prompt": "a"}'], r":1: a case needs exactly one expectation of .*: none"),
        (
            ['{"prompt": "a", "contains": "b", "regex": "c"}'],
            r":1: a case needs exactly one expectation .*: 2 \(contains, regex\)",
        ),
        (['{"prompt": "a", "regex": "a("}'], r":1: regex 'a\(' does not compile: missing \)"),
        (
            ['{"prompt": "a", "json_schema": {"type": "thing"}}'],
            r":1: json_schema is not a valid JSON Schema: 'thing' is not valid",
        ),
        (['{"prompt": "a", "json_schema": "object"}'], r":1: json_schema must be a JSON Schema"),
        (['{"prompt": "a", "same_as_a": false}'], r":1: same_as_a must be true"),
        (['{"prompt": "a", "contain": "b"}'], r":1: unknown field 'contain'"),
        (['{"contains": "b"}'], r":1: a case needs a prompt or messages"),
        (
            ['{"prompt": "a", "messages": [], "contains": "b"}'],
            r":1: a case needs a prompt or messages",
        ),
        (['{"messages": [{"role": "user"}], "contains": "b"}'], r":1: each message is"),
        (['{"prompt": "", "contains": "b"}'], r":1: prompt must be a non-empty string"),
        (['{"prompt": "a", "contains": "b", "max_tokens": 0}'], r":1: max_tokens must be"),
        (
            [
                '{"id": "x", "prompt": "a", "contains": "b"}',
                '{"id": "x", "prompt": "c", "equals": "d"}',
            ],
            r":2: id 'x' is line 1's too",
        ),
        (["", "  "], r": no cases"),
        (["[" * 100_000 + "]" * 100_000], r":1: (not JSON|nested too deeply)"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_line_and_the_fault(
    tmp_path: Path, lines: list[str], fault: str
) -> None:
    path = write(tmp_path, *lines)
    with pytest.raises(UsageError) as caught:
        read_checks(path)
    message = str(caught.value)
    assert "\n" not in message
    assert re.search(re.escape(str(path)) + fault, message), message


def test_a_file_that_cannot_be_read_says_so(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--check .*missing\.jsonl: cannot read it"):
        read_checks(tmp_path / "missing.jsonl")


def case(expectation: Any, case_id: str = "c") -> CheckCase:
    return CheckCase(case_id, 1, "p", expectation)


@pytest.mark.parametrize(
    ("expectation", "right", "wrong", "why"),
    [
        (Contains("Paris"), "It is Paris.", "It is paris.", "does not contain 'Paris'"),
        (Matches(re.compile(r"^\d+ apples$")), "42 apples", "42 pears", "no match"),
        (FollowsSchema.read(SCHEMA), ' {"city": "Paris"}\n', '{"town": "Paris"}', "not valid"),
        (FollowsSchema.read(SCHEMA), '{"city": "Paris"}', "```json\n{}\n```", "not JSON"),
        (Equals("Hello,  World"), "  hello, world\n", "hello world", "is not"),
    ],
)
def test_each_expectation_passes_its_answer_and_says_why_another_fails(
    expectation: Any, right: str, wrong: str, why: str
) -> None:
    assert case(expectation).judge(right) is None
    said = case(expectation).judge(wrong)
    assert said is not None and said.startswith(why)


def test_same_as_a_reads_b_against_a_under_the_normalisation() -> None:
    assert normalise("  The  Tide\tis OUT \n") == "the tide is out"
    assert (
        case(SameAsA()).judge("the tide is out", "The  tide is out.") == "differs from A's answer"
    )
    assert case(SameAsA()).judge("THE TIDE IS OUT", " The tide\nis out ") is None


def answers(**by_case: tuple[str | None, str | None]) -> dict[str, dict[str, Answer]]:
    out: dict[str, dict[str, Answer]] = {"A": {}, "B": {}}
    for case_id, pair in by_case.items():
        for arm, text in zip("AB", pair, strict=True):
            out[arm][case_id] = Answer(text, None if text is not None else "HTTP 500")
    return out


def test_same_as_a_counts_for_b_alone_and_the_test_pairs_the_cases_both_can_fail() -> None:
    cases = [case(Contains("yes"), f"c{i}") for i in range(7)] + [case(SameAsA(), "same")]
    given = answers(**{f"c{i}": ("yes", "no") for i in range(6)}, c6=("no", "yes"))
    given["A"]["same"], given["B"]["same"] = Answer("Yes."), Answer("yes.")
    report = judge_checks("f.jsonl", cases, given)
    assert (report.a.passed, report.a.total) == (6, 7)
    assert (report.b.passed, report.b.total) == (2, 8)
    assert (report.only_a, report.only_b, report.against_a) == (6, 1, 1)
    assert report.p_value == pytest.approx(0.125)  # 1 of 7 discordant: 2 × P(X ≤ 1 | 7, ½)
    assert report.quality == "no_difference"
    assert [j.case for j in report.b.failing] == [f"c{i}" for i in range(6)]
    low, high = report.b.interval or (0, 0)
    assert low < 2 / 8 < high


def test_no_answer_fails_the_case_and_an_unread_one_is_left_out() -> None:
    cases = [case(Contains("yes"), "failed"), case(Contains("yes"), "unread")]
    given = answers(failed=("yes", None))
    given["A"]["unread"] = Answer("yes")
    given["B"]["unread"] = Answer(None, "not read", unread=True)
    report = judge_checks("f.jsonl", cases, given)
    assert (report.checked, report.left_out, report.b.total) == (2, 1, 1)
    assert report.b.failing[0].why == "no answer: HTTP 500"


def test_a_case_not_sent_in_both_arms_is_not_checked() -> None:
    cases = [case(Contains("yes"), "sent"), case(Contains("yes"), "not sent")]
    report = judge_checks("f.jsonl", cases, answers(sent=("yes", "yes")))
    assert (report.cases, report.checked, report.a.total) == (2, 1, 1)


def test_the_checks_only_take_from_the_verdict() -> None:
    assert weigh_checks("better", "worse") == TRADE
    assert weigh_checks("no_difference", "worse") == "worse"
    assert weigh_checks("worse", "worse") == "worse"
    for verdict in ("better", "worse", "no_difference"):
        for quality in ("better", "no_difference", None):
            assert weigh_checks(verdict, quality) == verdict


def _worse_report() -> Any:
    cases = [case(Contains("yes"), f"c{i}") for i in range(8)] + [case(SameAsA(), "same")]
    given = answers(**{f"c{i}": ("yes", "no") for i in range(8)})
    given["A"]["same"], given["B"]["same"] = Answer("a"), Answer("b")
    return judge_checks("mine.jsonl", cases, given)


def test_a_faster_remedy_that_fails_more_checks_is_a_trade_never_better() -> None:
    from latdoc.analysis.compare import MEDIAN
    from latdoc.features.verify.analysis import judge_arms
    from unit.analysis.test_policy import _arm

    verdict, comparison = judge_arms(
        _arm(200, 20, 1), _arm(100, 20, 2), metric="ttft", statistic=MEDIAN
    )
    assert verdict == "better"
    report = _worse_report()
    assert report.quality == "worse" and report.p_value == pytest.approx(2 * 0.5**8)
    result = VerifyResult(
        "model",
        weigh_checks(verdict, report.quality),
        headline=comparison.primary,
        comparison=comparison,
        checks=report,
    )
    line = verdict_line(result)
    assert line.startswith(
        "Verdict: trade — faster, but fails more of your checks: A passed 8/8, B 0/9 "
        "(p = 0.0078, McNemar's exact test); B saves "
    )
    assert "better" not in line
    document = result.document()
    assert document["schema"] == "latdoc.verify/2" and document["verdict"] == "trade"
    section = document["checks"]
    assert section == checks_to_dict(report)
    assert section["arms"]["B"]["failing"][0] == {"id": "c0", "why": "does not contain 'yes'"}
    assert (section["same_as_a"], section["same_as_a_counts_for"]) == (1, "B")
    assert section["normalisation"] == "strip, collapse whitespace, case-fold"
    assert replace(result, verdict="better", checks=None).document()["checks"] is None


def test_the_terminal_shows_a_small_table_and_the_first_failing_cases() -> None:
    out = io.StringIO()
    make_console(out, width=200).print(render_checks(_worse_report()))
    text = out.getvalue()
    assert "Your checks (mine.jsonl: 9 of 9 cases sent in both arms)" in text
    assert re.search(r"A\s+8/8\s+100%\s+68%–100%", text), text
    assert re.search(r"B\s+0/9\s+0%\s+0%–30%", text), text
    assert "8 passed in A and failed in B, 0 the other way (p = 0.0078" in text
    assert "counted for B only" in text
    assert "Failing in B: c0, c1, c2, c3, c4 and 4 more" in text
    assert "Failing in A" not in text


ENDPOINT = Endpoint("http://127.0.0.1:9/v1", "m")
ONE_WORD = TokenCalibration(overhead=0.0, per_word=1.0, measured=True)


def arm(name: str, **kw: Any) -> Arm:
    return Arm(name, "", ENDPOINT, ConnectionOptions(), Prompts(10), 20, 8, **kw)


def test_the_checks_are_held_beside_what_the_trials_need_and_the_rest_said() -> None:
    arms = (arm("A", warmup_trials=1), arm("B", warmup_trials=1))
    trials = 2 * (1 + MIN_TRIALS)
    cases = [case(Contains("x"), f"c{i}") for i in range(5)]
    budget = Budget(max_requests=trials + 2 * 3 + 1)
    held, notes = hold_checks(cases, arms, budget, ONE_WORD, 16)
    assert [h.case.id for h in held] == ["c0", "c1", "c2"]
    assert budget.requests_left == trials + 1
    assert [r.output_tokens for h in held for r in h.reservations] == [16] * 6
    assert len(notes) == 1 and "affords 3 of the 5 checks in both arms" in notes[0].text
    roomy = Budget(max_requests=200)
    held, notes = hold_checks(cases, arms, roomy, ONE_WORD, 16)
    assert len(held) == 5 and not notes


def test_the_tokens_held_leave_the_trials_theirs() -> None:
    arms = (arm("A"), arm("B"))
    trial_tokens = 2 * MIN_TRIALS * (20 + 8)
    one_case = 2 * (prompt_cost(ONE_WORD, 1) + 16)  # "p", one word; 16 tokens out
    budget = Budget(max_requests=200, token_budget=trial_tokens + one_case)
    held, _ = hold_checks(
        [case(Contains("x"), "a"), case(Contains("x"), "b")], arms, budget, ONE_WORD, 16
    )
    assert [h.case.id for h in held] == ["a"]


def test_the_money_held_is_at_each_arm_s_price_and_leaves_the_trials_theirs() -> None:
    """$1 a token in A, $2 in B: a case costs three times its tokens, the trials' minimum
    too, and a cap with room for one case beside the trials holds that one."""
    cheap = Price(Rates(input=1e6, output=1e6), "test")
    dear = Price(Rates(input=2e6, output=2e6), "test")
    arms = (arm("A", price=cheap), arm("B", price=dear))
    case_tokens = prompt_cost(ONE_WORD, 1) + 16
    cap = 3 * MIN_TRIALS * (20 + 8) + 3 * case_tokens
    budget = Budget(max_requests=200, max_cost=cap, price=cheap)
    held, notes = hold_checks(
        [case(Contains("x"), "a"), case(Contains("x"), "b")], arms, budget, ONE_WORD, 16
    )
    assert [h.case.id for h in held] == ["a"]
    assert [r.cost for r in held[0].reservations] == [case_tokens, 2 * case_tokens]
    assert "--max-cost" in notes[0].text


def test_each_arm_sends_a_case_as_its_remedy_would() -> None:
    """max-tokens sends at the arm's own limit; trim's B keeps the system prompt and the
    latest turns that fit, and cuts a text to its last words."""
    long_case = CheckCase("c", 1, "p", Contains("x"), max_tokens=500)
    limited = arm("B", adapt=at_limit(40))
    held, _ = hold_checks([long_case], (arm("A"), limited), Budget(200), ONE_WORD, 16)
    assert [limit for _, limit in held[0].requests] == [500, 40]
    trim = trimmed(ONE_WORD, 12)
    assert trim("one two three four five six seven eight nine ten eleven twelve thirteen", 9) == (
        "two three four five six seven eight nine ten eleven twelve thirteen",
        9,
    )
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "My name is Ada and I like long walks."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "What is my name?"},
    ]
    # The system prompt (2 words and 4) and the last turn (4 and 4) fit 16; no more.
    kept, _ = trimmed(ONE_WORD, 16)(chat, 9)
    assert kept == [chat[0], chat[3]]
    # Where the last turn alone does not fit, its last words that do.
    kept, _ = trimmed(ONE_WORD, 7)(chat, 9)
    assert kept == [{"role": "user", "content": "is my name?"}]


def test_the_answer_is_read_in_the_endpoint_s_own_dialect_without_its_reasoning() -> None:
    from latdoc.probe import Dialect, parse_event

    text: list[str] = []
    hook = answer_of(text)
    for event in (
        {"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": "hmm"}},
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Paris"}},
        {"type": "message_stop"},
    ):
        hook(parse_event(event, Dialect("anthropic")), 0)
    chat: list[str] = []
    hook = answer_of(chat)
    for event in (
        {"choices": [{"delta": {"reasoning_content": "hmm", "content": "Pa"}}]},
        {"choices": [{"delta": {"content": "ris"}}]},
    ):
        hook(parse_event(event, Dialect("chat")), 0)
    assert "".join(text) == "".join(chat) == "Paris"


def test_a_remedy_that_runs_its_own_experiment_takes_no_checks() -> None:
    from latdoc import VerifyPlan
    from latdoc.features.verify import CheckFile

    checks = CheckFile("f.jsonl", (case(Contains("x")),))
    for name in ("conversation", "retry"):
        with pytest.raises(
            UsageError, match=f"--check goes with a remedy of two arms; --remedy {name}"
        ):
            VerifyPlan(endpoint=ENDPOINT, remedy=name, checks=checks)
    assert VerifyPlan(endpoint=ENDPOINT, remedy="keepalive", checks=checks).checks == checks
