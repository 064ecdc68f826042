"""What the simulated endpoint serves and how slow it is: :class:`LabConfig`.

Every kind of slow in the mission has a knob here, and every knob's default keeps
the endpoint as it was before the knob existed:

- input length: ``a + b·n + c·n²`` prefill (:class:`LatencyModel`), a KV-cache
  threshold past which prefill and decode get ``kv_penalty`` times slower, and a
  context limit past which requests fail (``max_context_tokens``);
- output length: a reservation before the first token that grows with the
  ``max_tokens`` asked for, and answers that end by themselves (``answer_tokens``);
- model service: decode per token, decode that slows with the streams in flight
  (``batch_slowdown``), more models with latencies of their own (``alt_models``),
  ``slots`` with a FIFO queue, background load that follows a compressed day
  (``load_profile``), a prefix cache, mid-stream stalls;
- how the stream is written: several tokens per event (``tokens_per_event``, a
  fixed count or a seeded draw), SSE keep-alive comments while a request waits for
  its first token (``keepalive_comment_ms``);
- failures: one :class:`Fault` per request, at ``fault_rate``.

:func:`~latdoc.lab.sim.create_app` documents how each is reported to the client.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from latdoc.lab.sim._latency import LatencyModel, check_at_least, check_finite, check_rate

__all__ = ["Fault", "LabConfig", "LatencyModel", "TimingForm", "UsageShape"]


class Fault(enum.StrEnum):
    """The failures the endpoint can inject, by the name a request header uses.

    - ``429``: rate limited, with ``Retry-After`` and OpenAI's error JSON;
    - ``500``, ``503``: a server error with OpenAI's error JSON;
    - ``html``: a proxy's HTML error page with status 502;
    - ``hang``: no response headers; the connection is held until the client
      gives up (or ``hang_s`` passes, then a 504);
    - ``reset``: the TCP connection is reset (RST) after ``fault_after_tokens``
      output tokens (over HTTP/2 this ends every stream on that connection);
    - ``truncate``: the stream ends cleanly after ``fault_after_tokens`` tokens,
      without a finish reason or ``[DONE]``;
    - ``malformed``: after ``fault_after_tokens`` tokens one event's data is not
      valid JSON; the stream then goes on;
    - ``drip``: the body is sent one byte at a time, ``drip_interval_ms`` apart;
    - ``overloaded``: after ``fault_after_tokens`` output tokens the stream carries an
      error event of type ``overloaded_error`` (Anthropic's, or its likeness in the
      other dialects) and ends;
    - ``base-resp``: status 200 and MiniMax's error as the whole JSON body,
      ``{"base_resp": {"status_code": …, "status_msg": …}}`` with ``base_resp_code``;
    - ``base-resp-event``: status 200 and an event stream whose one event is that error.
    """

    RATE_LIMIT = "429"
    SERVER_ERROR = "500"
    UNAVAILABLE = "503"
    HTML = "html"
    HANG = "hang"
    RESET = "reset"
    TRUNCATE = "truncate"
    MALFORMED = "malformed"
    DRIP = "drip"
    OVERLOADED = "overloaded"
    BASE_RESP = "base-resp"
    BASE_RESP_EVENT = "base-resp-event"


class TimingForm(enum.StrEnum):
    """The words the endpoint tells its own timing in (``LabConfig.timing_forms``):

    - ``server-timing``: the ``Server-Timing`` header (:func:`~latdoc.lab.sim._plan.server_timing`);
    - ``llamacpp``: llama.cpp's ``timings`` object (``prompt_ms``, ``predicted_ms``) in the
      last chat or completions event;
    - ``vllm``: vLLM's per-request ``metrics`` object (``queue_time_ms``,
      ``time_to_first_token_ms`` from arrival, ``generation_time_ms``) there;
    - ``groq``: Groq's ``x_groq.usage`` there (``queue_time``, ``prompt_time``,
      ``completion_time``, ``total_time``, in seconds).

    The body forms are told by the chat and completions routes.
    """

    SERVER_TIMING = "server-timing"
    LLAMACPP = "llamacpp"
    VLLM = "vllm"
    GROQ = "groq"


class UsageShape(enum.StrEnum):
    """How the chat and completions routes word a stream's usage
    (``LabConfig.usage_shape``), as a provider does:

    - ``openai``: a last chunk of its own (no choices) carries ``usage``, the prompt
      tokens the prefix cache served in ``prompt_tokens_details.cached_tokens`` (only
      with ``prefix_cache``), the reasoning tokens in
      ``completion_tokens_details.reasoning_tokens``;
    - ``deepseek``: as OpenAI's, the cache's part of the prompt told as
      ``prompt_cache_hit_tokens`` and ``prompt_cache_miss_tokens`` instead, always;
    - ``moonshot``: the usage in ``choices[0].usage`` of the chunk that finishes the
      answer, with no chunk of its own, the cache's part as ``cached_tokens``, always.

    A whole (not streamed) answer's usage is top-level in every shape, with the same
    fields.
    """

    OPENAI = "openai"
    DEEPSEEK = "deepseek"
    MOONSHOT = "moonshot"


@dataclass(frozen=True)
class LabConfig:
    """What the simulated endpoint serves and how it behaves.

    Basics:

    - ``model``: the model id served with ``latency``; any id that is neither it
      nor one of ``alt_models`` is a 404 ``model_not_found``.
    - ``alt_models``: more model ids served by the same endpoint, each timed by its
      own :class:`LatencyModel` (:meth:`latency_for`); ``/v1/models`` lists them
      after ``model``. Slots, cache, stalls and faults are shared by all models.
    - ``wrong_models``: models served (``model`` or among ``alt_models``) that answer a
      repeat prompt wrongly. A prompt whose text (a chat's last message, or a
      completion's prompt) starts with :data:`~latdoc.lab.sim.REPEAT` (``Repeat
      exactly:``) is answered with the rest of it, stripped, one lab token a piece,
      ending by itself (``"stop"``) where the output limit allows it; a model named here
      answers the same text reversed, character by character, so a check of the answer
      fails on that model alone. Every other prompt gets the word cycle, whatever the
      model.
    - ``default_max_tokens``: the output limit when a request names none.
    - ``answer_tokens``: the length of the model's natural answer. A request whose
      output limit is at least this gets that many tokens and ``finish_reason``
      ``"stop"``; one whose limit is lower is cut at its limit with ``"length"``.
      ``None``: every answer runs to its limit and ends with ``"length"``.
    - ``headers_after_prefill``: send the status and headers only with the first
      token, instead of at once (as vLLM does).
    - ``reject_stream_options``: answer 400 to requests with ``stream_options``,
      like servers that do not know it.
    - ``stamp_chunks``: every streamed chunk carries ``"lab_t_ns"``, the server's
      ``time.perf_counter_ns()`` when it wrote the chunk, and responses carry
      ``x-lab-start-ns``, the origin of the request's schedule (token ``k`` is due at
      origin + reservation + prefill + ``k``·decode). Linux's ``CLOCK_MONOTONIC`` is
      shared by every process, so a client can compare these with its own clock.
    - ``write_log``: a file the lab appends a line to as each stream ends: the
      request's ``X-Request-ID`` and the ``perf_counter_ns`` just after each token's
      write, the server's own account of its pacing, to check a client's reading
      against without a packet capture (and without the bytes ``stamp_chunks`` adds
      to every chunk); and the prompt and output tokens it counted, what a provider
      would bill whether or not the response told them.
    - ``api_key``: when set, requests need ``Authorization: Bearer <api_key>``.
    - ``keep_alive``: when False, every response says ``Connection: close`` and the
      server closes the connection after it, as some proxies do; each request then
      pays DNS, TCP and TLS again.
    - ``extra_headers``: (name, value) pairs every response carries, as a server or
      gateway might add them (``X-Accel-Buffering: no`` asks a proxy in front not to
      buffer the stream).
    - ``timing_forms``: the :class:`TimingForm` s the endpoint tells its own timing in
      (``Server-Timing`` alone by default; ``()`` tells none).
    - ``usage_shape``: the :class:`UsageShape` the chat and completions routes word
      their usage in (OpenAI's by default).
    - ``seed``: seeds the jitter, the stall and fault draws, the background load and
      the tokens per event.

    How the stream is written:

    - ``tokens_per_event``: output tokens each streamed event carries (as a server
      that flushes every few tokens: vLLM's ``--stream-interval``, a gateway that
      re-chunks). An event carries its tokens' text and is written when its last
      token is due, so its first token waits for the rest; ``usage`` counts every
      token. Chat and completions put the tokens in one chunk; the other APIs write
      their tokens' events together (:mod:`latdoc.lab.sim._writers`). An event never
      spans the start of the answer after reasoning, the token a stall follows or the
      one a stream fault strikes at: those cut it short.
    - ``tokens_per_event_max``: when set, each event carries a seeded draw, uniform
      from ``tokens_per_event`` to this many tokens (an irregular server).
    - ``reasoning_in_text``: chat and completions stream a reasoning model's thinking as
      answer text, ``<think>`` before its first token and ``</think>`` and a blank line
      after its last (as MiniMax does unless asked for ``reasoning_split``, and a vLLM
      served without a reasoning parser), not as ``delta.reasoning_content``; its
      timing and its usage are a reasoning stream's all the same.
    - ``keepalive_comment_ms``: a streamed server-sent-event answer gets its status
      and headers at once, before its slot, and then an SSE comment line
      ``: keep-alive`` every that many ms while it waits for a slot (as DeepSeek's API
      does while a request waits to be scheduled); none once it has one, through its
      reservation and prefill. The client's first byte then comes at once and the
      wait shows only between the first byte and the first token. The
      ``Server-Timing`` header, sent before the wait, then tells the time per token
      only (the queue and prefill are in the ``lab`` truth object), and there is no
      ``x-lab-start-ns``. ``0`` (the default): none, and headers as set above. Needs
      the headers at once (not ``headers_after_prefill``).

    Input length:

    - ``max_context_tokens``: prompt + requested output past it is a 400 with code
      ``context_length_exceeded``; a request that names no output length gets
      ``default_max_tokens`` clipped to what the context leaves.

    Model service:

    - ``slots``: requests served at once (``None``: unlimited). A request holds a
      slot from the start of its prefill to its last token; others wait first come,
      first served.
    - ``load_profile``: the fraction of the slots busy with simulated background
      requests in each equal part of a ``day_seconds`` day (e.g. ``(0.1, 0.9)``: a
      quiet half, then a busy half). The day repeats from the server's start, or from
      the wall-clock instant ``day_origin`` (seconds since the Unix epoch; ``0``: the
      parts fall where a clock's hours do, so a report that cuts its cycle from the
      epoch sees each part whole). Each slot has a background user who holds a slot
      for an exponential time of mean ``background_request_ms``, rests, and asks
      again, queueing with everyone else, so that it holds one that fraction of the
      time. Needs ``slots``.
    - ``prefix_cache``: prompts are cut into blocks of ``prefix_block_tokens`` lab
      tokens, chained by hash as vLLM does; the leading blocks seen in a recent
      prompt (LRU of ``prefix_cache_blocks`` blocks) skip prefill. At least one
      prompt token is always computed.
    - ``stall_after_token``, ``stall_ms``, ``stall_rate``: after that many output
      tokens the stream pauses ``stall_ms``, in a request drawn with probability
      ``stall_rate``.

    Failures:

    - ``fault``, ``fault_rate``: the :class:`Fault` a request gets, with that
      probability; a request header ``x-lab-fault: <name>`` (or ``none``) overrides
      both for one request.
    - ``fault_after_tokens``: output tokens sent before ``reset``, ``truncate`` and
      ``malformed`` strike.
    - ``retry_after_s``: the ``Retry-After`` of a ``429``.
    - ``base_resp_code``: the ``status_code`` of a ``base-resp`` fault (1002, MiniMax's
      rate limit; 1004 its refused key, 1008 an empty balance, 1000 its unknown error).
    - ``drip_interval_ms``: the pause between bytes of a ``drip``.
    - ``hang_s``: how long a ``hang`` holds the connection before giving up (504).
    """

    model: str = "lab-sim"
    latency: LatencyModel = field(default_factory=LatencyModel)
    alt_models: Mapping[str, LatencyModel] = field(default_factory=dict)
    wrong_models: tuple[str, ...] = ()
    default_max_tokens: int = 32
    answer_tokens: int | None = None
    headers_after_prefill: bool = False
    reject_stream_options: bool = False
    stamp_chunks: bool = False
    write_log: str | None = None
    api_key: str | None = None
    keep_alive: bool = True
    extra_headers: tuple[tuple[str, str], ...] = ()
    timing_forms: tuple[TimingForm, ...] = (TimingForm.SERVER_TIMING,)
    usage_shape: UsageShape = UsageShape.OPENAI
    seed: int | None = None
    tokens_per_event: int = 1
    tokens_per_event_max: int | None = None
    keepalive_comment_ms: float = 0.0
    reasoning_in_text: bool = False
    max_context_tokens: int | None = None
    slots: int | None = None
    load_profile: tuple[float, ...] = ()
    day_seconds: float = 60.0
    day_origin: float | None = None
    background_request_ms: float = 1000.0
    prefix_cache: bool = False
    prefix_block_tokens: int = 16
    prefix_cache_blocks: int = 4096
    stall_after_token: int | None = None
    stall_ms: float = 0.0
    stall_rate: float = 1.0
    fault: Fault | None = None
    fault_rate: float = 1.0
    fault_after_tokens: int = 3
    retry_after_s: int = 1
    base_resp_code: int = 1002
    drip_interval_ms: float = 2.0
    hang_s: float = 300.0

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a non-empty string")
        if self.default_max_tokens < 1:
            raise ValueError(f"default_max_tokens must be >= 1, got {self.default_max_tokens}")
        self._check_alt_models()
        for name in self.wrong_models:
            if name not in self.models:
                raise ValueError(f"wrong_models names {name!r}, a model not served")
        for form in self.timing_forms:
            if not isinstance(form, TimingForm):
                raise ValueError(f"timing_forms must hold TimingForms, got {form!r}")
        if not isinstance(self.usage_shape, UsageShape):
            raise ValueError(f"usage_shape must be a UsageShape, got {self.usage_shape!r}")
        for header, text in self.extra_headers:
            if not header or ":" in header or any(c in header + text for c in "\r\n"):
                raise ValueError(f"extra header {header!r}: {text!r} is not a valid header")
        for name, minimum in (
            ("answer_tokens", 1),
            ("max_context_tokens", 1),
            ("slots", 1),
            ("prefix_block_tokens", 1),
            ("prefix_cache_blocks", 1),
            ("stall_after_token", 1),
            ("fault_after_tokens", 0),
            ("retry_after_s", 0),
            ("base_resp_code", 1),
            ("tokens_per_event", 1),
        ):
            check_at_least(self, name, minimum)
        check_at_least(self, "tokens_per_event_max", self.tokens_per_event)
        check_finite(self, ("stall_ms", "drip_interval_ms", "keepalive_comment_ms"))
        if self.keepalive_comment_ms > 0 and self.headers_after_prefill:
            raise ValueError(
                "keepalive_comment_ms needs the headers at once: it cannot go with "
                "headers_after_prefill"
            )
        check_finite(self, ("day_seconds", "background_request_ms", "hang_s"), positive=True)
        if self.day_origin is not None:
            check_finite(self, ("day_origin",))
        check_rate(self, "stall_rate")
        check_rate(self, "fault_rate")
        if self.fault is not None and not isinstance(self.fault, Fault):
            raise ValueError(f"fault must be a Fault, got {self.fault!r}")
        if self.load_profile:
            if self.slots is None:
                raise ValueError("load_profile needs slots: background requests take slots")
            for value in self.load_profile:
                if not (math.isfinite(value) and 0 <= value <= 1):
                    raise ValueError(f"load_profile values must be between 0 and 1, got {value!r}")
        if self.stall_ms > 0 and self.stall_after_token is None:
            raise ValueError("stall_ms needs stall_after_token: the token the stall follows")

    def __hash__(self) -> int:
        # alt_models is a dict, so the generated hash would fail; hash its items.
        values = (getattr(self, f.name) for f in fields(self))
        return hash(tuple(frozenset(v.items()) if isinstance(v, Mapping) else v for v in values))

    def _check_alt_models(self) -> None:
        for name, latency in self.alt_models.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"alt_models names must be non-empty strings, got {name!r}")
            if name == self.model:
                raise ValueError(f"alt_models must not name the default model {name!r}")
            if not isinstance(latency, LatencyModel):
                raise ValueError(f"alt_models[{name!r}] must be a LatencyModel, got {latency!r}")

    @property
    def models(self) -> tuple[str, ...]:
        """Every model id served: ``model``, then ``alt_models`` in their order."""
        return (self.model, *self.alt_models)

    def latency_for(self, model: str) -> LatencyModel:
        """The timing of requests for ``model``; ``KeyError`` for a model not served."""
        return self.latency if model == self.model else self.alt_models[model]

    @property
    def extended(self) -> bool:
        """Whether any knob beyond the basic latency model is set.

        Responses of an extended endpoint carry the ``lab`` truth object.
        """
        latency = self.latency
        return (
            bool(self.alt_models)
            or latency.reserve_ms_per_1k_max_tokens > 0
            or any(m.batch_slowdown > 0 for m in (latency, *self.alt_models.values()))
            or self.max_context_tokens is not None
            or self.slots is not None
            or self.prefix_cache
            or self.stall_after_token is not None
            or self.fault is not None
            or (latency.kv_threshold_tokens is not None and latency.kv_penalty != 1.0)
        )
