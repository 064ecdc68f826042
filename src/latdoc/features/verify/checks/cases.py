"""The user's own checks, as ``latdoc verify --check FILE`` reads them: JSON Lines, one
:class:`CheckCase` a line, each a prompt and one expectation of its answer.

A case is an object with ``prompt`` (text) or ``messages`` (chat messages, each a
``role`` and a text ``content``), an optional ``id`` (else ``line N``) and
``max_tokens``, and exactly one expectation, a closed set (:data:`EXPECTATIONS`):

- ``contains``: the answer holds this text, exactly as written;
- ``regex``: this Python regular expression is found in the answer (``re.search``);
- ``json_schema``: the answer (less surrounding whitespace) parses as JSON, and the
  value is valid under this JSON Schema (its own ``$schema``, else the latest draft);
- ``equals``: the answer is this text, both read under :func:`normalise`;
- ``same_as_a: true``: arm B's answer is arm A's to the same case, both under
  :func:`normalise`; A agrees with itself, so only B is checked.

A file that cannot make checks (not JSON, a case with no expectation or two, a regex
that does not compile, a schema that is not one, no case at all) is a
:class:`~latdoc.errors.UsageError` naming the line and the fault, raised before
anything is sent. Blank lines are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from latdoc.errors import UsageError, nesting_checked
from latdoc.i18n import Message
from latdoc.probe import Prompt

NORMALISATION = "strip, collapse whitespace, case-fold"
"""What :func:`normalise` does, in the words the docs and the output use."""


def normalise(text: str) -> str:
    """``text`` stripped, every run of whitespace one space, and case-folded: an answer
    that differs from another only so is the same answer."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Contains:
    key: ClassVar[str] = "contains"
    text: str

    @classmethod
    def read(cls, value: object) -> Contains:
        return cls(_text(value, cls.key))

    def judge(self, answer: str, baseline: str | None) -> str | None:
        return None if self.text in answer else f"does not contain {self.text!r}"


@dataclass(frozen=True)
class Matches:
    key: ClassVar[str] = "regex"
    pattern: re.Pattern[str]

    @classmethod
    def read(cls, value: object) -> Matches:
        source = _text(value, cls.key)
        try:
            return cls(re.compile(source))
        except re.error as exc:
            raise ValueError(f"regex {source!r} does not compile: {exc}") from None

    def judge(self, answer: str, baseline: str | None) -> str | None:
        found = self.pattern.search(answer) is not None
        return None if found else f"no match for {self.pattern.pattern!r}"


@dataclass(frozen=True)
class FollowsSchema:
    key: ClassVar[str] = "json_schema"
    schema: Mapping[str, Any] | bool
    validator: Any
    """The ``jsonschema`` validator of :attr:`schema` (its draft's class)."""

    @classmethod
    def read(cls, value: object) -> FollowsSchema:
        from jsonschema import validators  # imported only where a case names a schema
        from jsonschema.exceptions import SchemaError

        if not isinstance(value, dict | bool):
            raise ValueError("json_schema must be a JSON Schema: an object (or true, false)")
        kind = validators.validator_for(value)
        try:
            kind.check_schema(value)
        except SchemaError as exc:
            raise ValueError(f"json_schema is not a valid JSON Schema: {exc.message}") from None
        return cls(value, kind(value))

    def judge(self, answer: str, baseline: str | None) -> str | None:
        try:
            value = json.loads(answer)
        except ValueError:
            return "not JSON"
        error = next(iter(self.validator.iter_errors(value)), None)
        return None if error is None else f"not valid under the schema: {error.message}"


@dataclass(frozen=True)
class Equals:
    key: ClassVar[str] = "equals"
    text: str

    @classmethod
    def read(cls, value: object) -> Equals:
        return cls(_text(value, cls.key))

    def judge(self, answer: str, baseline: str | None) -> str | None:
        return None if normalise(answer) == normalise(self.text) else f"is not {self.text!r}"


@dataclass(frozen=True)
class SameAsA:
    key: ClassVar[str] = "same_as_a"

    @classmethod
    def read(cls, value: object) -> SameAsA:
        if value is not True:
            raise ValueError("same_as_a must be true")
        return cls()

    def judge(self, answer: str, baseline: str | None) -> str | None:
        if baseline is None:
            raise ValueError("same_as_a is judged against A's answer")
        return None if normalise(answer) == normalise(baseline) else "differs from A's answer"


