"""``latdoc run PLAN.toml``: a team's latency checks kept in its repository as a file
(:mod:`latdoc.features.run` reads, checks and runs it).

A step is written under the command line's own option names, so the names come from
the parsers here, and every step is read by its command's own parser before the first
sends anything: a mistake anywhere in the plan is one error naming its step and nothing
is sent. Each step then runs as the command line it stands for: the command's parser
and its ``main`` are given to :func:`run` by the command line that holds this module,
which it does not import back.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from latdoc.cli._options import EXIT_OK, add_store_argument
from latdoc.errors import UsageError, message_of
from latdoc.features.run import STEP_COMMANDS, URL, OptionName, PlannedStep, read_plan, run_plan
from latdoc.i18n import Message


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "run",
        help="run the latency checks a TOML plan file lists: diagnose, load, verify, watch",
        description="Read PLAN.toml: an [endpoint] table given to every step, and [[steps]], "
        "each a command (probe, diagnose, load, verify, watch) with its options under their "
        "command-line names. Every step is checked before the first sends anything.",
    )
    p.add_argument("plan", metavar="PLAN.toml", help="the plan file")
    p.add_argument("--dry-run", action="store_true", help="check the plan and print its steps")
    p.add_argument(
        "--stop-on-failure", action="store_true", help="stop at the first step that fails"
    )
    add_store_argument(p)


Main = Callable[[Sequence[str]], int]
"""The command line's ``main``: runs one command line, says how it ended."""
BuildParser = Callable[[Collection[str]], argparse.ArgumentParser]
"""The command line's ``build_parser``: its parser with the whole parsers of the commands
named."""


def run(args: argparse.Namespace, main: Main, build_parser: BuildParser) -> int:
    path = Path(args.plan)
    parsers = _command_parsers(build_parser)
    names = {command: _option_names(parser) for command, parser in parsers.items()}
    steps = read_plan(path, names, db=args.db)
    for step in steps:
        try:
            parsers[step.command].parse_args(step.argv[1:])
        except UsageError as exc:
            raise UsageError(
                Message(
                    "{path}: step {number} ({command}): {exc}",
                    path=path,
                    number=step.number,
                    command=step.command,
                    exc=message_of(exc),
                )
            ) from None
    if args.dry_run:
        for step in steps:
            print(step.shown())
        return EXIT_OK

    def announce(step: PlannedStep, count: int) -> None:
        print(f"Step {step.number} of {count}: {step.shown()}", file=sys.stderr, flush=True)

    return run_plan(
        steps,
        lambda step: main(list(step.argv)),
        stop_on_failure=args.stop_on_failure,
        on_step=announce,
    )


def _command_parsers(build_parser: BuildParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each command a step may run."""
    parser = build_parser(set(STEP_COMMANDS))
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {command: sub.choices[command] for command in STEP_COMMANDS}


def _option_names(parser: argparse.ArgumentParser) -> dict[str, OptionName]:
    """Every name a plan may give an option of ``parser``: its long and short flags without
    their dashes, and its dest name with ``_`` or ``-``.

    A flag's name is its option's before any dest name is; a dest name two options share
    (``--reuse`` and ``--new-connection-each``) names neither.
    """
    actions = [
        a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]
    by_dest: dict[str, list[OptionName]] = {}
    names: dict[str, OptionName] = {"url": URL}
    for action in actions:
        long = [s for s in action.option_strings if s.startswith("--")]
        option = (long or action.option_strings)[0]
        for name in {action.dest, action.dest.replace("_", "-")}:
            by_dest.setdefault(name, []).append(OptionName(option, option))
        for flag in action.option_strings:
            names[flag.lstrip("-")] = OptionName(option, flag if flag in long else option)
    shared = {name for name, found in by_dest.items() if len(found) > 1}
    return {name: found[0] for name, found in by_dest.items() if name not in shared} | names
