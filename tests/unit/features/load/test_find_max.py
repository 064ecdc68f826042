"""``latdoc load --find-max``: the most streams that meet an SLO's quantiles, found by
doubling then bisecting, each level judged by its quantile's interval; against a lab
that serves 4 requests at once and queues the rest, the answer is 4."""

from __future__ import annotations

import pytest

from latdoc.cli import main
from latdoc.features.load.send.findmax import Objective, _judged, read_level
from paths import ROOT
from report_samples import make_trace

SAMPLES = ROOT / "src" / "latdoc" / "workload" / "traces" / "samples"


def test_a_level_is_judged_by_its_interval_and_undecided_while_it_holds_the_limit() -> None:
    fast = [make_trace(first_token=float(v)) for v in range(10, 110)]
    ttft = [t.ttft_ms or 0.0 for t in fast]
    p90 = sorted(ttft)[89]
    clear = read_level([Objective("ttft", 0.9, p90 * 2)], fast)
    assert [r.verdict for r in clear] == ["pass"] and _judged(clear) == (True, True)
    over = read_level([Objective("ttft", 0.9, p90 / 2)], fast)
    assert _judged(over) == (False, True)
    close = read_level([Objective("ttft", 0.9, p90)], fast)
    assert close[0].verdict == "undecided" and close[0].interval_ms is not None
    assert close[0].interval_ms[0] <= p90 <= close[0].interval_ms[1]
    assert _judged(close)[1] is False


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--find-max"], "--find-max needs --slo with quantiles"),
        (["--find-max", "--slo", "ttft_p95=2s", "--rate", "2,4"], "one starting rate"),
        (["--find-max", "--slo", "ttft_p95=2s", "--processes", "2"], "leave out --processes"),
        (
            ["--find-max", "--slo", "ttft_p95=2s", "--rate", "2", "--trace", __file__],
            "none with --trace",
        ),
        (
            ["--find-max", "--slo", "ttft_p95=2s", "--trace", str(SAMPLES / "mooncake.jsonl")],
            "probes a conversation's or an agent's sessions",
        ),
        (["--slo", "ttft_p95=2s"], "are for --find-max"),
        (["--find-max", "--slo", "ttft_p100=2s"], "p01 to p99"),
        (["--find-max", "--slo", "latency_p95=2s"], "name a metric and a quantile"),
        (["--slo", "latency=2s"], "expected ttft=DURATION"),
    ],
)
def test_a_search_that_cannot_run_is_one_clear_error(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["load", "http://127.0.0.1:9/v1", "-m", "m", *args]) == 2
    assert said in capsys.readouterr().err


def test_a_search_is_asked_for_by_the_flag_with_its_quantiles_and_first_rate() -> None:
    from latdoc.errors import UsageError
    from latdoc.features.load import FindMaxAsk

    p95 = (Objective("ttft", 0.95, 2000.0),)
    assert FindMaxAsk.asked(False, ()) is None
    assert FindMaxAsk.asked(True, p95, 64.0) == FindMaxAsk(p95, 64.0)
    by_rate = FindMaxAsk.asked(True, p95, rates=(2.5,))
    assert by_rate == FindMaxAsk(p95, None, 2.5) and by_rate.reach == 2.5 * 1024
    with pytest.raises(UsageError, match="are for --find-max"):
        FindMaxAsk.asked(False, p95)
