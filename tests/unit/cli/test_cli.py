"""``latdoc probe`` end to end: output, JSON keys, exit codes, errors, and the secret."""

from __future__ import annotations

import pytest

from latdoc.cli import EXIT_USAGE, main


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SSL_CERT_FILE"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["probe", "ftp://example/v1", "-m", "x"], "invalid URL"),
        (["probe", "http://127.0.0.1:9/v1"], "--model is required"),
        (["probe", "http://127.0.0.1:9/v1", "-m", "x", "--repeat", "0"], "at least 1"),
        (["probe", "http://127.0.0.1:9/v1", "-m", "x", "--prompt", "a", "--prompt-tokens", "5"],
         "not allowed with"),
        (["probe", "http://127.0.0.1:9/v1", "-m", "x", "--api-key-env", "LATDOC_NO_SUCH_VAR"],
         "not set"),
        (["probe", "https://127.0.0.1:9/v1", "-m", "x", "--cacert", "/no/such.pem"], "not found"),
        (["lab", "serve", "--http2"], "needs --tls"),
        (["probe", "http://127.0.0.1:9/v1", "-m", "x", "--timeout", "0"], "more than 0"),
        (["diagnose", "http://127.0.0.1:9/v1", "--db", ":memory:"], "--model is required"),
    ],
)  # fmt: skip
def test_user_mistakes_are_one_error_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith("Error: ")
    assert message in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "dest", "seconds"),
    [
        (["probe", "--timeout", "5m"], "timeout", 300.0),
        (["probe", "--timeout", "90"], "timeout", 90.0),
        (["diagnose", "--max-seconds", "2m"], "max_seconds", 120.0),
        (["load", "--duration-per-level", "10s"], "duration_per_level", 10.0),
        (["load", "--duration-per-level", "1500ms"], "duration_per_level", 1.5),
        (["verify", "--remedy", "keepalive", "--max-seconds", "1h"], "max_seconds", 3600.0),
        (["watch", "--name", "w", "--every", "15m"], "every", 900.0),
    ],
)
def test_every_duration_flag_takes_units_and_bare_seconds(
    argv: list[str], dest: str, seconds: float
) -> None:
    from latdoc.cli import build_parser

    assert getattr(build_parser().parse_args(argv), dest) == pytest.approx(seconds)


def test_an_slo_takes_the_same_durations_in_milliseconds() -> None:
    from latdoc.cli import build_parser

    args = build_parser().parse_args(["load", "--slo", "ttft=2s,tpot=250us,ttft_p95=1.5s"])
    slo, objectives = args.slo
    assert slo.ttft_ms == pytest.approx(2000.0)
    assert slo.tpot_ms == pytest.approx(0.25)
    assert [(o.metric, o.q, o.limit_ms) for o in objectives] == [("ttft", 0.95, 1500.0)]


@pytest.mark.parametrize("flag", ["--timeout", "--max-seconds", "--duration-per-level"])
def test_a_duration_flag_refuses_a_word_in_one_line(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["load", flag, "ten seconds"]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "not a duration" in err[0]


_BUDGET = [
    "--max-requests", "9", "--token-budget", "99", "--max-seconds", "30s", "--max-cost", "5",
    "--price", "in=1,out=2",
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "kind", "own"),
    [
        (["load", *_BUDGET], "LoadPlan", {}),
        (["diagnose", *_BUDGET], "DiagnosisPlan", {}),
        (["verify", "--remedy", "keepalive", *_BUDGET], "VerifyPlan", {"remedy": "keepalive"}),
        (["probe"], "ProbePlan", {}),
        (["watch"], "WatchPlan", {}),
    ],
)
def test_every_sending_command_reads_the_shared_options_into_its_plan(
    argv: list[str], kind: str, own: dict[str, object]
) -> None:
    import latdoc
    from latdoc.cli import build_parser
    from latdoc.cli._sending import Sending
    from latdoc.probe import ConnectionOptions, Endpoint

    args = build_parser().parse_args([*argv, "--max-tokens", "7", "--seed", "3"])
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m")
    plan = Sending.of(args).plan(getattr(latdoc, kind), endpoint, ConnectionOptions(), **own)
    assert (plan.endpoint, plan.max_tokens, plan.seed) == (endpoint, 7, 3)
    if "--max-requests" in argv:
        assert (plan.max_requests, plan.token_budget, plan.max_seconds) == (9, 99, 30.0)
        assert plan.max_cost == 5 and plan.price.source == "--price"
