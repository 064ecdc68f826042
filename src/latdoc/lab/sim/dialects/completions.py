"""OpenAI (legacy) completions as the lab serves them (``/v1/completions``): the
prompt as text, texts or token ids, no reasoning, chat's chunks with ``text``.
"""

from __future__ import annotations

from typing import Any

from latdoc.lab.sim._call import Call
from latdoc.lab.sim._events import COMPLETIONS, answer_text
from latdoc.lab.sim._writers import ChatWriter, StreamWriter
from latdoc.lab.sim.dialects._stand_in import StandIn
from latdoc.lab.sim.dialects.chat import openai_document

__all__ = ["STAND_IN"]


def _writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    return ChatWriter(call, f"cmpl-lab{number}", stamp, COMPLETIONS, "text_completion")


def _document(call: Call, number: int, usage: dict[str, Any], cached: int) -> dict[str, object]:
    choice: dict[str, object] = {"index": 0, "text": answer_text(call)}
    return openai_document(call, f"cmpl-lab{number}", "text_completion", choice, usage)


STAND_IN = StandIn(
    name="completions",
    path="/v1/completions",
    messages=None,
    writer=_writer,
    document=_document,
)
