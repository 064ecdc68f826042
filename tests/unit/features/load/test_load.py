"""``latdoc load`` against the lab: the knee, the plateau, Little's law, goodput, open loop.

The lab serves 4 requests at once (``slots=4``) at 20 ms of prefill and 10 ms a
token, so a 16-token answer takes about 170 ms and the server's capacity is about
4 / 0.17 s ≈ 23 requests/s. It runs in its own process so that client and server
do not share an interpreter lock and the timing is real.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from latdoc import (
    ProbeSession,
    Slo,
    Store,
)
from latdoc.cli import main
from latdoc.errors import UsageError
from latdoc.features.load import Objective, is_loopback, parse_levels, parse_rates, parse_slo
from latdoc.features.load.analysis import (
    find_knee,
    find_plateau,
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SSL_CERT_FILE"):
        monkeypatch.delenv(var, raising=False)


def test_many_streams_at_a_remote_endpoint_need_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_connection(self: ProbeSession) -> ProbeSession:
        raise AssertionError("a connection was opened")

    monkeypatch.setattr(ProbeSession, "__aenter__", no_connection)
    db = tmp_path / "refused.db"
    code = main(
        ["load", "http://192.0.2.1:8000/v1", "--model", "m", "--concurrency", "8,65",
         "--db", str(db)]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("Error: --concurrency 65") and "--yes" in err
    with Store(db) as store:
        assert store.list_runs() == []
    assert is_loopback("http://127.0.0.1:1/v1") and is_loopback("http://localhost/v1")
    assert is_loopback("http://[::1]:8/v1") and not is_loopback("http://192.0.2.1/v1")


def test_slo_and_the_pure_rules() -> None:
    assert parse_slo("ttft=2s,tpot=100ms") == (Slo(ttft_ms=2000.0, tpot_ms=100.0), ())
    assert parse_slo("tpot=500us") == (Slo(tpot_ms=0.5), ())
    assert parse_slo("TTFT_p95=2s, e2e_p50=1.5s") == (
        Slo(),
        (Objective("ttft", 0.95, 2000.0), Objective("e2e", 0.5, 1500.0)),
    )
    assert find_knee([]) is None and find_plateau([]) is None
    for text in ("latency=2s", "ttft=soon", "ttft=0s", "ttft_p95=x"):
        with pytest.raises(UsageError, match="ttft=DURATION"):
            parse_slo(text)
    with pytest.raises(UsageError, match="ttft_p100: with --find-max name a metric"):
        parse_slo("ttft_p100=2s")


def test_levels_and_rates_are_read_in_their_order_or_refused() -> None:
    assert parse_levels("8,1, 4,") == (8, 1, 4)
    assert parse_rates("0.5,2") == (0.5, 2.0)
    refusals = [
        (parse_levels, "1,x", "not a list of whole numbers: '1,x'"),
        (parse_levels, "2,0", "each level must be at least 1: '2,0'"),
        (parse_levels, ",", "each level must be at least 1: ','"),
        (parse_rates, "1,fast", "not a list of rates: '1,fast'"),
        (parse_rates, "1,0", "each rate must be more than 0: '1,0'"),
    ]
    for parse, text, said in refusals:
        with pytest.raises(UsageError) as refused:
            parse(text)
        assert str(refused.value) == said


def test_littles_law_catches_a_level_that_held_half_its_concurrency() -> None:
    import dataclasses

    from latdoc import Sample, Step
    from latdoc.features.load.analysis import LevelWindow, analyse_load
    from report_samples import make_trace

    # A level of 8 streams whose client only ever had 4 requests open: back-to-back
    # pairs of 4, each request 1 s. Throughput × latency from the same traces is 4 too,
    # so only the level's own target shows that the load was not held.
    base = make_trace(dns=None, connect=None, tls=None, send=1.0, wait=500.0, stream=499.0)
    second = 10**9
    samples = [
        Sample(
            Step.LOAD,
            dataclasses.replace(base, t0_ns=start + k * second),
            target_prompt_tokens=128,
            concurrency=8,
        )
        for start in (0, 1000, 2000, 3000)
        for k in range(10)
    ]
    window = LevelWindow(1, 8, None, 0, 10 * second)
    (level,) = analyse_load([window], samples).levels
    assert level.little is not None
    assert level.little.in_flight == pytest.approx(4.0, rel=0.05)
    assert level.little.predicted == pytest.approx(4.0, rel=0.1)
    assert level.little.target == 8.0
    assert not level.little.holds
