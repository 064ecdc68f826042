"""The lab's real engine: llama.cpp's server on SmolLM2-135M, measured by the real probe.

One engine serves the whole module (starting it loads the model). The prefill
curve, queueing on one slot, and the server's own token counts are checked
against the probe's traces; the attribution's prefill against llama.cpp's own
accounting (its ``timings`` and its ``/metrics`` counter), and a queue on one slot
against the attribution's queueing. Prompts of an exact length are sized with the engine's
own tokenizer: its chat template (``/apply-template``) then ``/tokenize``, which
counts what a request is charged. Timing checks take the fastest of two
interleaved samples, so a burst of load on the machine does not decide them. The timed
tests run ``alone``: llama.cpp's threads take both cores, and another test beside them
stretches the engine's hand-offs between requests, which its own account leaves out.
Requests sample greedily and never stop early (:data:`GREEDY`), so each is the same
every run.
"""

from __future__ import annotations

import argparse

import pytest

from latdoc import (
    UsageError,
)
from latdoc.lab.command import add_parser, run


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--port", "70000"], "--port"),
        (["--slots", "0"], "--slots"),
        (["--slots", "4", "--ctx-size", "32"], "--ctx-size"),
        (["--threads", "0"], "--threads"),
    ],
)
def test_engine_command_rejects_bad_options(flags: list[str], message: str) -> None:
    parser = argparse.ArgumentParser(prog="latdoc")
    add_parser(parser.add_subparsers(dest="command"), argparse.ArgumentParser)
    with pytest.raises(UsageError, match=message):
        run(parser.parse_args(["lab", "engine", *flags]))
