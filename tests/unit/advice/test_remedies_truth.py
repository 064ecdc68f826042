"""Diagnose tells the truth: a gain only when measured or fitted, with its interval and
source; negligible kinds get no remedies; a healthy run is split into its real parts;
the length rule's words match its numbers; the stall bound follows from the run."""

from __future__ import annotations

import dataclasses
import re
import statistics

import pytest

from latdoc import (
    Diagnosis,
    Finding,
    Kind,
    Remedy,
    RunContext,
    Sample,
    Step,
    build_diagnosis,
    diagnosis_to_dict,
    render_diagnosis,
    render_html,
    render_text,
)
from latdoc.advice import keys
from latdoc.advice._stall import stall_timeout
from latdoc.advice.kinds import input_length
from latdoc.advice.remedies import rank
from latdoc.advice.verify import verify_command
from latdoc.analysis.policy import NOTICEABLE_FRACTION
from latdoc.model import Effects, Priorities, Scenario
from latdoc.report.names import format_ms
from report_samples import ENDPOINT, make_trace

MODEL = "qwen2.5-7b-instruct"
CONTEXT = RunContext("truth", ENDPOINT, MODEL, cpu_count=2, concurrency=10)
WRONG_CLAIM = "≥ 5× means input length is the main bottleneck"


def _numbered(samples: list[Sample]) -> list[Sample]:
    return [
        Sample(s.step, s.trace, s.target_prompt_tokens, s.concurrency, s.cold, i)
        for i, s in enumerate(samples)
    ]


def _steady_load(wait: float = 400.0, n: int = 6) -> list[Sample]:
    return [
        Sample(Step.LOAD, make_trace(dns=None, connect=None, tls=None, wait=wait + 2.0 * (i % 3)))
        for i in range(n)
    ]


def healthy_samples() -> list[Sample]:
    """A prefill that grows by 84 ms from 128 to 2K tokens (44 ms per 1K, inside the
    reference profile's 62) and 7.7× at 8K: healthy at the seed's 2K-token prompt."""
    samples: list[Sample] = []
    for i in range(4):
        samples.append(Sample(Step.NETWORK, make_trace(wait=380.0 + i), cold=True))
        samples.append(Sample(Step.NETWORK, make_trace(dns=None, connect=None, tls=None)))
    for tokens in (128, 512, 2048, 8192):
        for repeat in range(3):
            wait = (200 + 0.00002 * tokens * tokens) * (1 + 0.01 * repeat)
            trace = make_trace(dns=None, connect=None, tls=None, wait=wait, prompt_tokens=tokens)
            samples.append(Sample(Step.LENGTH, trace, target_prompt_tokens=tokens))
    return _numbered(samples + _steady_load())


@pytest.fixture(scope="module")
def healthy() -> Diagnosis:
    """The diagnosis of :func:`healthy_samples`, built once for the tests that read it."""
    return build_diagnosis(healthy_samples(), CONTEXT)


@pytest.fixture(scope="module")
def healthy_page(healthy: Diagnosis) -> str:
    """Its page, rendered once (a page is a string)."""
    return render_html(healthy, healthy_samples())


def test_a_healthy_run_is_split_into_setup_prefill_and_decode(
    healthy: Diagnosis, healthy_page: str
) -> None:
    d = healthy
    assert d.verdict.primary is Kind.HEALTHY, d.findings
    parts = d.typical_request
    assert parts is not None
    # make_trace: DNS 12 + TCP 24 + TLS 41; send 2.5; wait ~381 + first token 35; stream
    # 1200; the typical request is of the seed's 2K-token prompt: its prefill grows by the
    # fitted curve's growth from 128 tokens to it.
    assert parts.setup_ms == pytest.approx(77.0)
    assert parts.send_ms == pytest.approx(2.5)
    assert d.workload is not None and d.workload.prompt_tokens == 2048
    check = d.length_check
    assert check is not None and d.workload.growth_ms == pytest.approx(check.growth_ms)
    # It grows, but within what a healthy prefill adds plus what a user would notice.
    assert check.growth_ms > 0 and d.noticeable is not None
    assert check.excess_ms < d.noticeable.typical_ms * 0.1
    assert parts.prefill_ms == pytest.approx(381.5 + 35.0 + d.workload.growth_ms, abs=1.0)
    assert parts.decode_ms == pytest.approx(1200.0)
    raw = render_text(render_diagnosis(d), 120)
    # A bar is a name, then its time (a wrapped sentence may begin with the word too).
    assert not re.search(r"^\s+healthy\s+[\d.]+ m?s\b", raw, re.M), "one bar named healthy"
    text = " ".join(raw.split())
    prefill = format_ms(parts.prefill_ms)
    for name in ("network setup 77.0 ms", f"prefill {prefill}", "decode 1.20 s"):
        assert name in text
    for name in ("Network setup", "Prefill", "Decode"):
        assert 'class="share p-' in healthy_page and f"{name} <strong>" in healthy_page
    doc = diagnosis_to_dict(d)
    assert doc["typical_request"]["decode_ms"] == pytest.approx(1200.0)


