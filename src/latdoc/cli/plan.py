"""``latdoc run PLAN.toml``: a team's latency checks kept in its repository as a file.

A plan names an endpoint once and lists steps, each a command that sends (``probe``,
``diagnose``, ``load``, ``verify``, ``watch``) with its options under the names the
command line gives them (``max-tokens = 64`` is ``--max-tokens 64``; a short name such as
``n = 5`` or a dest name such as ``max_tokens`` names the same option)::

    [endpoint]                 # given to every step
    url = "https://api.example.com/v1"
    model = "my-model"
    api-key-env = "EXAMPLE_API_KEY"

    [[steps]]
    command = "diagnose"
    max-requests = 30

    [[steps]]
    command = "load"
    concurrency = [1, 4, 16]   # a list is the comma-separated value
    duration-per-level = "10s"
    fail-if = "ttft_p50 > +10%"
    baseline = "20261130-071502-a1b2c3"

A value ``true`` is the flag itself, ``false`` leaves it out. Every step is read by
the command's own parser before the first sends anything, so a mistake anywhere in
the plan is one error naming its step and nothing is sent. Steps then run in order;
the plan's exit status is the first failing step's (a failed gate, a failed request,
an interruption), and a step that fails does not stop the ones after it unless
``--stop-on-failure`` says so.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latdoc.cli._options import EXIT_INTERRUPTED, EXIT_OK, add_store_argument
from latdoc.errors import UsageError, nesting_checked

STEP_COMMANDS = ("probe", "diagnose", "load", "verify", "watch")
"""The commands a plan's step may run: those that send requests to the endpoint."""
ENDPOINT_KEYS = frozenset(
    {"url", "model", "provider", "api", "extra-body", "http2", "cacert", "insecure",
     "api-key-env", "timeout"}
)  # fmt: skip
"""What ``[endpoint]`` may hold: the options every sending command shares."""


@dataclass(frozen=True)
class PlannedStep:
    number: int
    command: str
    argv: tuple[str, ...]

    def shown(self) -> str:
        return shlex.join(["latdoc", *self.argv])


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


def run(args: argparse.Namespace) -> int:
    from latdoc.cli import main

    path = Path(args.plan)
    steps = read_plan(path, db=args.db)
    parsers = _command_parsers()
    for step in steps:
        try:
            parsers[step.command].parse_args(step.argv[1:])
        except UsageError as exc:
            raise UsageError(f"{path}: step {step.number} ({step.command}): {exc}") from None
    if args.dry_run:
        for step in steps:
            print(step.shown())
        return EXIT_OK
    status = EXIT_OK
    for step in steps:
        print(f"Step {step.number} of {len(steps)}: {step.shown()}", file=sys.stderr, flush=True)
        code = main(list(step.argv))
        if code == EXIT_INTERRUPTED:
            return code
        if code != EXIT_OK:
            status = status or code
            if args.stop_on_failure:
                break
    return status


