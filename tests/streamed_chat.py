"""An application's own streamed chat call through the openai SDK, as the tests that
watch an application's traffic make it: no usage asked, the answer's text returned."""

from __future__ import annotations

import openai


async def stream_chat(client: openai.AsyncOpenAI, text: str, max_tokens: int = 8) -> str:
    """One streamed chat completion of ``text`` to the lab's model; the answer's text."""
    stream = await client.chat.completions.create(
        model="lab-sim",
        messages=[{"role": "user", "content": text}],
        max_tokens=max_tokens,
        stream=True,
    )
    parts = []
    async for chunk in stream:
        for choice in chunk.choices:
            parts.append(choice.delta.content or "")
    return "".join(parts)
