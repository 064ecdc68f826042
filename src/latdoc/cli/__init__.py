"""The ``latdoc`` command: parse, call one library function, render, exit.

One module per command family (``probe``, ``diagnose`` with ``runs`` and
``report``, ``verify`` with ``compare``, ``load``, ``watch`` with ``report --watch``,
``system``, ``providers``, ``lab``); what they parse alike is
in ``_options``. A user mistake prints one ``Error: …`` line and exits 2; a failed
request prints one ``Error: …`` line naming the phase and the cause, and the run goes
on (exit 1 at the end). A traceback means a bug in latdoc.

Only the family of the command that runs is imported: ``_COMMANDS`` names every
command with its one-line help, which is all ``latdoc --help`` shows of it, so
``--help`` and ``--version`` import none of them. ``latdoc lab`` needs the
``[lab]`` extra and says how to install it when it is missing.
"""

from __future__ import annotations

import argparse
import sys

from latdoc.cli._parser import EXIT_INTERRUPTED, EXIT_OK, EXIT_REQUEST_FAILED, EXIT_USAGE, Parser

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING``, without importing typing, which ``--version`` does not need."""
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence
    from typing import Any, TypeAlias

    _Run: TypeAlias = Callable[[argparse.Namespace], int]
    _Family: TypeAlias = tuple[
        Callable[[argparse._SubParsersAction[Any]], None], Mapping[str, _Run]
    ]
    """The commands of one module: what adds their parsers, and what runs each of them."""

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REQUEST_FAILED",
    "EXIT_USAGE",
    "build_parser",
    "main",
]


def _probe() -> _Family:
    from latdoc.cli import probe

    return (probe.add_parser, {"probe": probe.run})


def _diagnose() -> _Family:
    from latdoc.cli import diagnose

    runs = {"diagnose": diagnose.run_diagnose, "runs": diagnose.run_runs}
    return (diagnose.add_parsers, runs)


def _report() -> _Family:
    from latdoc.cli import report

    return (report.add_parser, {"report": report.run})


def _verify() -> _Family:
    from latdoc.cli import verify

    return (verify.add_parsers, {"compare": verify.run_compare, "verify": verify.run_verify})


def _exchange() -> _Family:
    from latdoc.cli import exchange

    return (exchange.add_parsers, {"export": exchange.run_export, "import": exchange.run_import})


def _plan() -> _Family:
    from latdoc.cli import plan

    # The plan's steps run as command lines: it is given this module's parser and main,
    # and imports neither.
    return (plan.add_parser, {"run": lambda args: plan.run(args, main, build_parser)})


def _load() -> _Family:
    from latdoc.cli import load

    return (load.add_parser, {"load": load.run})


def _watch() -> _Family:
    from latdoc.cli import watch

    return (watch.add_parser, {"watch": watch.run})


def _system() -> _Family:
    from latdoc.cli import system

    return (system.add_parser, {"system": system.run})


def _providers() -> _Family:
    from latdoc.cli import providers

    return (providers.add_parser, {"providers": providers.run})


def _serve() -> _Family:
    from latdoc.cli import serve

    return (serve.add_parser, {"serve": serve.run})


def _record() -> _Family:
    from latdoc.cli import record

    return (record.add_parser, {"record": record.run})


def _lab() -> _Family:
    from latdoc.cli._lab_extra import require_lab

    require_lab("latdoc lab")
    from latdoc.cli import lab

    return (lambda sub: lab.add_lab_parser(sub, Parser), {"lab": lab.run_lab})


_COMMANDS: dict[str, tuple[str, Callable[[], _Family]]] = {
    "probe": ("time every phase of streamed completion requests", _probe),
    "diagnose": ("which kind of slow is it: network, model service or input length", _diagnose),
    "runs": ("list stored diagnosis runs", _diagnose),
    "report": ("re-render a stored run without sending anything", _report),
    "export": ("every request of a stored run as one row: JSON Lines, CSV or Parquet", _exchange),
    "import": ("add a run exported by `latdoc export --format jsonl` to a store", _exchange),
    "compare": ("compare two stored runs: medians, intervals, significance", _verify),
    "verify": ("measure whether a remedy works: an A/B experiment on the endpoint", _verify),
    "load": ("latency and throughput against load: the knee, the plateau, goodput", _load),
    "watch": ("measure the endpoint on a schedule, to see how it changes across the day", _watch),
    "run": (
        "run the latency checks a TOML plan file lists: diagnose, load, verify, watch",
        _plan,
    ),
    "system": (
        "the client host as a checklist: TCP sysctls, limits, pool size, HTTP/2, TLS, proxies",
        _system,
    ),
    "providers": (
        "the --provider presets: API, base URL, key variable, whether it is set, quirks",
        _providers,
    ),
    "serve": (
        "the store as a local web app: every run, its verdict and plots, live runs",
        _serve,
    ),
    "record": ("a local gateway that times every call an application makes through it", _record),
    "lab": ("the lab: endpoints with known latency", _lab),
}
"""Every command in ``--help``'s order, with its one-line help and the family that has it."""


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """``latdoc``'s parser, with the whole parsers of ``commands``' families (all when None).

    Every other command is there by its name and one-line help only, as
    ``latdoc --help`` lists it, and nothing of its module is imported.
    """
    from latdoc._version import __version__

    parser = Parser(
        prog="latdoc",
        description="Which kind of slow is your LLM API call? Time every phase of a "
        "streaming request and attribute the latency.",
    )
    parser.add_argument("--version", action="version", version=f"latdoc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    wanted = {
        family for name, (_, family) in _COMMANDS.items() if commands is None or name in commands
    }
    added: set[Callable[[], _Family]] = set()
    for name, (one_line, family) in _COMMANDS.items():
        if family not in wanted:
            sub.add_parser(name, help=one_line)
        elif family not in added:
            add, _ = family()
            add(sub)
            added.add(family)
    return parser


