"""A plan names each option as the command line does: by its long or short flag, or by
its dest name, and each maps to that option; a name no option has is one error naming
the step. Checked with ``--dry-run``: nothing is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from latdoc.cli import main


def _dry_run(tmp_path: Path, steps: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[endpoint]\nurl = "http://127.0.0.1:9/v1"\nmodel = "m"\n\n' + steps, encoding="utf-8"
    )
    code = main(["run", str(plan), "--dry-run"])
    captured = capsys.readouterr()
    return code, captured.out if code == 0 else captured.err


@pytest.mark.parametrize(
    ("option", "written"),
    [
        ("n = 5", "--repeat 5"),
        ("repeat = 5", "--repeat 5"),
        ("max_tokens = 4", "--max-tokens 4"),
        ("new-connection-each = true", "--new-connection-each"),
        ("reuse = true", "--reuse"),
    ],
)
def test_every_name_of_an_option_is_that_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, written: str
) -> None:
    code, out = _dry_run(tmp_path, f'[[steps]]\ncommand = "probe"\n{option}\n', capsys)
    assert code == 0, out
    assert out == f"latdoc probe http://127.0.0.1:9/v1 --model m {written}\n"


def test_a_second_long_flag_is_written_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = '[[steps]]\ncommand = "diagnose"\noutput-tokens = 4\n'
    steps += '\n[[steps]]\ncommand = "diagnose"\nmax_tokens = 4\n'
    code, out = _dry_run(tmp_path, steps, capsys)
    assert code == 0, out
    assert out.splitlines() == [
        "latdoc diagnose http://127.0.0.1:9/v1 --model m --output-tokens 4",
        "latdoc diagnose http://127.0.0.1:9/v1 --model m --max-tokens 4",
    ]


def test_the_endpoint_takes_short_and_dest_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[endpoint]\nurl = "http://127.0.0.1:9/v1"\nm = "m"\nk = true\napi_key_env = "KEY"\n\n'
        '[[steps]]\ncommand = "verify"\nremedy = "trim"\nfrom_tokens = 10\nalt_url = "http://127.0.0.1:8/v1"\n',
        encoding="utf-8",
    )
    assert main(["run", str(plan), "--dry-run"]) == 0
    assert capsys.readouterr().out == (
        "latdoc verify http://127.0.0.1:9/v1 --model m --insecure --api-key-env KEY "
        "--remedy trim --from 10 --alt http://127.0.0.1:8/v1\n"
    )


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        ('command = "load"\nconcurency = 4\n', "step 1 (load): no option is named concurency"),
        ('command = "probe"\nhelp = true\n', "step 1 (probe): no option is named help"),
        ('command = "probe"\nno = true\n', "step 1 (probe): no option is named no"),
        ('command = "probe"\nn = 2\nrepeat = 3\n', "n and repeat name the same option"),
        ('command = "probe"\nm = "x"\n', "step 1: m is in [endpoint] already"),
    ],
)
def test_a_name_no_option_has_is_one_error_naming_the_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], steps: str, said: str
) -> None:
    code, err = _dry_run(tmp_path, f"[[steps]]\n{steps}", capsys)
    assert code == 2
    assert err.startswith("Error: ") and err.count("\n") == 1 and said in err, err