def test_the_length_caption_says_what_the_rule_compared_and_why_it_did_not_fire(
    healthy: Diagnosis, healthy_page: str
) -> None:
    d = healthy
    check = d.length_check
    assert check is not None and not check.fired
    assert check.long_tokens == 2048 and 1 < check.ratio < 5
    assert check.ratio == pytest.approx(check.long_ms / check.short_ms)
    assert d.length is not None and d.length.ratio_long_short > 5
    terminal = " ".join(render_text(render_diagnosis(d), 120).split())
    for text in (healthy_page, terminal):
        assert WRONG_CLAIM not in text
        assert "fitted TTFT at 2,048 tokens" in text
        assert "did not fire" in text
        assert "not the rule" in text
    assert f"{check.ratio:.1f}×" in terminal
    assert diagnosis_to_dict(d)["steps"]["length"]["rule"]["fired"] is False


def test_the_length_plot_is_on_a_log_axis_with_the_fits_band(healthy_page: str) -> None:
    assert 'id="length-band"' in healthy_page
    assert "on a log axis" in healthy_page


def slow_decode_with_cheap_connections() -> list[Sample]:
    """The README's demo: every request opens a connection (1.4 ms) in an 11 s request."""
    samples: list[Sample] = []
    for i in range(6):
        trace = make_trace(dns=0.2, connect=0.5, tls=0.7, wait=900.0 + i, stream=10_000.0)
        samples.append(Sample(Step.NETWORK, trace, cold=i < 3))
    return _numbered(samples + _steady_load())


def test_a_setup_of_a_millisecond_in_an_eleven_second_request_is_negligible() -> None:
    d = build_diagnosis(slow_decode_with_cheap_connections(), CONTEXT)
    assert any(f.kind is Kind.NETWORK_SETUP for f in d.findings)
    assert d.verdict.primary is Kind.DECODE
    assert Kind.NETWORK_SETUP not in d.verdict.contributing
    assert d.verdict.negligible == (Kind.NETWORK_SETUP,)
    assert not any(r.key == "keep_alive" or r.addresses is Kind.NETWORK_SETUP for r in d.remedies)
    assert d.noticeable is not None and d.noticeable.min_share_ms > 1.4
    text = render_text(render_diagnosis(d), 120)
    assert "Negligible here: network_setup" in text
    assert "Reuse connections" not in text
    page = render_html(d, slow_decode_with_cheap_connections())
    assert "<h2>Negligible here</h2>" in page and "Every request opens a new connection" in page
    assert "Reuse connections" not in page
    assert '<code class="verify">latdoc verify' in page
    doc = diagnosis_to_dict(d)
    assert doc["verdict"]["negligible"] == ["network_setup"]
    assert doc["negligible"]["fraction"] == NOTICEABLE_FRACTION


def test_when_everything_is_negligible_the_verdict_is_healthy() -> None:
    samples = [
        Sample(Step.NETWORK, make_trace(dns=0.2, connect=0.5, tls=0.7, wait=900.0), cold=i < 3)
        for i in range(6)
    ]
    d = build_diagnosis(_numbered(samples + _steady_load()), CONTEXT)
    assert d.verdict.primary is Kind.HEALTHY
    assert d.verdict.negligible == (Kind.NETWORK_SETUP,)
    assert d.remedies == ()