def _named(arguments: Sequence[str]) -> list[str]:
    """The command the arguments name (the first that is not an option), if it is one."""
    first = next((a for a in arguments if not a.startswith("-")), None)
    return [first] if first in _COMMANDS else []


_KEEPS_A_RUN = frozenset({"diagnose", "load", "watch", "verify", "probe", "run"})
"""The long commands that keep a run: SIGTERM stops them as Ctrl-C does."""


def _sigterm_as_ctrl_c(signum: int, frame: Any) -> None:
    """Stop as Ctrl-C stops: through the SIGINT handler in place (asyncio's cancels the
    running task), or as Python's own when SIGINT is ignored (a background job)."""
    import signal

    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        signal.default_int_handler(signal.SIGINT, frame)


def _stop_on_sigterm(command: str) -> None:
    import signal
    import threading

    if command in _KEEPS_A_RUN and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm_as_ctrl_c)


def _language(arguments: Sequence[str]) -> str:
    """The language the command speaks: ``--lang``'s, read before the parser (so that its
    own errors are said in it; a value it does not know is left to the parser to refuse),
    else ``LATDOC_LANG``'s or a Chinese locale's (:func:`latdoc.i18n.language_from`),
    else English."""
    import os

    from latdoc.i18n import LANGUAGES, Message, language_from

    for i, argument in enumerate(arguments):
        if argument == "--":
            break
        asked = argument.removeprefix("--lang=") if argument.startswith("--lang=") else None
        if argument == "--lang" and i + 1 < len(arguments):
            asked = arguments[i + 1]
        if asked in LANGUAGES:
            return asked
    asked = language_from(os.environ)
    if asked is None:
        return "en"
    if asked not in LANGUAGES:
        from latdoc.errors import UsageError

        raise UsageError(
            Message("LATDOC_LANG is {asked!r}: latdoc speaks {languages}", asked=asked,
                    languages=", ".join(LANGUAGES))
        )  # fmt: skip
    return asked


def _said(exc: BaseException) -> str:
    """An error's message in the language spoken: its :class:`~latdoc.i18n.Message` (or
    plain text) translated, where the error's message is its one argument."""
    from latdoc.errors import message_of
    from latdoc.i18n import translate

    return translate(message_of(exc))


def _error_line(said: str) -> str:
    from latdoc.i18n import Message, translate

    return translate(Message("Error: {error}", error=said))


def main(argv: Sequence[str] | None = None) -> int:
    from latdoc import i18n

    arguments = sys.argv[1:] if argv is None else list(argv)
    spoken = i18n.language()
    try:
        i18n.use_language(_language(arguments))
        args = build_parser(_named(arguments)).parse_args(arguments)
        if getattr(args, "lang", None) is not None:
            i18n.use_language(args.lang)
        _, family = _COMMANDS[args.command]
        _, runs = family()
        if argv is None:
            _stop_on_sigterm(args.command)
        return runs[args.command](args)
    except KeyboardInterrupt:
        print(i18n.gettext("Interrupted."), file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        # latdoc's errors are imported only when one is raised: --version never needs them.
        import sqlite3

        from latdoc.errors import LatdocError, UsageError

        if isinstance(exc, sqlite3.Error):
            # The store failed under a command (a full disk): said in a line, not a trace.
            said = i18n.Message("the latdoc store could not be used: {error}", error=str(exc))
            print(_error_line(said), file=sys.stderr)
            return EXIT_REQUEST_FAILED
        if not isinstance(exc, LatdocError):
            raise
        print(_error_line(_said(exc)), file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_REQUEST_FAILED
    finally:
        # A caller that runs several commands in one process (a plan, a test) speaks its
        # own language again after each.
        i18n.use_language(spoken)
