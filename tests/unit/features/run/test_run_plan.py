"""A plan read and run without a command line: the names its options go by are given
as data, each step runs through a stand-in, and the plan's status follows its steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from latdoc.errors import UsageError
from latdoc.features.run import (
    INTERRUPTED,
    OK,
    STEP_COMMANDS,
    URL,
    OptionName,
    PlannedStep,
    read_plan,
    run_plan,
)

_COMMON = {
    "url": URL,
    "model": OptionName("--model", "--model"),
    "m": OptionName("--model", "-m"),
    "max-tokens": OptionName("--max-tokens", "--max-tokens"),
    "max_tokens": OptionName("--max-tokens", "--max-tokens"),
    "http2": OptionName("--http2", "--http2"),
}
NAMES = {command: _COMMON for command in STEP_COMMANDS}


def _plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text('[endpoint]\nurl = "https://x/v1"\nmodel = "m"\n\n' + text)
    return path


def test_each_step_is_the_command_line_it_stands_for(tmp_path: Path) -> None:
    path = _plan(
        tmp_path,
        '[[steps]]\ncommand = "probe"\nmax_tokens = [4, 8]\nhttp2 = true\n\n'
        '[[steps]]\ncommand = "load"\nhttp2 = false\n',
    )
    steps = read_plan(path, NAMES, db="runs.db")
    assert [s.argv for s in steps] == [
        ("probe", "https://x/v1", "--model", "m", "--max-tokens", "4,8", "--http2",
         "--db", "runs.db"),
        ("load", "https://x/v1", "--model", "m", "--db", "runs.db"),
    ]  # fmt: skip
    assert steps[1].shown() == "latdoc load https://x/v1 --model m --db runs.db"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[[steps]]\ncommand = "probe"\nmax-tokns = 4\n', "(did you mean max-tokens?)"),
        ('[[steps]]\ncommand = "probe"\nm = "x"\n', "m is in [endpoint] already"),
        (
            '[[steps]]\ncommand = "probe"\nmax-tokens = 4\nmax_tokens = 5\n',
            "max-tokens and max_tokens name the same option (--max-tokens)",
        ),
        ('[[steps]]\ncommand = "bake"\n', "step 1: command 'bake'"),
        ("[other]\n", "unknown table or key other"),
        ("", "no steps"),
    ],
)
def test_a_mistake_is_one_error_naming_the_file_and_step(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(UsageError, match=r"plan\.toml") as caught:
        read_plan(_plan(tmp_path, text), NAMES)
    assert said in str(caught.value)


def test_the_plan_fails_as_its_first_failing_step_and_stops_when_interrupted() -> None:
    steps = [PlannedStep(n, "probe", ("probe",)) for n in (1, 2, 3, 4)]
    seen: list[int] = []

    def runs(codes: dict[int, int], **stop: bool) -> tuple[int, list[int]]:
        seen.clear()

        def run_step(step: PlannedStep) -> int:
            seen.append(step.number)
            return codes.get(step.number, OK)

        return run_plan(steps, run_step, **stop), list(seen)

    assert runs({}) == (OK, [1, 2, 3, 4])
    assert runs({2: 1, 3: 2}) == (1, [1, 2, 3, 4])
    assert runs({2: 1}, stop_on_failure=True) == (1, [1, 2])
    assert runs({2: INTERRUPTED}) == (INTERRUPTED, [1, 2])


def test_the_statuses_are_the_command_lines() -> None:
    from latdoc.cli import EXIT_INTERRUPTED, EXIT_OK

    assert (OK, INTERRUPTED) == (EXIT_OK, EXIT_INTERRUPTED)