def slow_tls_with_reuse() -> list[Sample]:
    samples: list[Sample] = []
    for i in range(5):
        samples.append(Sample(Step.NETWORK, make_trace(tls=300.0 + 7 * i, wait=380.0), cold=True))
        trace = make_trace(dns=None, connect=None, tls=None, wait=380.0 + 3 * i)
        samples.append(Sample(Step.NETWORK, trace))
    return _numbered(samples + _steady_load())


def test_keep_alive_gain_is_cold_minus_warm_with_an_interval_that_holds_it() -> None:
    samples = slow_tls_with_reuse()
    d = build_diagnosis(samples, CONTEXT)
    assert d.verdict.primary is Kind.NETWORK_SETUP, d.findings
    (keep_alive,) = [r for r in d.remedies if r.key == "keep_alive"]
    cold = [s.trace.ttfb_ms for s in samples if s.step == Step.NETWORK and s.cold]
    warm = [s.trace.ttfb_ms for s in samples if s.step == Step.NETWORK and not s.cold]
    difference = statistics.median(cold) - statistics.median(warm)  # type: ignore[type-var]
    assert keep_alive.gain_source == "measured"
    assert keep_alive.predicted_gain_ms == pytest.approx(difference)
    assert keep_alive.gain_interval_ms is not None
    low, high = keep_alive.gain_interval_ms
    assert low <= difference <= high
    assert keep_alive.verify_command == (
        f"latdoc verify {ENDPOINT} --model {MODEL} --remedy keepalive"
    )
    assert d.remedies[0] is keep_alive  # the measured gain ranks first
    text = " ".join(render_text(render_diagnosis(d), 120).split())
    assert "measured in this run" in text and "95% CI" in text


def _all_remedies() -> list[tuple[Diagnosis, Remedy]]:
    runs = [healthy_samples(), slow_decode_with_cheap_connections(), slow_tls_with_reuse()]
    diagnoses = [build_diagnosis(s, CONTEXT) for s in runs]
    return [(d, r) for d in diagnoses for r in d.remedies]


def test_no_remedy_has_a_gain_without_its_source_and_interval() -> None:
    remedies = _all_remedies()
    assert remedies
    for _, r in remedies:
        if r.predicted_gain_ms is None:
            assert r.gain_source is None and r.gain_interval_ms is None
        else:
            assert r.gain_source in ("measured", "fitted") and r.gain_interval_ms is not None
    with pytest.raises(ValueError, match="needs its source"):
        Remedy("max_tokens", "Cap the output", Kind.DECODE, "max_tokens=200", 500.0)


def test_unmeasured_remedies_name_the_verify_command_instead_of_a_number() -> None:
    d = build_diagnosis(slow_decode_with_cheap_connections(), CONTEXT)
    by_key = {r.key: r for r in d.remedies}
    assert by_key["max_tokens"].predicted_gain_ms is None
    assert by_key["max_tokens"].verify_command == (
        f"latdoc verify {ENDPOINT} --model {MODEL} --remedy max-tokens"
    )
    assert by_key["smaller_model"].verify_command is not None
    assert by_key["smaller_model"].verify_command.endswith("--remedy model --alt-model NAME")
    assert list(by_key)[-1] == "smaller_model"  # after max_tokens, which keeps the model
    text = " ".join(render_text(render_diagnosis(d), 120).split())
    assert "not measured here — measure it: latdoc verify" in text
    assert "saves" not in text


def test_verify_commands_carry_this_runs_numbers() -> None:
    ctx = RunContext("r", "https://api.example.com/v1", "m 1", concurrency=10)
    assert verify_command(ctx, "pool", pool_size=14, concurrency=10) == (
        "latdoc verify https://api.example.com/v1 --model 'm 1' --remedy pool "
        "--pool-size 14 --concurrency 10"
    )
    assert verify_command(ctx, "trim", **{"from": 8192, "to": 2000}).endswith(
        "--remedy trim --from 8192 --to 2000"
    )
    with pytest.raises(ValueError, match="no remedy 'dns'"):
        verify_command(ctx, "dns")


