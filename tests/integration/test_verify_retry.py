"""``latdoc verify --remedy retry`` against the lab's own errors, with known rates."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from conftest import closed_port
from latdoc import (
    Endpoint,
    ProbeSession,
    RequestTrace,
    Store,
    VerifyPlan,
)
from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.client import FailureClass, RetryPolicy
from latdoc.features.verify import RetryVerdict, experiments, verify_retry
from latdoc.features.verify.retry.send import RetryOptions, failure_class
from latdoc.lab.sim import Fault, LabConfig, LabServer, LatencyModel, requests_received

QUICK = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0)


def fast_policy() -> RetryPolicy:
    """Short backoffs, and no retry budget: every failure gets its attempts, so the
    answered share is the policy's own (a budget would cap it by design)."""
    return RetryPolicy(server_base_s=0.01, server_cap_s=0.05, connect_base_s=0.01, budget=None)


def run(config: LabConfig, tmp_path: Path, trials: int = 40) -> RetryVerdict:
    with LabServer(config) as lab:
        plan = VerifyPlan(
            Endpoint(lab.base_url, "lab-sim"),
            experiments.experiment("retry"),
            max_tokens=4,
            seed=2,
            options=RetryOptions(trials=trials),
        )
        with Store(tmp_path / "r.db") as store:
            return verify_retry(plan, store=store, policy=fast_policy())


def test_retries_answer_what_a_first_attempt_loses(tmp_path: Path) -> None:
    config = LabConfig(latency=QUICK, fault=Fault("500"), fault_rate=0.3, seed=4)
    verdict = run(config, tmp_path)
    a, b = verdict.comparison.a, verdict.comparison.b
    assert a.trials == b.trials == 40
    assert a.success_ci is not None and a.success_ci[0] <= 0.7 <= a.success_ci[1]
    # Four attempts each failing 30% of the time: 1 − 0.3⁴ ≈ 99% answered.
    assert b.success_rate >= 0.9 and b.attempts_mean > 1.0
    assert verdict.comparison.verdict == "better"
    assert a.attempts_mean == 1.0 and a.waited_s == 0.0


def test_an_endpoint_without_errors_shows_no_difference(tmp_path: Path) -> None:
    verdict = run(LabConfig(latency=QUICK), tmp_path, trials=15)
    assert verdict.comparison.a.success_rate == verdict.comparison.b.success_rate == 1.0
    assert verdict.comparison.verdict == "no_difference"
    assert verdict.comparison.b.attempts_mean == 1.0


def test_a_401_stops_the_experiment_at_its_first_request(tmp_path: Path) -> None:
    with LabServer(LabConfig(latency=QUICK, api_key="the-right-key")) as lab:
        plan = VerifyPlan(
            Endpoint(lab.base_url, "lab-sim"), experiments.experiment("retry"), max_tokens=4, seed=2
        )
        with Store(tmp_path / "r.db") as store:
            verdict = verify_retry(plan, store=store, policy=fast_policy())
            kept = [len(store.load_run(run_id)[1]) for run_id in verdict.run_ids]
        sent = requests_received(lab.app)
    assert sent == 1 and sorted(kept) == [0, 1]
    assert verdict.verdict == "not_applicable" and verdict.not_applicable
    assert verdict.reason is not None and verdict.reason.startswith("the endpoint cannot answer")
    assert "http:401" in verdict.reason and "check the API key" in verdict.reason


def test_a_closed_port_is_not_applicable_after_one_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = f"http://127.0.0.1:{closed_port()}/v1"
    db = tmp_path / "c.db"
    code = main(["verify", closed, "-m", "m", "--remedy", "retry", "--json", "--db", str(db)])
    assert code == EXIT_USAGE
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == "not_applicable"
    assert "nothing accepts connections there" in document["reason"]
    a, b = document["arms"]["A"], document["arms"]["B"]
    assert a["trials"] + b["trials"] == 1
    assert a["attempts_mean"] + b["attempts_mean"] == 1.0, "the one failure is not retried"
    with Store(db) as store:
        assert sum(len(store.load_run(arm["run_id"])[1]) for arm in (a, b)) == 1


def test_the_command_says_why_it_is_not_applicable(capsys: pytest.CaptureFixture[str]) -> None:
    closed = f"http://127.0.0.1:{closed_port()}/v1"
    assert main(["verify", closed, "-m", "m", "--remedy", "retry"]) == EXIT_USAGE
    out = capsys.readouterr().out.replace("\n", " ")
    assert "Verdict: not applicable — the endpoint cannot answer: connect" in out