Expectation = Contains | Matches | FollowsSchema | Equals | SameAsA
"""What a case expects of its answer: each is read from the case's field named by its
``key``, and its ``judge(answer, baseline)`` says why an answer fails (``None``: it
passes), ``baseline`` being arm A's answer to the case."""

EXPECTATIONS = (Contains, Matches, FollowsSchema, Equals, SameAsA)
"""Every expectation a case may hold, by the field that names it."""

_KEYS = tuple(e.key for e in EXPECTATIONS)
_FIELDS = frozenset({"id", "prompt", "messages", "max_tokens", *_KEYS})


@dataclass(frozen=True)
class CheckCase:
    """One of the user's checks: what to ask, and what the answer must be."""

    id: str
    """The case's own ``id``, else ``line N``: what a failing case is named by."""
    line: int
    prompt: Prompt
    """The text, or the chat messages, to send."""
    expectation: Expectation
    max_tokens: int | None = None
    """Its own output limit; ``None``: the run's ``--max-tokens``."""

    @property
    def against_a(self) -> bool:
        """Whether the case is judged against A's answer (``same_as_a``): B alone is
        checked by it."""
        return isinstance(self.expectation, SameAsA)

    def judge(self, answer: str, baseline: str | None = None) -> str | None:
        """Why ``answer`` fails this case; ``None`` when it passes."""
        return self.expectation.judge(answer, baseline)


@dataclass(frozen=True)
class CheckFile:
    """The cases of one ``--check`` file, in its order."""

    source: str
    """The file, as the user named it."""
    cases: tuple[CheckCase, ...]


def read_checks(path: str | Path) -> CheckFile:
    """The cases of the JSON Lines file at ``path``; a
    :class:`~latdoc.errors.UsageError` naming the first line that cannot be one."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            Message("--check {path}: cannot read it: {exc}", path=path, exc=exc)
        ) from None
    cases: list[CheckCase] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            with nesting_checked(where):
                case = _case(json.loads(line), number)
        except ValueError as exc:
            raise UsageError(Message("{where}: {exc}", where=where, exc=_fault(exc))) from None
        if case.id in seen:
            raise UsageError(
                Message(
                    "{where}: id {id!r} is line {line}'s too",
                    where=where,
                    id=case.id,
                    line=seen[case.id],
                )
            )
        seen[case.id] = number
        cases.append(case)
    if not cases:
        raise UsageError(Message("--check {path}: no cases: one JSON object a line", path=path))
    return CheckFile(str(path), tuple(cases))


def _fault(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at column {exc.colno}"
    return str(exc)


def _case(obj: object, line: int) -> CheckCase:
    if not isinstance(obj, dict):
        raise ValueError(f"a case is a JSON object, not {type(obj).__name__}")
    unknown = sorted(set(obj) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}; a case has {', '.join(sorted(_FIELDS))}")
    named = [e for e in EXPECTATIONS if e.key in obj]
    if len(named) != 1:
        given = f"{len(named)} ({', '.join(e.key for e in named)})" if named else "none"
        raise ValueError(f"a case needs exactly one expectation of {', '.join(_KEYS)}: {given}")
    kind = named[0]
    case_id = obj.get("id", f"line {line}")
    if not isinstance(case_id, str) or not case_id:
        raise ValueError("id must be a non-empty string")
    max_tokens = obj.get("max_tokens")
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        raise ValueError("max_tokens must be a whole number of at least 1")
    return CheckCase(case_id, line, _prompt(obj), kind.read(obj[kind.key]), max_tokens)


def _prompt(obj: dict[str, Any]) -> Prompt:
    if ("prompt" in obj) == ("messages" in obj):
        raise ValueError("a case needs a prompt or messages (one of them)")
    if "prompt" in obj:
        return _text(obj["prompt"], "prompt")
    messages = obj["messages"]
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    for message in messages:
        if not (
            isinstance(message, dict)
            and set(message) == {"role", "content"}
            and all(isinstance(v, str) for v in message.values())
        ):
            raise ValueError('each message is {"role": text, "content": text}')
    return [dict(m) for m in messages]


def _text(value: object, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} must be a non-empty string")
    return value
