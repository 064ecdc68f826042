"""GenAI spans from an OTLP JSON file, as traces holding only what the spans hold.

The file is what an OTLP/JSON exporter writes (``resourceSpans[].scopeSpans[].spans[]``,
attributes as key/value lists, times as ``*UnixNano`` strings), one document or one
per line. A span counts when it is a model call as one of the instrumentations
people use writes it:

- the GenAI semantic conventions (``gen_ai.*``), as OpenLLMetry
  (``opentelemetry-instrumentation-openai``), the OpenTelemetry contrib
  ``opentelemetry-instrumentation-openai-v2`` and latdoc itself write them;
- OpenInference (``openinference-instrumentation-openai``): a span of kind ``LLM``
  with ``llm.model_name`` and ``llm.token_count.*``;
- Langfuse: a ``generation`` observation, its usage in
  ``langfuse.observation.usage_details``.

Its trace has the span's start and end, the model, the token usage, the prompt's
size when the span holds the prompt's text (its characters, and the tokens they are
estimated to hold), and the outcome. The time to first token is read where the
instrumentation writes one: latdoc's ``latdoc.ttft_ms``; the conventions'
``gen_ai.response.time_to_first_chunk``; Langfuse's
``langfuse.observation.completion_start_time``; a first-token event (OpenInference's
``First Token Stream Event``); or OpenLLMetry's ``gen_ai.content.completion.chunk``
events, one per streamed chunk, which also give the stream's rhythm (the chunks'
times). Each of these is the first *chunk* the application received: a chunk
without output that a server sends before its prefill (a role-only chunk) would stand
in for the first token, so among chunk events a first one followed by a gap far
longer than the stream's rhythm is taken for such a chunk. latdoc's own ``latdoc.*``
phase attributes are read when latdoc wrote the span. Every other phase is ``None``;
:class:`OtlpTraffic` names the instrumentation that wrote the spans and notes what they
lack beyond that (the network phases are noted wherever traffic is diagnosed,
:mod:`latdoc.analysis.traffic`).

A file that holds an agent's run (OpenInference's ``AGENT`` and ``TOOL`` spans, the
conventions' ``invoke_agent`` and ``execute_tool``) keeps every span of the tree
(:class:`AgentSpan`), and a call recorded twice (an agent framework's model span holding
the client's) is read once, from the span nearer the wire.

The file is read like any other input latdoc is given (:mod:`latdoc.workload.traces`
reads the traces it replays); keeping the traces as a run is the store's
(:meth:`latdoc.store.Store.add_samples`). :mod:`._typed` walks the JSON,
:mod:`._spans` finds the spans and their attributes, :mod:`._phases` reads when the
first token and the chunks came, :mod:`._trace` the rest of a span's trace, and
:mod:`._read` the whole file with its notes.
"""

from latdoc.workload.otlp._read import AgentSpan, OtlpTraffic, read_otlp, read_otlp_file
from latdoc.workload.otlp._typed import decode

__all__ = ["AgentSpan", "OtlpTraffic", "decode", "read_otlp", "read_otlp_file"]
