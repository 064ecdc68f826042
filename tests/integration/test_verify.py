"""``latdoc verify`` against the lab, where each remedy's effect has a known size.

With the lab's effect on, verify must measure it within 15 % of the truth the
lab's own latency model gives; with the effect off, it must say
``no_difference``; where the endpoint cannot show the remedy at all, it must say
``not_applicable`` with the reason. The keep-alive effect through a real
round trip is checked in ``test_lab_net.py``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import closed_port
from latdoc import (
    ConnectionOptions,
    Endpoint,
    Store,
    VerifyPlan,
    VerifyResult,
    verify_remedy,
)
from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.features.verify import experiments
from latdoc.features.verify.experiments import Experiment
from latdoc.features.verify.experiments.endpoint import EndpointOptions
from latdoc.features.verify.experiments.http2 import Http2Options
from latdoc.features.verify.experiments.max_tokens import MaxTokensOptions, tight_max_tokens
from latdoc.features.verify.experiments.model import ModelOptions
from latdoc.features.verify.experiments.pool import PoolOptions
from latdoc.features.verify.experiments.prompt_cache import PromptCacheOptions
from latdoc.features.verify.experiments.reasoning_effort import ReasoningEffortOptions
from latdoc.features.verify.experiments.trim import TrimOptions
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from machine_noise import MachineNoise
from unit.features.verify.test_verify import KEY_A, KEY_B, QUICK, serving

TOLERANCE = 0.15


"""How close verify's measured gain must come to the lab's planned one."""


def verify(
    url: str,
    remedy: Experiment[Any],
    tmp_path: Path,
    *,
    model: str = "lab-sim",
    cacert: str | None = None,
    max_tokens: int = 8,
    max_requests: int = 80,
    options: object = None,
) -> VerifyResult:
    plan = VerifyPlan(
        endpoint=Endpoint(url, model),
        remedy=remedy,
        connection=ConnectionOptions(cacert=cacert),
        max_tokens=max_tokens,
        max_requests=max_requests,
        max_seconds=60.0,
        seed=3,
        options=options,
    )
    with Store(tmp_path / "v.db") as store:
        return verify_remedy(plan, store=store)


def median_of(result: VerifyResult, arm: int, read: Any, tmp_path: Path) -> float:
    assert result.run_ids is not None
    with Store(tmp_path / "v.db") as store:
        _, samples, _ = store.load_run(result.run_ids[arm])
    return statistics.median(read(s.trace) for s in samples if s.trace.ok)


def assert_measures(result: VerifyResult, truth_ms: float) -> None:
    assert result.verdict == "better", result
    # Within TOLERANCE, widened by the noise measured now, never to half the truth.
    assert result.gain_ms is not None
    MachineNoise().assert_effect(result.gain_ms, truth_ms, TOLERANCE)
    low, high = result.gain_interval_ms or (None, None)
    assert low is not None and high is not None and low <= result.gain_ms <= high


def test_trim_measures_the_prefill_it_saves(tmp_path: Path) -> None:
    latency = replace(QUICK, prefill_ms_per_token=0.1)
    with serving(LabConfig(latency=latency)) as lab:
        result = verify(
            lab.base_url, experiments.experiment("trim"), tmp_path, options=TrimOptions(2000, 500)
        )
    tokens_a = median_of(result, 0, lambda t: t.prompt_tokens, tmp_path)
    tokens_b = median_of(result, 1, lambda t: t.prompt_tokens, tmp_path)
    assert tokens_a == pytest.approx(2000, rel=0.05) and tokens_b == pytest.approx(500, rel=0.1)
    assert_measures(result, latency.prefill_ms(int(tokens_a)) - latency.prefill_ms(int(tokens_b)))


def test_trim_without_prefill_growth_is_no_difference(tmp_path: Path) -> None:
    with serving(LabConfig(latency=QUICK)) as lab:
        result = verify(
            lab.base_url, experiments.experiment("trim"), tmp_path, options=TrimOptions(2000, 500)
        )
    if result.verdict != "no_difference":
        # No prefill to save, but the 1,500 tokens trimmed are still sent, parsed and
        # counted, by the client and the lab: beside a CPU hog that real work (1.2 ms of
        # 23 was seen) can be significant. Never more than a busy machine's few ms.
        assert result.headline is not None
        shift = abs(result.headline.difference_ms)
        assert shift < MachineNoise().bound_ms(2.0, 10.0), result.headline


@pytest.mark.parametrize("reserve", [50.0, 0.0])
def test_max_tokens_measures_the_reservation_cost(tmp_path: Path, reserve: float) -> None:
    latency = replace(QUICK, reserve_ms_per_1k_max_tokens=reserve)
    config = LabConfig(latency=latency, answer_tokens=12)
    with serving(config) as lab:
        result = verify(lab.base_url, experiments.experiment("max-tokens"), tmp_path)
    if reserve == 0:
        # No reservation, nothing to save. A busy machine can shift one arm by its noise
        # (2 ms of 21 was seen beside a CPU hog) and make even that significant, never by
        # the 200 ms the reservation costs when it is on.
        if result.verdict != "no_difference":
            assert result.headline is not None
            shift = abs(result.headline.difference_ms)
            assert shift < MachineNoise().bound_ms(2.0, 50.0), result.headline
        return
    truth = latency.reserve_ms(4096) - latency.reserve_ms(tight_max_tokens(12))
    assert_measures(result, truth)
    assert (
        result.labels[1] == f"max_tokens={tight_max_tokens(12)}, just above the answer's 12 tokens"
    )


def test_max_tokens_needs_an_answer_that_ends_by_itself(tmp_path: Path) -> None:
    with serving(LabConfig(latency=QUICK)) as lab:
        result = verify(
            lab.base_url,
            experiments.experiment("max-tokens"),
            tmp_path,
            options=MaxTokensOptions(64),
        )
    assert result.verdict == "not_applicable"
    assert result.reason is not None and "did not end by itself" in result.reason
    assert result.run_ids is None and result.gain_ms is None


@pytest.mark.parametrize("extra_ms", [100.0, 0.0])
def test_model_measures_the_other_models_prefill(tmp_path: Path, extra_ms: float) -> None:
    small = replace(QUICK, prefill_base_ms=QUICK.prefill_base_ms + extra_ms)
    config = LabConfig(latency=small, alt_models={"lab-small": QUICK})
    with serving(config) as lab:
        result = verify(
            lab.base_url,
            experiments.experiment("model"),
            tmp_path,
            options=ModelOptions("lab-small"),
        )
    if extra_ms == 0:
        assert result.verdict == "no_difference", result.headline
    else:
        assert_measures(result, extra_ms)


def test_a_model_the_endpoint_does_not_serve_is_not_applicable(tmp_path: Path) -> None:
    with serving(LabConfig(latency=QUICK)) as lab:
        result = verify(
            lab.base_url,
            experiments.experiment("model"),
            tmp_path,
            options=ModelOptions("no-such-model"),
        )
    assert result.verdict == "not_applicable"
    assert result.reason is not None and "does not answer" in result.reason


@pytest.mark.parametrize("faster", [True, False])
def test_endpoint_measures_the_other_endpoint(tmp_path: Path, faster: bool) -> None:
    slow = replace(QUICK, prefill_base_ms=110.0)
    other = QUICK if faster else slow
    with serving(LabConfig(latency=slow)) as a, serving(LabConfig(latency=other)) as b:
        result = verify(
            a.base_url,
            experiments.experiment("endpoint"),
            tmp_path,
            options=EndpointOptions(b.base_url),
        )
    if faster:
        assert_measures(result, slow.prefill_base_ms - QUICK.prefill_base_ms)
    else:
        assert result.verdict == "no_difference", result.headline


def test_prompt_cache_measures_the_prefill_of_the_cached_prefix(tmp_path: Path) -> None:
    latency = replace(QUICK, prefill_ms_per_token=0.2)
    config = LabConfig(latency=latency, prefix_cache=True)
    with serving(config) as lab:
        result = verify(
            lab.base_url,
            experiments.experiment("prompt-cache"),
            tmp_path,
            options=PromptCacheOptions(1024),
        )
    cached = result.cached_tokens_b
    assert cached is not None and cached >= 900
    assert_measures(result, latency.prefill_ms_per_token * cached)


def test_prompt_cache_without_a_cache_is_not_applicable(tmp_path: Path) -> None:
    # Whether the endpoint reports cached tokens decides it, not what the prefix costs: no
    # prefill per token, so the trials both arms send before it is read take 20 ms each
    # where 0.2 ms a token made them 250.
    with serving(LabConfig(latency=QUICK)) as lab:
        result = verify(
            lab.base_url,
            experiments.experiment("prompt-cache"),
            tmp_path,
            options=PromptCacheOptions(1024),
        )
    assert result.verdict == "not_applicable"
    assert result.reason is not None and "no cached prompt tokens" in result.reason


SERVICE = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=10.0)


@pytest.fixture(scope="module")
def service_lab() -> Iterator[LabProcess]:
    """SERVICE in a lab process, one for both pool tests: with no slots, cache or load it
    keeps nothing from one experiment to the next, so each meets it as a fresh one."""
    with serving(LabConfig(latency=SERVICE), process=True) as lab:
        yield lab


@pytest.fixture(scope="module")
def service_lab_h2() -> Iterator[LabProcess]:
    """:func:`service_lab` over TLS with HTTP/2 offered, one for every HTTP/2 test."""
    with serving(LabConfig(latency=SERVICE), process=True, tls=True, http2=True) as lab:
        yield lab


def queue_truth(result: VerifyResult, tmp_path: Path, pool: int, concurrency: int) -> float:
    """The mean extra TTFT when ``concurrency`` requests share ``pool`` connections:
    they run in waves of ``pool``, each a whole request of A later than the one before
    (a request's time on its connection: end to end, less its wait for the pool)."""
    service = median_of(result, 0, lambda t: t.total_ms - t.queue_ms, tmp_path)
    planned = SERVICE.total_ms(64, 8)
    MachineNoise().assert_near(service, planned, 0.25 * planned, 0.5 * planned)
    return statistics.mean(service * (k // pool) for k in range(concurrency))


@pytest.mark.parametrize("pool", [2, None])
def test_pool_measures_the_client_queue(
    tmp_path: Path, pool: int | None, service_lab: LabProcess
) -> None:
    result = verify(
        service_lab.base_url,
        experiments.experiment("pool"),
        tmp_path,
        options=PoolOptions(concurrency=8, pool_size=pool or 16),
        max_requests=160,
    )
    if pool is None:
        # Sixteen connections for eight requests: neither arm's pool held one back. What
        # is left is the two arms' own noise, which a test at α = 0.05 calls a difference
        # one run in twenty (1.6 ms of a 23 ms TTFT on a busy machine): it stays far below
        # the queue two connections would make.
        for arm in (0, 1):
            assert median_of(result, arm, lambda t: t.queue_ms, tmp_path) < 5.0
        assert result.gain_ms is not None, result.headline
        assert abs(result.gain_ms) < queue_truth(result, tmp_path, 2, 8) / 4, result.headline
    else:
        assert_measures(result, queue_truth(result, tmp_path, pool, 8))


@pytest.mark.parametrize("pool", [2, 8])
def test_http2_multiplexes_what_a_small_http1_pool_queues(
    tmp_path: Path, pool: int, service_lab_h2: LabProcess
) -> None:
    result = verify(
        service_lab_h2.base_url,
        experiments.experiment("http2"),
        tmp_path,
        cacert=service_lab_h2.ca_file,
        options=Http2Options(concurrency=8, pool_size=pool),
        max_requests=160,
    )
    if pool == 8:
        # No queue on either side: A's pool never held a request back, and what is left
        # is HTTP/2 against HTTP/1.1 on one server (a few ms, more on a loaded machine),
        # far below the queue's 135 ms.
        assert median_of(result, 0, lambda t: t.queue_ms, tmp_path) < 5.0
        assert result.gain_ms is not None and abs(result.gain_ms) < 45.0, result.headline
    else:
        assert_measures(result, queue_truth(result, tmp_path, pool, 8))


def test_http2_is_not_applicable_where_it_is_not_offered(tmp_path: Path) -> None:
    with serving(LabConfig(latency=QUICK), tls=True) as lab:
        result = verify(
            lab.base_url,
            experiments.experiment("http2"),
            tmp_path,
            cacert=lab.ca_file,
            options=Http2Options(concurrency=4),
        )
    assert result.verdict == "not_applicable"
    assert result.reason is not None and "does not serve HTTP/2" in result.reason


def test_keepalive_is_no_difference_when_the_server_closes_connections(tmp_path: Path) -> None:
    with serving(LabConfig(latency=QUICK, keep_alive=False)) as lab:
        result = verify(lab.base_url, experiments.experiment("keepalive"), tmp_path)
    # Nothing to gain. A busy machine can shift one arm by its noise (2.8 ms of 24 was
    # seen beside a CPU hog) and make even that significant, never by more.
    if result.verdict != "no_difference":
        assert result.headline is not None
        shift = abs(result.headline.difference_ms)
        assert shift < MachineNoise().bound_ms(2.0, 0.5 * result.headline.a_ms), result.headline


def test_the_command_prints_its_plan_and_a_json_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(LabConfig(latency=replace(QUICK, prefill_ms_per_token=0.1))) as lab:
        code = main(["verify", lab.base_url, "-m", "lab-sim", "--remedy", "trim", "--from",
                     "1500", "--to", "300", "--json", "--db", str(tmp_path / "c.db"),
                     "--max-requests", "40", "--seed", "1"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == EXIT_OK
    assert err.startswith("Plan: verify trim on lab-sim at ")
    assert "A: a prompt of 1500 tokens" in err and "B: the same task at 300 tokens" in err
    document = json.loads(out)
    assert document["schema"] == "latdoc.verify/2"
    assert document["verdict"] == "better"
    low, high = document["gain_interval_ms"]
    assert low <= document["gain_ms"] <= high
    assert document["comparison"]["schema"] == "latdoc.comparison/1"
    a, b = document["run_ids"]
    assert main(["compare", a, b, "--db", str(tmp_path / "c.db")]) == EXIT_OK


def test_an_unknown_remedy_and_a_remedy_that_cannot_apply_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "http://127.0.0.1:9/v1", "-m", "m", "--remedy", "faster"]) == EXIT_USAGE
    assert "invalid choice: 'faster'" in capsys.readouterr().err
    with serving(LabConfig(latency=QUICK)) as lab:
        code = main(["verify", lab.base_url, "-m", "lab-sim", "--remedy", "prompt-cache",
                     "--db", str(tmp_path / "c.db"), "--max-requests", "20"])  # fmt: skip
    assert code == EXIT_USAGE
    assert "Verdict: not applicable — the endpoint reported no cached prompt tokens" in (
        capsys.readouterr().out.replace("\n", " ")
    )


def test_reasoning_effort_measures_the_thinking_it_saves(tmp_path: Path) -> None:
    thinker = replace(QUICK, decode_ms_per_token=3.0, reasoning_tokens=40)
    with serving(LabConfig(latency=thinker)) as lab:
        result = verify(
            lab.base_url, experiments.experiment("reasoning-effort"), tmp_path, max_requests=40,
            options=ReasoningEffortOptions("low"),
        )  # fmt: skip
        thought = median_of(result, 1, lambda t: t.reasoning_tokens, tmp_path)
    assert thought == 10
    assert_measures(result, (40 - 10) * 3.0)
    assert result.comparison is not None
    rows = [m for g in result.comparison.groups for m in g.metrics if m.key == "reasoning"]
    assert rows and all(m.b_ms < m.a_ms for m in rows), rows


def test_an_endpoint_that_cannot_answer_is_not_applicable_before_the_experiment(
    tmp_path: Path,
) -> None:
    closed = f"http://127.0.0.1:{closed_port()}/v1"
    result = verify(closed, experiments.experiment("keepalive"), tmp_path)
    assert result.verdict == "not_applicable" and result.run_ids is None
    assert result.reason is not None and result.reason.startswith("the endpoint cannot answer")
    assert "nothing accepts connections there" in result.reason


def _endpoint_argv(a: str, b: str, tmp_path: Path, *more: str) -> list[str]:
    return ["verify", a, "-m", "lab-sim", "--remedy", "endpoint", "--alt", b,
            "--api-key-env", "KEY_A", "--db", str(tmp_path / "k.db"), "--max-requests", "24",
            "--json", *more]  # fmt: skip


def test_the_key_is_not_sent_to_another_host_unless_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from latdoc.lab.sim import requests_received

    monkeypatch.setenv("KEY_A", KEY_A)
    with (
        serving(LabConfig(latency=QUICK, api_key=KEY_A)) as a,
        serving(LabConfig(latency=QUICK, api_key=KEY_A)) as b,
    ):
        code = main(_endpoint_argv(a.base_url, b.base_url, tmp_path))
        sent = requests_received(a.app) + requests_received(b.app)
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE and sent == 0 and out == ""
    assert err.startswith("Error: --alt ") and len(err.strip().splitlines()) == 1
    assert "--alt-api-key-env VAR" in err and "--same-key" in err
    assert KEY_A not in err


@pytest.mark.parametrize("how", ["--alt-api-key-env", "--same-key"])
def test_the_other_hosts_key_goes_there_alone(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEY_A", KEY_A)
    monkeypatch.setenv("KEY_B", KEY_B)
    key_b = KEY_B if how == "--alt-api-key-env" else KEY_A
    more = ["--alt-api-key-env", "KEY_B"] if how == "--alt-api-key-env" else ["--same-key"]
    with (
        serving(LabConfig(latency=QUICK, api_key=KEY_A)) as a,
        serving(LabConfig(latency=QUICK, api_key=key_b)) as b,
    ):
        code = main(_endpoint_argv(a.base_url, b.base_url, tmp_path, *more))
    out, err = capsys.readouterr()
    document = json.loads(out)
    # Each lab answers only its own key: a key sent to the wrong one is a 401 there,
    # and the other endpoint would not answer.
    assert code == EXIT_OK, (document["reason"], err)
    assert document["verdict"] != "not_applicable"
    assert KEY_A not in out + err and KEY_B not in out + err
    data = b"".join(p.read_bytes() for p in tmp_path.glob("k.db*"))
    assert data and KEY_A.encode() not in data and KEY_B.encode() not in data


def test_the_verb_runs_the_experiments_with_runners_of_their_own(tmp_path: Path) -> None:
    """A library user runs every remedy with one verb: retry and conversation by their
    own runners, whose outcomes are shown as the command shows them."""
    from latdoc.features.verify import ConversationVerdict, RetryVerdict
    from latdoc.features.verify.conversation.send import ConversationOptions
    from latdoc.features.verify.retry.send import RetryOptions

    with serving(LabConfig(latency=QUICK)) as lab, Store(tmp_path / "v.db") as store:
        endpoint = Endpoint(lab.base_url, "lab-sim")
        retry = verify_remedy(
            VerifyPlan(endpoint, experiments.experiment("retry"), max_tokens=4, seed=3,
                       options=RetryOptions(trials=3)),
            store=store,
        )  # fmt: skip
        chat = verify_remedy(
            VerifyPlan(endpoint, experiments.experiment("conversation"), max_tokens=4, seed=3,
                       options=ConversationOptions(turns=2, tokens_per_turn=16,
                                                   strategies="reset:1")),
            store=store,
        )  # fmt: skip
    assert isinstance(retry, RetryVerdict) and isinstance(chat, ConversationVerdict)
    assert retry.document()["schema"] == "latdoc.retry/1"
    assert chat.document()["schema"] == "latdoc.conversation/1"
    for outcome in (retry, chat):
        assert not outcome.not_applicable and not outcome.gates_failed
        assert outcome.kept() is not None and outcome.shown()


def test_the_verb_checks_the_plans_gates_against_arm_a(tmp_path: Path) -> None:
    from latdoc.analysis.gates import parse_gates

    with serving(LabConfig(latency=QUICK)) as lab, Store(tmp_path / "v.db") as store:
        result = verify_remedy(
            VerifyPlan(Endpoint(lab.base_url, "lab-sim"), experiments.experiment("keepalive"),
                       max_tokens=4, max_requests=30, seed=3,
                       gates=parse_gates("ttft_p50 > +10%")),
            store=store,
        )  # fmt: skip
    assert isinstance(result, VerifyResult) and result.gates is not None
    assert result.runs is not None and result.runs[0].run_id == result.run_ids[0]
    document = result.document()
    assert document["schema"] == "latdoc.verify/2" and "gates" in document
    assert result.gates_failed == bool(result.gates.failed)