@pytest.mark.parametrize(
    ("longest", "p99"), [(2516.0, 40.0), (405.0, 4.6), (130.0, 20.0), (1000.0, 300.0)]
)
def test_the_stall_bound_lies_between_the_normal_gaps_and_the_longest_stall(
    longest: float, p99: float
) -> None:
    evidence = {"stalls": 3.0, "longest_ms": longest, "shortest_ms": longest * 0.9,
                "normal_gap_p99_ms": p99, "slowest_ttft_ms": 800.0}  # fmt: skip
    bound = stall_timeout(evidence)
    assert "read=10" not in bound.change and "10 s" not in bound.change
    if bound.gap_ms is None:
        assert 3 * p99 >= longest
        assert "No timeout tells these stalls" in bound.change
        return
    assert 3 * p99 <= bound.gap_ms < longest
    assert f"{bound.gap_ms / 1000:g}" in bound.change
    if bound.catches_all:
        assert bound.gap_ms < evidence["shortest_ms"] and "catches all 3 stalls" in bound.change
    # The first token came after 800 ms: httpx's read timeout would cut it, so not proposed.
    if bound.gap_ms < 800:
        assert "httpx.Timeout" not in bound.change and "asyncio.timeout" in bound.change


def test_a_small_measured_saving_does_not_outrank_the_fix_for_the_verdicts_seconds() -> None:
    def declared(r: Remedy) -> Remedy:
        effects = input_length.BUILDER.effects.get(r.key, Effects())
        return dataclasses.replace(r, effects=effects)

    keep_alive = Remedy(
        keys.KEEP_ALIVE,
        "Reuse connections",
        Kind.NETWORK_SETUP,
        "keep one client",
        15.0,
        gain_interval_ms=(10.0, 20.0),
        gain_source="measured",
    )
    spread = Remedy(keys.SPREAD_REQUESTS, "Spread requests", Kind.QUEUEING, "a semaphore", None)
    trim = Remedy(
        keys.TRIM_WINDOW,
        "Trim",
        Kind.INPUT_LENGTH,
        "keep the last turns",
        800.0,
        gain_interval_ms=(700.0, 900.0),
        gain_source="fitted",
    )
    cache = Remedy(keys.PROMPT_CACHE, "Cache the prefix", Kind.INPUT_LENGTH, "fixed first", None)
    shares = {Kind.QUEUEING: 3000.0, Kind.NETWORK_SETUP: 15.0, Kind.INPUT_LENGTH: 1500.0}
    chat = Priorities.preset(Scenario.CHAT)
    ranked = sorted(
        (declared(r) for r in (keep_alive, cache, spread, trim)),
        key=lambda r: rank(r, 0, chat, shares),
    )
    assert [r.key for r in ranked] == [
        keys.SPREAD_REQUESTS,
        keys.TRIM_WINDOW,
        keys.PROMPT_CACHE,
        keys.KEEP_ALIVE,
    ]


def test_stalls_in_half_the_streams_are_not_dismissed_by_the_spread_they_make() -> None:
    from latdoc.analysis.noticeable import is_noticeable, noticeable_bar
    from latdoc.records import Chunk

    # Four identical warm requests of 0.2 s, two of which stall 2 s mid-stream: their
    # end-to-end spread (scaled MAD 1.48 s) is the stalls themselves.
    def warm(stall_ms: float) -> Sample:
        t = make_trace(dns=None, connect=None, tls=None, wait=100.0, first_token=5.0, stream=90.0)
        shift = round(stall_ms * 1e6)
        chunks = tuple(
            c if i < 5 else Chunk(t_ns=c.t_ns + shift, chars=c.chars, tokens=c.tokens)
            for i, c in enumerate(t.chunks)
        )
        trace = dataclasses.replace(t, chunks=chunks, done_ns=(t.done_ns or 0) + shift)
        return Sample(Step.NETWORK, trace, 16, 1, cold=False)

    samples = [warm(0.0), warm(2000.0), warm(0.0), warm(2000.0)]
    bar = noticeable_bar(samples)
    assert bar is not None
    finding = Finding(
        Kind.STALLS, "stalls", "rule", {"requests": 2.0}, share_ms=1000.0, confidence=0.8
    )
    assert is_noticeable(finding, bar), bar