def read_plan(path: Path, db: str | None = None) -> list[PlannedStep]:
    """The steps of the plan at ``path``, each as the command line it stands for."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason})") from None
    try:
        with nesting_checked(str(path)):
            plan = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: {exc}") from None
    unknown = set(plan) - {"endpoint", "steps"}
    if unknown:
        raise UsageError(f"{path}: unknown table or key {', '.join(sorted(unknown))}: a plan "
                         "has [endpoint] and [[steps]]")  # fmt: skip
    endpoint = plan.get("endpoint", {})
    if not isinstance(endpoint, dict):
        raise UsageError(f"{path}: endpoint must be a table ([endpoint])")
    parsers = _command_parsers()
    shared = {
        key: name
        for key, name in _option_names(parsers[STEP_COMMANDS[0]]).items()
        if name.option.removeprefix("--") in ENDPOINT_KEYS | {"url"}
    }
    extra = set(endpoint) - set(shared)
    if extra:
        raise UsageError(
            f"{path}: [endpoint] {', '.join(sorted(extra))}: it holds what every step shares "
            f"({', '.join(sorted(ENDPOINT_KEYS))}); put the rest in a step"
        )
    steps = plan.get("steps")
    if not isinstance(steps, list) or not steps:
        raise UsageError(f"{path}: no steps: add [[steps]] tables, each with a command")
    given = _options(endpoint, shared, f"{path}: [endpoint]")
    planned = []
    for number, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            raise UsageError(f"{path}: step {number} must be a table ([[steps]])")
        where = f"{path}: step {number}"
        command = step.get("command")
        if command not in STEP_COMMANDS:
            raise UsageError(f"{where}: command {command!r}: use one of {', '.join(STEP_COMMANDS)}")
        options = _options(
            {k: v for k, v in step.items() if k != "command"},
            _option_names(parsers[command]),
            f"{where} ({command})",
        )
        clash = sorted(options[o].key for o in options if o in given)
        if clash:
            raise UsageError(f"{where}: {', '.join(clash)} is in [endpoint] already")
        if db is not None:
            options.setdefault("--db", _Given("db", "--db", db))
        argv = [command, *_arguments({**given, **options}, where)]
        planned.append(PlannedStep(number, command, tuple(argv)))
    return planned


@dataclass(frozen=True)
class _Name:
    """What a name in a plan stands for: the option (its first long flag), and the flag
    to write for it (the name itself when it is a long flag of the option)."""

    option: str
    flag: str


@dataclass(frozen=True)
class _Given:
    """An option's value as the plan gives it, with the name it is given under."""

    key: str
    flag: str
    value: Any


_URL = _Name("url", "url")
"""The positional base URL, which a plan names ``url``."""


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    """The parser of each command a step may run."""
    from latdoc.cli import build_parser

    parser = build_parser(set(STEP_COMMANDS))
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {command: sub.choices[command] for command in STEP_COMMANDS}


def _option_names(parser: argparse.ArgumentParser) -> dict[str, _Name]:
    """Every name a plan may give an option of ``parser``: its long and short flags without
    their dashes, and its dest name with ``_`` or ``-``.

    A flag's name is its option's before any dest name is; a dest name two options share
    (``--reuse`` and ``--new-connection-each``) names neither.
    """
    actions = [
        a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]
    by_dest: dict[str, list[_Name]] = {}
    names: dict[str, _Name] = {"url": _URL}
    for action in actions:
        long = [s for s in action.option_strings if s.startswith("--")]
        option = (long or action.option_strings)[0]
        for name in {action.dest, action.dest.replace("_", "-")}:
            by_dest.setdefault(name, []).append(_Name(option, option))
        for flag in action.option_strings:
            names[flag.lstrip("-")] = _Name(option, flag if flag in long else option)
    shared = {name for name, found in by_dest.items() if len(found) > 1}
    return {name: found[0] for name, found in by_dest.items() if name not in shared} | names


def _options(given: Mapping[str, Any], names: Mapping[str, _Name], where: str) -> dict[str, _Given]:
    """The ``given`` values keyed by the option each name stands for: a name no option has,
    or two names of one option, is an error naming ``where``."""
    import difflib

    options: dict[str, _Given] = {}
    for key, value in given.items():
        name = names.get(key)
        if name is None:
            near = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"{where}: no option is named {key}{hint}")
        if name.option in options:
            first = options[name.option].key
            raise UsageError(f"{where}: {first} and {key} name the same option ({name.option})")
        options[name.option] = _Given(key, name.flag, value)
    return options


def _arguments(options: Mapping[str, _Given], where: str) -> list[str]:
    argv: list[str] = []
    url = options.get(_URL.option)
    if url is not None:
        if not isinstance(url.value, str):
            raise UsageError(f"{where}: url must be a string")
        argv.append(url.value)
    for option, given in options.items():
        if option == _URL.option:
            continue
        if given.value is True:
            argv.append(given.flag)
        elif given.value is False:
            continue
        else:
            argv += [given.flag, _text(given.value, f"{where}: {given.key}")]
    return argv


def _text(value: Any, where: str) -> str:
    import json

    if isinstance(value, str | int | float):
        return str(value)
    if (
        isinstance(value, Sequence)
        and value
        and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value)
    ):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    shown = json.dumps(value, default=str)
    raise UsageError(f"{where} = {shown}: give a string, a number, true/false or a list of them")
