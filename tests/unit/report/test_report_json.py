"""The JSON documents: a schema name each, milliseconds beside every other unit, and
key sets pinned so that renaming or dropping a key users' scripts read fails here."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from latdoc import (
    ErrorKind,
    Finding,
    Kind,
    Phase,
    TraceError,
    diagnosis_to_dict,
    parse_priorities,
    trace_to_dict,
)
from latdoc.model import Effects, Workload
from latdoc.records import TcpInfo
from latdoc.report import DIAGNOSIS_SCHEMA, TRACE_SCHEMA
from report_samples import make_diagnosis, make_trace, with_error

DIAGNOSIS_KEYS = {
    "schema", "run_id", "endpoint", "model", "scenario", "requests", "requests_by_step", "failed",
    "verdict", "shares", "shares_ms", "findings", "remedies", "steps", "notes", "negligible",
    "typical_request", "workload", "longer_prompt", "system", "server", "cost", "priorities",
    "reference",
}  # fmt: skip
PRIORITIES_KEYS = {"order", "weights", "not_read", "scenario", "text"}
EFFECTS_KEYS = {"cost", "cost_why", "quality", "quality_why", "text"}
VERDICT_KEYS = {
    "primary", "contributing", "confidence", "negligible", "rule_confidence", "confidence_model",
    "bank_accuracy", "runner_up", "near_threshold",
}  # fmt: skip
FINDING_KEYS = {
    "kind", "title", "rule", "evidence", "share_s", "share_ms", "excess_ms", "beyond_alone_ms",
    "confidence", "n", "remedy", "predicted_gain_ms",
}  # fmt: skip
REMEDY_KEYS = {
    "key", "title", "addresses", "change", "predicted_gain_ms", "tradeoff", "gain_interval_ms",
    "gain_source", "verify_command", "how_to_measure", "effects",
}  # fmt: skip
STEPS_KEYS = {"network", "network_rule", "length", "load", "reasoning"}
LENGTH_KEYS = {
    "points", "a_ms", "b_ms_per_1k", "c_ms_per_1k2", "prefill_ms_per_1k", "shape",
    "ratio_long_short", "rule", "tokens_estimated",
}  # fmt: skip
POINT_KEYS = {"prompt_tokens", "ttft_ms", "n"}
WORKLOAD_KEYS = {
    "prompt_tokens", "output_tokens", "concurrency", "total_ms", "short_ms", "growth_ms",
    "beyond_alone_ms", "rest_ms", "told", "source", "asked_tokens",
}  # fmt: skip
NOTE_KEYS = {"step", "text"}

TRACE_KEYS = {
    "schema", "started_at", "url", "model", "dialect", "http_version", "remote_ip",
    "connection_id", "new_connection", "status", "queue_ms", "dns_ms", "connect_ms", "tls_ms",
    "send_ms", "send_acked", "wait_ms", "ttfb_ms", "ttft_ms", "tpot_ms", "total_ms", "rtt_ms",
    "prompt_tokens", "cached_prompt_tokens", "output_tokens", "output_tokens_exact",
    "chunk_tokens_exact", "finish_reason", "request_bytes", "response_bytes", "server_timing",
    "tcp_info", "error", "chunks", "started_ns", "request_id", "response_id", "attempt",
    "ttfr_ms", "ttfa_ms", "reasoning_ms", "reasoning_tokens", "unknown_events",
    "proxy_headers",
    "client_delay_ms", "server_ttft_ms", "arrival_clock",
    "first_event_ms", "first_tool_call_ms", "prompt_chars", "prompt_tokens_estimated",
    "proxy", "proxy_connect_ms",
    "connect_attempts", "tls_resumed", "tls_session_offered",
    "keepalive_comments", "keepalive_wait_ms",
    "tool_arguments_done_ms", "first_output_kind", "tool_calls",
}  # fmt: skip
TCP_INFO_KEYS = {
    "rtt_us", "rtt_ms", "rttvar_us", "rttvar_ms", "min_rtt_us", "min_rtt_ms", "retransmits",
    "snd_cwnd",
    "lost", "backoff_retransmits", "data_segments_out", "data_segments_in", "out_of_order_in",
}  # fmt: skip
ERROR_KEYS = {"code", "kind", "phase", "message", "status", "retry_after_s"}
CHUNK_KEYS = {"t_ms", "tokens"}


def test_diagnosis_document_keys_are_pinned() -> None:
    doc = diagnosis_to_dict(make_diagnosis())
    assert set(doc) == DIAGNOSIS_KEYS
    assert doc["schema"] == DIAGNOSIS_SCHEMA == "latdoc.diagnosis/2"
    assert set(doc["verdict"]) == VERDICT_KEYS
    assert doc["verdict"]["primary"] == "input_length"
    assert doc["verdict"]["contributing"] == ["queueing", "network_setup"]
    for finding in doc["findings"]:
        assert set(finding) == FINDING_KEYS
    for remedy in doc["remedies"]:
        assert set(remedy) == REMEDY_KEYS
    assert set(doc["steps"]) == STEPS_KEYS
    assert set(doc["steps"]["length"]) == LENGTH_KEYS
    for point in doc["steps"]["length"]["points"]:
        assert set(point) == POINT_KEYS
    for note in doc["notes"]:
        assert set(note) == NOTE_KEYS
    assert json.loads(json.dumps(doc)) == doc
    ranked = replace(
        make_diagnosis(),
        priorities=parse_priorities("latency=2,cost=0,quality=1"),
        remedies=tuple(replace(r, effects=Effects()) for r in make_diagnosis().remedies),
    )
    ranked_doc = diagnosis_to_dict(ranked)
    assert set(ranked_doc["priorities"]) == PRIORITIES_KEYS
    assert ranked_doc["priorities"]["weights"] == {"latency": 2, "quality": 1}
    for remedy in ranked_doc["remedies"]:
        assert set(remedy["effects"]) == EFFECTS_KEYS
    typical = Workload(800, 32, 4, 900.0, 700.0, 200.0, source="recorded")
    workload = diagnosis_to_dict(replace(make_diagnosis(), workload=typical))["workload"]
    assert set(workload) == WORKLOAD_KEYS
    assert workload["source"] == "recorded" and workload["told"] is False


def test_seconds_keep_their_key_and_gain_a_milliseconds_twin() -> None:
    d = make_diagnosis()
    doc = diagnosis_to_dict(d)
    for kind, ms in d.shares_ms.items():
        assert doc["shares"][str(kind)] == pytest.approx(ms / 1000)
        assert doc["shares_ms"][str(kind)] == pytest.approx(ms)
    first = doc["findings"][0]
    assert first["share_s"] == pytest.approx(1.48)
    assert first["share_ms"] == pytest.approx(1480.0)
    # A finding that says no excess has its whole share past healthy.
    assert first["excess_ms"] == pytest.approx(1480.0)


def test_evidence_and_step_numbers_in_seconds_get_an_ms_twin() -> None:
    rate_limited = Finding(
        Kind.ERRORS, "Rate limited", "429 with Retry-After", {"retry_after_s": 2.5, "n": 3},
        800.0, 0.8,
    )  # fmt: skip
    d = replace(make_diagnosis(), findings=(rate_limited,), load={"window_s": 30.0, "x_ms": 1.0})
    doc = diagnosis_to_dict(d)
    evidence = doc["findings"][0]["evidence"]
    assert evidence == {"retry_after_s": 2.5, "retry_after_ms": 2500.0, "n": 3}
    assert doc["steps"]["load"] == {"window_s": 30.0, "window_ms": 30000.0, "x_ms": 1.0}
    assert doc["steps"]["network"]["rtt_ms"] is None


def test_no_key_is_in_another_unit_without_its_ms_twin() -> None:
    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in node:
                for suffix in ("_s", "_us"):
                    if key.endswith(suffix):
                        assert key.removesuffix(suffix) + "_ms" in node, key
                walk(node[key])
        elif isinstance(node, list):
            for item in node:
                walk(item)

    tcp = TcpInfo(rtt_us=1500, rttvar_us=300, min_rtt_us=None, retransmits=0, snd_cwnd=10,
                  bytes_acked=None, bytes_received=None)  # fmt: skip
    walk(diagnosis_to_dict(make_diagnosis()))
    walk(trace_to_dict(replace(make_trace(), tcp_info=tcp)))


def test_trace_document_keys_are_pinned() -> None:
    tcp = TcpInfo(rtt_us=1500, rttvar_us=300, min_rtt_us=900, retransmits=2, snd_cwnd=10,
                  bytes_acked=None, bytes_received=None)  # fmt: skip
    doc = trace_to_dict(replace(make_trace(), tcp_info=tcp))
    assert set(doc) == TRACE_KEYS
    assert doc["schema"] == TRACE_SCHEMA == "latdoc.trace/1"
    assert set(doc["tcp_info"]) == TCP_INFO_KEYS
    assert doc["tcp_info"]["rtt_ms"] == pytest.approx(1.5)
    assert doc["tcp_info"]["min_rtt_ms"] == pytest.approx(0.9)
    assert doc["tcp_info"]["rtt_us"] == 1500
    for chunk in doc["chunks"]:
        assert set(chunk) == CHUNK_KEYS
    assert doc["dns_ms"] == pytest.approx(12.0)
    assert doc["error"] is None


def test_a_failed_trace_names_its_error() -> None:
    error = TraceError(ErrorKind.HTTP, Phase.WAIT, "slow down", 429)
    doc = trace_to_dict(with_error(make_trace(first_token=None, stream=None), error))
    assert set(doc) == TRACE_KEYS
    assert set(doc["error"]) == ERROR_KEYS
    assert doc["error"]["code"] == "http:429"
    assert doc["ttft_ms"] is None
