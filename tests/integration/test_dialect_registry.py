"""The registry of API dialects is the one list: ``--api``, the key, the URL, the
dialect a request path speaks and the event that names another dialect all read
``latdoc.probe.dialects.DIALECTS``, and a dialect may name its model in the path.
The lab's stand-ins are its own one list (``latdoc.lab.sim.dialects.STAND_INS``),
routed as they are listed, a model in the route included."""

from __future__ import annotations

import httpx
import pytest

import latdoc.lab.sim.dialects as lab_dialects
from conftest import LabFactory
from latdoc.lab.sim import output_token
from latdoc.lab.sim.dialects import StandIn
from latdoc.lab.sim.dialects.chat import STAND_IN as CHAT_STAND_IN
from latdoc.probe import dialects, request_body
from unit.probe.test_dialect_registry import TOY


def _toy_messages(data: dict[str, object]) -> object:
    turns = data.get("turns")
    if not isinstance(turns, list):
        return turns
    return [{"role": t["role"], "content": t["pieces"][0]["text"]} for t in turns]


TOY_STAND_IN = StandIn(
    name="toy",
    path="/v1/toys/{model}:stream",
    messages=_toy_messages,
    writer=CHAT_STAND_IN.writer,
    document=CHAT_STAND_IN.document,
    streams=True,
)


def test_the_lab_serves_a_stand_in_whose_route_names_the_model(
    lab: LabFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lab_dialects, "STAND_INS", (*lab_dialects.STAND_INS, TOY_STAND_IN))
    body = request_body(TOY, "lab-sim", "Hello there", 3, include_usage=True)
    with lab() as server:
        answer = httpx.post(TOY.url(server.base_url, "lab-sim"), json=body, timeout=10)
        unknown = httpx.post(TOY.url(server.base_url, "no-such-model"), json=body, timeout=10)
        chat = httpx.post(
            dialects.get("chat").url(server.base_url, "lab-sim"),
            json=request_body(dialects.chat.SPEC, "lab-sim", "Hello there", 3, include_usage=True),
            timeout=10,
        )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert all(f'"content":"{output_token(k)}"' in answer.text for k in range(3))
    assert unknown.status_code == 404 and "no-such-model" in unknown.text
    assert chat.status_code == 200
