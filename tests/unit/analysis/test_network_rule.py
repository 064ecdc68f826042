"""Step 1's sentences come from what the network rule decided, in the analysis, with its
thresholds named: every output prints the same statement, and it never says the
network is the bottleneck when the verdict is another kind."""

from __future__ import annotations

import html
import json

import pytest

from latdoc import (
    Diagnosis,
    Kind,
    RunContext,
    Sample,
    Step,
    build_diagnosis,
    diagnosis_to_dict,
    render_diagnosis,
    render_html,
    render_text,
)
from latdoc.analysis.policy import SERVICE_RATIO, SLOW_SETUP_MS
from latdoc.store import diagnosis_from_record, diagnosis_to_record
from report_samples import ENDPOINT, make_trace

CONTEXT = RunContext("net", ENDPOINT, "m", cpu_count=2)


def _numbered(samples: list[Sample]) -> list[Sample]:
    return [
        Sample(s.step, s.trace, s.target_prompt_tokens, s.concurrency, s.cold, i)
        for i, s in enumerate(samples)
    ]


def _network(*, dns: float, connect: float, tls: float, wait: float) -> list[Sample]:
    """Four requests on new connections, four on reused ones, one prompt length."""
    samples = []
    for i in range(4):
        cold = make_trace(dns=dns, connect=connect, tls=tls, wait=wait + i)
        samples.append(Sample(Step.NETWORK, cold, 128, cold=True))
        warm = make_trace(dns=None, connect=None, tls=None, wait=wait + i)
        samples.append(Sample(Step.NETWORK, warm, 128))
    return samples


def _long_prompts_slow() -> list[Sample]:
    """Prefill that grows ~8× from 128 to 2048 tokens: input length is the verdict."""
    samples = []
    for tokens in (128, 512, 2048):
        for repeat in range(2):
            trace = make_trace(
                dns=None, connect=None, tls=None, wait=300 + 2 * tokens + repeat,
                prompt_tokens=tokens,
            )  # fmt: skip
            samples.append(Sample(Step.LENGTH, trace, tokens))
    return samples


def _slow_setup_but_input_length() -> Diagnosis:
    """A 300 ms setup (no single phase over its own threshold) and a first byte under
    3× it, while input length adds far more: the verdict is not the network."""
    samples = _network(dns=50.0, connect=90.0, tls=160.0, wait=300.0) + _long_prompts_slow()
    return build_diagnosis(_numbered(samples), CONTEXT)


def _slow_dns() -> Diagnosis:
    """A 600 ms lookup (400 ms past the reference profile's slowest healthy one) and a
    quick server: the network is the verdict."""
    return build_diagnosis(
        _numbered(_network(dns=600.0, connect=20.0, tls=40.0, wait=30.0)), CONTEXT
    )


def _quick_network() -> Diagnosis:
    """A 10 ms setup and a 900 ms wait: the first byte is the model service's."""
    return build_diagnosis(_numbered(_network(dns=1.0, connect=3.0, tls=6.0, wait=900.0)), CONTEXT)


def _outputs(d: Diagnosis) -> dict[str, str]:
    return {
        "terminal": " ".join(render_text(render_diagnosis(d), 100).split()),
        "json": json.dumps(diagnosis_to_dict(d), ensure_ascii=False),
        "html": " ".join(html.unescape(render_html(d, [])).split()),
    }


def test_no_output_says_the_network_is_the_bottleneck_when_the_verdict_is_not() -> None:
    d = _slow_setup_but_input_length()
    assert d.verdict.primary is Kind.INPUT_LENGTH, d.findings
    assert (d.network["setup_ms"] or 0) > SLOW_SETUP_MS
    for name, text in _outputs(d).items():
        assert "network is the bottleneck" not in text, name
        assert "network is the main bottleneck" not in text, name
    assert d.network_check is not None and d.network_check.bottleneck is None
    assert "the verdict, Input length, adds more" in d.network_check.statement


@pytest.mark.parametrize(
    ("run", "bottleneck", "words"),
    [
        (_slow_dns, "network", "the network is the main bottleneck"),
        (_quick_network, "model service", "in the model service, not the network"),
        (_slow_setup_but_input_length, None, "so the network is not the main bottleneck"),
    ],
)
def test_the_three_outputs_carry_the_rules_own_statement(
    run: object, bottleneck: str | None, words: str
) -> None:
    d = run()  # type: ignore[operator]
    check = d.network_check
    assert check is not None and check.bottleneck == bottleneck, (d.verdict, check)
    assert words in check.statement
    assert (
        f"> {SLOW_SETUP_MS:.0f} ms" in check.statement or f"{SERVICE_RATIO:.0f}×" in check.statement
    )
    outputs = _outputs(d)
    assert check.statement in outputs["terminal"]
    assert check.statement in outputs["html"]
    assert diagnosis_to_dict(d)["steps"]["network_rule"]["statement"] == check.statement
    assert diagnosis_from_record(json.loads(outputs["json"])).network_check == check


def test_a_server_that_closes_every_connection_measures_no_saving_and_says_so() -> None:
    samples = []
    for i in range(6):
        trace = make_trace(dns=1.0, connect=3.0, tls=6.0, wait=300.0 + i)
        samples.append(Sample(Step.NETWORK, trace, 128, cold=i < 3))
    d = build_diagnosis(_numbered(samples), CONTEXT)
    assert d.network["keepalive_saving_ms"] is None
    why = "keep-alive saving not measured: the server closed every connection"
    outputs = _outputs(d)
    for name, text in outputs.items():
        assert "keep-alive saves" not in text, name
    assert why in outputs["terminal"] and why.capitalize() in outputs["html"]
    rule = diagnosis_to_dict(d)["steps"]["network_rule"]
    assert rule["keepalive_saving_why"].startswith("the server closed every connection")
    assert diagnosis_from_record(diagnosis_to_record(d)).network_check == d.network_check
