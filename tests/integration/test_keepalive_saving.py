"""Keep-alive's saving is a number only when it was measured: the first byte of requests
on new connections against that of requests on reused ones, of the same prompt length,
with enough of each. Otherwise it is null and the diagnosis says why."""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path

import openai

from conftest import FAST, LabFactory
from latdoc import (
    ConnectionOptions,
    DiagnosisPlan,
    Endpoint,
    RunContext,
    Step,
    Store,
    build_diagnosis,
    diagnose_traffic,
    instrument,
    measure_steps,
)
from latdoc.analysis.policy import HIGH_RTT_MS, MIN_KEEPALIVE_N
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.model import Diagnosis
from latdoc.workload import StepsResult
from latdoc.workload._diagnosis_plan import EXTRA_COLD
from latdoc.workload._settle import SETTLED_MARGIN, SETUP_WORTH_MEASURING

UNHURRIED = LatencyModel(prefill_base_ms=200.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0)


def _diagnose(base_url: str, model: str, cacert: str | None = None) -> Diagnosis:
    return _measure(base_url, model, cacert)[1]


def _measure(base_url: str, model: str, cacert: str | None = None) -> tuple[StepsResult, Diagnosis]:
    plan = DiagnosisPlan(
        Endpoint(base_url, model),
        ConnectionOptions(cacert=cacert),
        max_tokens=8,
        max_seconds=30.0,
        seed=3,
    )
    result = asyncio.run(measure_steps(plan))
    context = RunContext("t", base_url, model, cpu_count=2, notes=tuple(result.notes))
    return result, build_diagnosis(result.samples, context)


def test_no_saving_when_the_server_closed_every_connection(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, keep_alive=False)) as server:
        d = _diagnose(server.base_url, "lab-sim")
    assert d.network["server_closes_connections"] == 1.0
    assert d.network["keepalive_saving_ms"] is None
    assert d.network["keepalive_saving_low_ms"] is None
    assert d.network["keepalive_saving_high_ms"] is None
    assert d.network_check is not None
    assert d.network_check.keepalive_why == (
        "the server closed every connection: no request reused one"
    )


def test_paired_new_and_reused_connections_measure_the_saving(lab: LabFactory) -> None:
    """Over TLS a new connection's handshake is a noticeable share of a quick request, so
    the network step sends the extra cold requests the saving is measured from."""
    with lab(LabConfig(latency=FAST), tls=True) as server:
        d = _diagnose(server.base_url, "lab-sim", server.ca_file)
    assert d.network["keepalive_saving_ms"] is not None
    assert (d.network["keepalive_new_n"] or 0) >= MIN_KEEPALIVE_N
    assert (d.network["keepalive_reused_n"] or 0) >= MIN_KEEPALIVE_N
    assert d.network_check is not None and d.network_check.keepalive_why is None


def test_no_saving_from_traffic_of_one_cold_and_eleven_warm_different_prompts(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST, seed=9)) as server:

        async def go() -> str:
            client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0)
            with Store(db) as store, instrument(client, store=store) as inst:
                for i in range(12):
                    stream = await client.chat.completions.create(
                        model="lab-sim",
                        messages=[{"role": "user", "content": "word " * (10 + 7 * i)}],
                        max_tokens=4,
                        stream=True,
                        stream_options={"include_usage": True},
                    )
                    async for _ in stream:
                        pass
                run_id = inst.run_id
            await client.close()
            return run_id

        run_id = asyncio.run(go())
    with Store(db) as store:
        run = diagnose_traffic(store, run_id)
    new = [s for s in run.samples if s.trace.new_connection]
    reused = [s for s in run.samples if s.trace.new_connection is False]
    assert (len(new), len(reused)) == (1, 11)
    assert run.diagnosis.network["keepalive_saving_ms"] is None
    check = run.diagnosis.network_check
    assert check is not None and check.keepalive_why == (
        "no new and reused connections carried requests of the same prompt length"
    )


def test_a_setup_too_small_to_matter_settles_the_network_step_without_its_pairs(
    lab: LabFactory,
) -> None:
    """On plain loopback TCP a new connection costs a fraction of a millisecond: the
    first cold request settles every network rule, no more cold requests are sent,
    and the saving is not a number but says why. The requests take a fifth of a
    second, so only a machine late enough to make the connect's own measured time
    (the loop's stamps) 5% of one asks for more cold requests; the test reads that
    from the first cold request's own trace and then expects the extra ones, with
    the reason named."""
    with lab(LabConfig(latency=UNHURRIED)) as server:
        result, d = _measure(server.base_url, "lab-sim")
    network = [s.trace for s in result.samples if s.step == Step.NETWORK]
    first, warm = network[0], [t for t in network[1:] if t.new_connection is False]
    assert first.new_connection and first.setup_ms is not None and warm
    share = first.setup_ms / statistics.median(t.total_ms or 0.0 for t in warm)
    rtt = first.handshake_ms or 0.0
    print(f"setup {first.setup_ms:.2f} ms = {share:.1%} of a warm request; rtt {rtt:.2f} ms")
    assert d.network_check is not None
    why = d.network_check.keepalive_why
    if share < SETUP_WORTH_MEASURING and rtt < HIGH_RTT_MS / SETTLED_MARGIN:
        assert d.network["keepalive_saving_ms"] is None
        assert why is not None and why.startswith("only 2 new")
        assert d.network["cold_n"] == 1
        assert any("settled the network rules" in note.text for note in d.notes)
    else:
        # The machine made loopback's setup look costly: the step asks again, as the rule
        # says, and with the new connections that brings it has its pairs: the saving is a
        # number, or it says why it is not.
        assert d.network["cold_n"] == 1 + EXTRA_COLD
        assert any(f"{EXTRA_COLD} more cold ones, as" in note.text for note in d.notes)
        assert (d.network["keepalive_saving_ms"] is None) == (why is not None)
