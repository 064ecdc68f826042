"""First token, defined per layer, in every dialect: the first response byte, the
stream's first event (a control event counts), the first reasoning, the first answer
and the first tool call, each stamped apart. A control event (``response.created``,
``message_start``, ``messageStart``, a Gemini frame without parts, a role-only chunk,
Azure's prompt filter results) is never the first token.

Each dialect is served a scripted stream whose layers come GAP apart, in order: the
headers, control events, reasoning, the answer, a tool call; each layer's stamp is
checked against the server's own time of the write that carried it. Against the lab,
whose control events leave with the headers and whose first token waits for the
prefill, the first event is the first byte's and the first token the prefill's later."""

from __future__ import annotations

import asyncio

import pytest

from conftest import LabFactory
from latdoc import (
    Endpoint,
    ProbeSession,
    RequestTrace,
)
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.probe import dialects
from latdoc.probe.dialects import DialectSpec
from latdoc.store.codec import trace_from_record, trace_to_record
from scripted_server import ScriptedServer, chunk
from scripted_server import Step as ScriptStep
from unit.probe.test_first_layers import (
    STREAMS,
    Layers,
)

GAP = 0.04


"""Seconds between one layer of a scripted stream and the next."""


KEY = "layers-key-0123456789"


PREFILL = LatencyModel(prefill_base_ms=80.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)


def _script(content_type: str, layers: Layers) -> list[ScriptStep]:
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n"
    ).encode()
    script: list[ScriptStep] = [head]
    for events in layers:
        if events:
            script += [GAP, chunk(b"".join(events))]
    return [*script, b"0\r\n\r\n"]


def _probe(base_url: str, dialect: DialectSpec, key: str | None = KEY) -> RequestTrace:
    async def go() -> RequestTrace:
        endpoint = Endpoint(base_url, "lab-sim", dialect, api_key=key)
        async with ProbeSession(endpoint) as session:
            return await session.request("Hello", 16)

    return asyncio.run(go())


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_each_layer_is_stamped_when_it_arrives(name: str) -> None:
    """Each layer's stamp is the arrival of the write that carried it: not before the
    server wrote it (same clock, same process), and well within the GAP after. The
    server's own write times are the schedule, so a server thread the machine ran late
    moves the expected stamps with it."""
    dialect, content_type, make = STREAMS[name]
    layers = make()
    with ScriptedServer(_script(content_type, layers)) as server:
        trace = _probe(server.base_url.removesuffix("/v1"), dialect)
    assert trace.error is None, trace.error
    assert trace.unknown_events == 0
    head, *rest = server.writes  # the headers, each layer sent, the chunked body's end
    names = ("control", "reasoning", "answer", "tool", "end")
    sent = [n for n, events in zip(names, layers, strict=True) if events]
    written = dict(zip(sent, rest[: len(sent)], strict=True))

    def arrived(stamp: int | None, write: int) -> None:
        assert stamp is not None
        lag_ms = (trace.t0_ns + stamp - write) / 1e6
        assert -1.0 < lag_ms < GAP * 1000 / 2, f"{lag_ms:.1f} ms after the write"

    arrived(trace.first_byte_ns, head)
    # The control events are an event, never a token.
    arrived(trace.first_event_ns, written["control"])
    first_output = "reasoning" if "reasoning" in written else "answer"
    arrived(trace.first_token_ns, written[first_output])
    assert trace.first_token_ns == trace.chunks[0].t_ns
    if "reasoning" in written:
        assert trace.first_token_ns == trace.first_reasoning_ns
        arrived(trace.first_answer_ns, written["answer"])
    else:
        assert trace.first_reasoning_ns is None and trace.first_token_ns == trace.first_answer_ns
    if "tool" in written:
        arrived(trace.first_tool_call_ns, written["tool"])
        assert trace.tool_calls and trace.tool_calls[0].first_ns == trace.first_tool_call_ns
    else:
        assert trace.first_tool_call_ns is None and trace.tool_calls == ()
    assert trace.first_event_ms is not None and trace.first_tool_call_ms == (
        None if trace.first_tool_call_ns is None else trace.first_tool_call_ns / 1e6
    )
    assert trace_from_record(trace_to_record(trace)) == trace


@pytest.mark.parametrize("name", ["anthropic", "responses", "bedrock", "chat"])
def test_control_events_alone_are_an_event_and_no_token(name: str) -> None:
    """A stream that ends after its control events: a first event, no first token."""
    dialect, content_type, make = STREAMS[name]
    control, *_, end = make()
    with ScriptedServer(_script(content_type, (control, [], [], [], end))) as server:
        trace = _probe(server.base_url.removesuffix("/v1"), dialect)
    assert trace.error is None, trace.error
    assert trace.first_event_ns is not None
    assert trace.first_token_ns is None and trace.first_answer_ns is None
    assert trace.first_tool_call_ns is None and trace.chunks == ()


def _lab_base(root: str, dialect: DialectSpec) -> str:
    return {
        dialects.gemini.SPEC: f"{root}/v1beta",
        dialects.vertex.SPEC: f"{root}/v1/projects/lab-project/locations/us-central1",
        dialects.bedrock.SPEC: root,
        dialects.azure.SPEC: root,
    }.get(dialect, f"{root}/v1")


OPENS_WITH_CONTROL = {"chat", "azure", "anthropic", "responses", "bedrock"}


"""The lab's stand-ins that send control events with the headers, before the prefill."""


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_against_the_lab_the_prefill_lies_between_first_event_and_first_token(
    lab: LabFactory, name: str
) -> None:
    dialect = STREAMS[name][0]
    with lab(LabConfig(latency=PREFILL, api_key=KEY)) as server:
        trace = _probe(_lab_base(server.base_url.removesuffix("/v1"), dialect), dialect)
    assert trace.error is None, trace.error
    assert trace.first_event_ns is not None and trace.first_token_ns is not None
    assert trace.first_byte_ns is not None and trace.sent_ns is not None
    if name in OPENS_WITH_CONTROL:
        assert (trace.first_event_ns - trace.first_byte_ns) / 1e6 < 20.0
        assert (trace.first_token_ns - trace.first_event_ns) / 1e6 > 60.0
    else:
        assert trace.first_event_ns == trace.first_token_ns
    # The lab begins its prefill once it has the request, so after the request's first
    # byte went to the kernel: the first token comes the prefill or more after that.
    # (``sent`` is when the client saw the request acknowledged, polled on its loop: a
    # busy machine sees it late, 0.5 ms past the lab's start beside the whole suite.)
    assert trace.write_start_ns is not None and trace.write_start_ns <= trace.sent_ns
    assert (trace.first_token_ns - trace.write_start_ns) / 1e6 >= 80.0
