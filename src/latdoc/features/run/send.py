"""What a plan sends: its file read and checked, each step as the command line it
stands for.

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

A value ``true`` is the flag itself, ``false`` leaves it out. The names each command's
options go by (:class:`OptionName`) come from the command line, which reads them off its
own parsers; :func:`read_plan` turns the file into :class:`PlannedStep` argument lists,
or one :class:`~latdoc.errors.UsageError` naming the file and the step.
"""

from __future__ import annotations

import difflib
import json
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latdoc.errors import UsageError, nesting_checked
from latdoc.i18n import Message

STEP_COMMANDS = ("probe", "diagnose", "load", "verify", "watch")
"""The commands a plan's step may run: those that send requests to the endpoint."""
ENDPOINT_KEYS = frozenset(
    {"url", "model", "provider", "api", "extra-body", "http2", "cacert", "insecure",
     "api-key-env", "timeout"}
)  # fmt: skip
"""What ``[endpoint]`` may hold: the options every sending command shares."""


@dataclass(frozen=True)
class OptionName:
    """What a name in a plan stands for: the option (its first long flag), and the flag
    to write for it (the name itself when it is a long flag of the option)."""

    option: str
    flag: str


URL = OptionName("url", "url")
"""The positional base URL, which a plan names ``url``."""

OptionNames = Mapping[str, Mapping[str, OptionName]]
"""Every name a plan may give an option, per command a step may run."""


@dataclass(frozen=True)
class PlannedStep:
    """One step of a plan: its number (from 1), its command and the command line it
    stands for (the command first)."""

    number: int
    command: str
    argv: tuple[str, ...]

    def shown(self) -> str:
        """The step as a shell command: ``latdoc load URL --concurrency 1,4``."""
        return shlex.join(["latdoc", *self.argv])


@dataclass(frozen=True)
class _Given:
    """An option's value as the plan gives it, with the name it is given under."""

    key: str
    flag: str
    value: Any


def read_plan(path: Path, names: OptionNames, *, db: str | None = None) -> list[PlannedStep]:
    """The steps of the plan at ``path``, each as the command line it stands for, every
    name looked up in ``names``; ``db``, when given, is every step's ``--db`` unless the
    step names its own."""
    plan = _load(path)
    unknown = set(plan) - {"endpoint", "steps"}
    if unknown:
        raise UsageError(
            Message(
                "{path}: unknown table or key {unknown}: a plan has [endpoint] and [[steps]]",
                path=path,
                unknown=", ".join(sorted(unknown)),
            )
        )
    endpoint = plan.get("endpoint", {})
    if not isinstance(endpoint, dict):
        raise UsageError(Message("{path}: endpoint must be a table ([endpoint])", path=path))
    shared = {
        key: name
        for key, name in names[STEP_COMMANDS[0]].items()
        if name.option.removeprefix("--") in ENDPOINT_KEYS | {"url"}
    }
    extra = set(endpoint) - set(shared)
    if extra:
        raise UsageError(
            Message(
                "{path}: [endpoint] {extra}: it holds what every step shares ({keys}); put "
                "the rest in a step",
                path=path,
                extra=", ".join(sorted(extra)),
                keys=", ".join(sorted(ENDPOINT_KEYS)),
            )
        )
    steps = plan.get("steps")
    if not isinstance(steps, list) or not steps:
        raise UsageError(
            Message("{path}: no steps: add [[steps]] tables, each with a command", path=path)
        )
    given = _options(endpoint, shared, f"{path}: [endpoint]")
    return [_step(path, number, step, names, given, db) for number, step in enumerate(steps, 1)]


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            Message("cannot read {path}: {strerror}", path=path, strerror=exc.strerror)
        ) from None
    except UnicodeDecodeError as exc:
        raise UsageError(
            Message("{path}: not UTF-8 text ({reason})", path=path, reason=exc.reason)
        ) from None
    try:
        with nesting_checked(str(path)):
            return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(Message("{path}: {exc}", path=path, exc=exc)) from None


def _step(
    path: Path,
    number: int,
    step: object,
    names: OptionNames,
    given: Mapping[str, _Given],
    db: str | None,
) -> PlannedStep:
    if not isinstance(step, dict):
        raise UsageError(
            Message("{path}: step {number} must be a table ([[steps]])", path=path, number=number)
        )
    where = Message("{path}: step {number}", path=str(path), number=number)
    command = step.get("command")
    if command not in STEP_COMMANDS:
        raise UsageError(
            Message(
                "{where}: command {command!r}: use one of {commands}",
                where=where,
                command=command,
                commands=", ".join(STEP_COMMANDS),
            )
        )
    options = _options(
        {k: v for k, v in step.items() if k != "command"},
        names[command],
        Message("{where} ({command})", where=where, command=command),
    )
    clash = sorted(options[o].key for o in options if o in given)
    if clash:
        raise UsageError(
            Message(
                "{where}: {clash} is in [endpoint] already", where=where, clash=", ".join(clash)
            )
        )
    if db is not None:
        options.setdefault("--db", _Given("db", "--db", db))
    argv = [command, *_arguments({**given, **options}, where)]
    return PlannedStep(number, command, tuple(argv))


def _options(
    given: Mapping[str, Any], names: Mapping[str, OptionName], where: str
) -> dict[str, _Given]:
    """The ``given`` values keyed by the option each name stands for: a name no option has,
    or two names of one option, is an error naming ``where``."""
    options: dict[str, _Given] = {}
    for key, value in given.items():
        name = names.get(key)
        if name is None:
            near = difflib.get_close_matches(key, names, n=1)
            hint = Message(" (did you mean {near}?)", near=near[0]) if near else ""
            raise UsageError(
                Message(
                    "{where}: no option is named {key}{hint}",
                    where=where,
                    key=key,
                    hint=Message.of(hint),
                )
            )
        if name.option in options:
            first = options[name.option].key
            raise UsageError(
                Message(
                    "{where}: {first} and {key} name the same option ({option})",
                    where=where,
                    first=first,
                    key=key,
                    option=name.option,
                )
            )
        options[name.option] = _Given(key, name.flag, value)
    return options


def _arguments(options: Mapping[str, _Given], where: str) -> list[str]:
    argv: list[str] = []
    url = options.get(URL.option)
    if url is not None:
        if not isinstance(url.value, str):
            raise UsageError(Message("{where}: url must be a string", where=where))
        argv.append(url.value)
    for option, given in options.items():
        if option == URL.option:
            continue
        if given.value is True:
            argv.append(given.flag)
        elif given.value is False:
            continue
        else:
            argv += [
                given.flag,
                _text(given.value, Message("{where}: {key}", where=where, key=given.key)),
            ]
    return argv


def _text(value: Any, where: str) -> str:
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
    raise UsageError(
        Message(
            "{where} = {shown}: give a string, a number, true/false or a list of them",
            where=where,
            shown=shown,
        )
    )
