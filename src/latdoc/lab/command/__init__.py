"""``latdoc lab``: the lab's own command line, ``serve``, ``net`` and ``engine``.

:func:`add_parser` adds ``lab`` and its commands to a command's subparsers (``latdoc``
adds it to its own); :func:`run` carries out the parsed command and returns its exit
code. A bad value or a bad combination of options raises
:class:`~latdoc.errors.UsageError` naming the flag; a lab that cannot start raises
:class:`~latdoc.errors.LabError`. The lab parses its own flags because it starts
processes of its own with their own command lines (``latdoc lab serve`` in a network
namespace).

- ``serve``: the simulated endpoint (:mod:`latdoc.lab.sim`), every knob of it a
  flag (``_serve_options``, a table per group), until Ctrl-C or SIGTERM. Every
  default is the config's own, so no flags serve ``LabConfig()``;
  :func:`config_from_args` is the :class:`~latdoc.lab.sim.LabConfig` the flags
  describe (``_serve``).
- ``net``: the impaired network (:mod:`latdoc.lab.net`), which outlives the
  command that starts it (``_net``).
- ``engine``: llama.cpp's server on the shipped model (:mod:`latdoc.lab.engine`)
  until Ctrl-C or SIGTERM (``_engine``).
"""

from __future__ import annotations

import argparse
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.lab.command._engine import add_engine_parser, run_engine
from latdoc.lab.command._net import add_net_parser, run_net
from latdoc.lab.command._serve import config_from_args
from latdoc.lab.command._serve_options import add_serve_arguments
from latdoc.lab.sim import serve_forever

__all__ = ["add_parser", "add_serve_arguments", "config_from_args", "run"]


def add_parser(
    sub: argparse._SubParsersAction[Any],
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> None:
    """Add ``lab`` with its ``serve``, ``net`` and ``engine`` commands to ``sub``.

    ``parser_class`` makes the parsers of the commands under ``lab`` (``latdoc``
    passes its own, which reports a parse error as a usage error).
    """
    lab = sub.add_parser("lab", help="the lab: endpoints with known latency")
    lab_sub = lab.add_subparsers(dest="lab_command", required=True, parser_class=parser_class)
    serve = lab_sub.add_parser(
        "serve", help="run the simulated OpenAI-compatible streaming endpoint"
    )
    add_serve_arguments(serve)
    add_net_parser(lab_sub)
    add_engine_parser(lab_sub)


def run(args: argparse.Namespace) -> int:
    """Carry out the parsed ``latdoc lab ...`` command; return the exit code."""
    command = args.lab_command
    if command == "serve":
        serve_forever(
            config_from_args(args),
            host=args.host,
            port=args.port,
            tls=args.tls,
            http2=args.http2,
            tls_names=args.tls_names,
        )
        return 0
    if command == "net":
        return run_net(args)
    if command == "engine":
        return run_engine(args)
    raise UsageError(Message("unknown command {command!r}", command=command))