def test_the_command_prints_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = LabConfig(latency=QUICK, fault=Fault("503"), fault_rate=0.5, seed=1)
    with LabServer(config) as lab:
        code = main(["verify", lab.base_url, "-m", "lab-sim", "--remedy", "retry",
                     "--trials", "6", "--json", "--db", str(tmp_path / "c.db"),
                     "--max-tokens", "4"])  # fmt: skip
    assert code == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "latdoc.retry/1"
    a, b = document["arms"]["A"], document["arms"]["B"]
    assert a["trials"] == b["trials"] == 6
    for arm in (a, b):
        assert arm["success_rate"] == pytest.approx(arm["succeeded"] / arm["trials"])
    # Without the policy nothing is resent. Whether six requests at 50 % faults do
    # better with it is a draw; the seeded experiments above test what retries gain.
    assert a["attempts_mean"] == 1.0 and b["attempts_mean"] >= 1.0


def _retry_run(config: LabConfig, tmp_path: Path, policy: RetryPolicy) -> RetryVerdict:
    with LabServer(config) as lab:
        plan = VerifyPlan(
            Endpoint(lab.base_url, "lab-sim"),
            experiments.experiment("retry"),
            max_tokens=4,
            seed=2,
            options=RetryOptions(trials=8),
        )
        with Store(tmp_path / "ra.db") as store:
            return verify_retry(plan, store=store, policy=policy)


def test_the_experiment_waits_the_retry_after_the_probe_recorded(tmp_path: Path) -> None:
    """The lab's 429s ask for 0 s: every wait is exactly that, not the policy's jittered
    backoff; asking for 1 s of a policy that waits at most 0.5 s stops the retries."""
    limited = LabConfig(latency=QUICK, fault=Fault("429"), fault_rate=0.5, retry_after_s=0, seed=5)
    b = _retry_run(limited, tmp_path, fast_policy()).comparison.b
    assert b.attempts_mean > 1.0 and b.waited_s == 0.0
    patient = RetryPolicy(server_base_s=0.01, server_cap_s=0.05, max_retry_after_s=0.5, budget=None)
    longer = LabConfig(latency=QUICK, fault=Fault("429"), fault_rate=0.5, retry_after_s=1, seed=5)
    b = _retry_run(longer, tmp_path / "long", patient).comparison.b
    assert b.attempts_mean == 1.0 and b.waited_s == 0.0 and b.succeeded < b.trials


@pytest.mark.parametrize("fault", [Fault.BASE_RESP, Fault.BASE_RESP_EVENT])
@pytest.mark.parametrize(
    ("code", "status", "failure", "retried"),
    [
        (1002, 429, FailureClass.RATE_LIMIT, True),
        (1000, 500, FailureClass.SERVER, True),
        (1004, 401, FailureClass.CLIENT, False),
        (1008, 402, FailureClass.CLIENT, False),
    ],
)
def test_an_error_sent_with_http_200_is_classed_by_its_base_resp_code(
    fault: Fault, code: int, status: int, failure: FailureClass, retried: bool
) -> None:
    """MiniMax's errors come with HTTP 200, as the whole body or as the stream's one
    event: each fails as the status its code stands for, and the policy retries a rate
    limit and a server error, never a refused key or an empty balance."""

    async def probe(base_url: str) -> RequestTrace:
        async with ProbeSession(Endpoint(base_url, "lab-sim")) as session:
            return await session.request("hi", 4, headers={"x-lab-fault": str(fault)})

    with LabServer(LabConfig(latency=QUICK, base_resp_code=code)) as lab:
        trace = asyncio.run(probe(lab.base_url))
    assert trace.status == 200 and trace.error is not None
    assert trace.error.code == f"http:{status}", trace.error
    assert f"base_resp {code}" in trace.error.message
    assert failure_class(trace) is failure
    decision = fast_policy().decide(1, failure, elapsed_s=0.0, status=trace.status)
    assert decision.retry is retried


def test_retries_answer_what_a_base_resp_rate_limit_loses(tmp_path: Path) -> None:
    config = LabConfig(latency=QUICK, fault=Fault.BASE_RESP, fault_rate=0.3, seed=4)
    verdict = run(config, tmp_path, trials=20)
    a, b = verdict.comparison.a, verdict.comparison.b
    assert a.success_rate < 1.0 and b.attempts_mean > 1.0
    assert b.success_rate > a.success_rate


def test_a_base_resp_refusing_the_key_stops_the_experiment_at_its_first_request(
    tmp_path: Path,
) -> None:
    config = LabConfig(latency=QUICK, fault=Fault.BASE_RESP, base_resp_code=1004)
    verdict = run(config, tmp_path, trials=10)
    assert verdict.verdict == "not_applicable"
    assert verdict.reason is not None and "http:401" in verdict.reason
