"""An agent with two tools, run as its own process by the tests: every user turn adds
context and the agent calls its ``lookup`` tool before it answers. Built with the OpenAI
Agents SDK (``openai-agents``), its spans traced by OpenInference's openai-agents and
openai instrumentations (``agents``) or OpenLLMetry's (``agents-openllmetry``); or with
pydantic-ai, traced by its own instrumentation in the
GenAI semantic conventions (``invoke_agent``, ``chat``, ``execute_tool``). The real
packages write the spans into one tree, as OTLP JSON, one export request a line, as
``tests/otlp_app.py`` writes them.

    python tests/otlp_agent.py BASE_URL OUT_FILE [--framework agents|agents-openllmetry|pydantic-ai]
        --turns 3 --words 300 --tool-s 0.8 [--usage]

The model is the lab's, spoken to in chat completions; the lab answers a request that
offers tools with a call to the first (``lookup``), and a turn that hands back the
tool's result in text, so each user turn is two model calls around one tool call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otlp_app import OtlpJsonFile


async def _run(args: argparse.Namespace) -> int:
    import openai
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(False)

    @function_tool
    def lookup(words: str) -> str:
        """Look words up in the slow dictionary."""
        time.sleep(args.tool_s)
        return f"{words}: words"

    @function_tool
    def note(text: str) -> str:
        """Write a note down."""
        return "noted"

    client = openai.AsyncOpenAI(api_key="sk-test", base_url=args.base_url, max_retries=0)
    agent = Agent(
        name="reader",
        instructions="Look words up before you answer.",
        tools=[lookup, note],
        model=OpenAIChatCompletionsModel(model="lab-sim", openai_client=client),
        model_settings=ModelSettings(include_usage=args.usage),
    )
    history: list[dict[str, str]] = []
    calls = 0
    for turn in range(args.turns):
        text = f"Turn {turn}: " + "word " * args.words
        result = Runner.run_streamed(agent, [*history, {"role": "user", "content": text}])
        async for _ in result.stream_events():
            pass
        history = result.to_input_list()
        calls += len(result.raw_responses)
    await client.close()
    return calls


async def _run_pydantic_ai(args: argparse.Namespace, provider: TracerProvider) -> int:
    import openai
    from pydantic_ai import Agent, InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = openai.AsyncOpenAI(api_key="sk-test", base_url=args.base_url, max_retries=0)
    if args.latdoc is not None:
        # latdoc's own client instrumentation, its spans through the same provider: each
        # call's phases as latdoc measures them, inside the framework's spans.
        from opentelemetry import trace

        import latdoc

        trace.set_tracer_provider(provider)
        store = latdoc.Store(args.latdoc)
        latdoc.instrument(client, store=store, otel=True)
    model = OpenAIChatModel("lab-sim", provider=OpenAIProvider(openai_client=client))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    agent = Agent(model, instructions="Look words up before you answer.")

    @agent.tool_plain
    def lookup(words: str) -> str:
        """Look words up in the slow dictionary."""
        time.sleep(args.tool_s)
        return f"{words}: words"

    @agent.tool_plain
    def note(text: str) -> str:
        """Write a note down."""
        return "noted"

    history: list[object] = []
    calls = 0
    for turn in range(args.turns):
        text = f"Turn {turn}: " + "word " * args.words
        result = await agent.run(text, message_history=history)  # type: ignore[arg-type]
        history = list(result.all_messages())
        calls += sum(1 for m in result.new_messages() if m.kind == "response")
    return calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--tool-s", type=float, default=0.8)
    parser.add_argument("--usage", action="store_true", help="ask the streams for usage")
    parser.add_argument(
        "--framework", choices=("agents", "agents-openllmetry", "pydantic-ai"), default="agents"
    )
    parser.add_argument(
        "--latdoc", type=Path, metavar="DB",
        help="pydantic-ai: its client instrumented by latdoc too (otel=True), kept in DB",
    )  # fmt: skip
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": "otlp-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFile(args.out)))
    if args.framework == "pydantic-ai":
        calls = asyncio.run(_run_pydantic_ai(args, provider))
        provider.force_flush()
        print(json.dumps({"model_calls": calls}))
        return
    if args.framework == "agents-openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as Client
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as Agents
    else:
        from openinference.instrumentation.openai import OpenAIInstrumentor as Client
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor as Agents

    from agents import set_trace_processors

    # The SDK's own processor would send the traces to OpenAI's servers: none is kept,
    # and the instrumentation adds its own, which writes through the provider.
    set_trace_processors([])
    Agents().instrument(tracer_provider=provider)
    Client().instrument(tracer_provider=provider)
    calls = asyncio.run(_run(args))
    provider.force_flush()
    print(json.dumps({"model_calls": calls}))


if __name__ == "__main__":
    main()
