"""The ``latdoc verify`` (or ``watch``) command that measures a remedy on the endpoint.

A remedy whose gain this run could not measure names the experiment that would:
``latdoc verify ENDPOINT --model MODEL --remedy R [options]``, its options computed
from this run. Values only the user knows are written as capitalised placeholders
(``URL2``, ``NAME``).
"""

from __future__ import annotations

import shlex

from latdoc.i18n import N_, Message
from latdoc.model import RunContext

# The remedies the advice names by their ``latdoc verify --remedy`` name, each written
# once: the experiment that measures it takes its name from here, and a test holds every
# name here to an experiment of the registry.
VERIFY_KEEPALIVE = "keepalive"
VERIFY_HTTP2 = "http2"
VERIFY_POOL = "pool"
VERIFY_TRIM = "trim"
VERIFY_CONVERSATION = "conversation"
VERIFY_MAX_TOKENS = "max-tokens"
VERIFY_PROMPT_CACHE = "prompt-cache"
VERIFY_RETRY = "retry"
VERIFY_ENDPOINT = "endpoint"
VERIFY_MODEL = "model"
VERIFY_REASONING_EFFORT = "reasoning-effort"
VERIFY_DIRECT = "direct"
VERIFY_PROXY = "proxy"

_NAMED = frozenset(v for k, v in dict(globals()).items() if k.startswith("VERIFY_"))
"""The names above, read from them: what :func:`verify_command` accepts."""

CHANGES_ANSWERS = frozenset({VERIFY_MODEL, VERIFY_TRIM, VERIFY_MAX_TOKENS, VERIFY_REASONING_EFFORT})
"""The remedies whose arm B may answer differently, not only sooner, and whose experiment
takes the user's own checks (``latdoc verify --check``): their advice names it
(:func:`checked`). A summarised conversation changes answers too, but its experiment
runs its own strategies and takes no checks."""

CHECK_ANSWERS = N_(
    "Check the answers too: add --check FILE (your own cases, JSON Lines) to the verify "
    "command to compare both arms' pass rates."
)
"""A remedy's effects say how its answers may change; this says how to see whether they
did."""


def checked(change: str, command: str | None) -> str:
    """The ``change`` of a remedy in :data:`CHANGES_ANSWERS`, with :data:`CHECK_ANSWERS`
    on a line of its own where the remedy names its verify ``command``."""
    return change if command is None else Message.joined("\n", [change, CHECK_ANSWERS])


CONVERSATION_STRATEGIES = "window:6,summary:10,reset:20"
"""Keep the last 6 turns; summarise beyond 10; start afresh every 20 (the seed's numbers)."""


def verify_command(ctx: RunContext, remedy: str, **options: object) -> str:
    """``latdoc verify`` for ``remedy`` (one of the ``VERIFY_`` names above) on ``ctx``'s
    endpoint, with the ``--provider`` preset the run sent with (its key, its quirks),
    options in the order given (``pool_size=20`` becomes ``--pool-size 20``)."""
    if remedy not in _NAMED:
        raise ValueError(f"latdoc verify has no remedy {remedy!r}")
    words = ["latdoc", "verify", ctx.endpoint, "--model", ctx.model]
    if ctx.preset is not None:
        words += ["--provider", ctx.preset.name]
    words += ["--remedy", remedy]
    for name, value in options.items():
        words += ["--" + name.replace("_", "-"), str(value)]
    return _command(words)


WATCH_NAME = "peak"
"""The watch name the queueing remedy's commands use."""


def watch_command(ctx: RunContext) -> str:
    """``latdoc watch`` of ``ctx``'s endpoint every 15 minutes for a day, named
    :data:`WATCH_NAME`: the data of the peak against off-peak comparison."""
    words = ["latdoc", "watch", ctx.endpoint, "--model", ctx.model, "--name", WATCH_NAME]
    words += ["--every", "15m", "--duration", "24h"]
    return _command(words)


def _command(words: list[str]) -> str:
    """A command line a shell reads back as ``words``."""
    return " ".join(shlex.quote(w) for w in words)
