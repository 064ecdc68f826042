"""The documentation shows only commands and flags the ``latdoc`` command has.

The README and the pages under ``docs/`` show ``latdoc`` commands in code blocks and
code spans, and option tables whose rows start with a flag. Each is checked against
the parser the command itself builds (:func:`latdoc.cli.build_parser`), so a renamed
flag, a dropped command or a choice that no longer exists fails here, not in a
reader's shell. Names of the library are checked too: only ``latdoc`` and
``latdoc.client`` are public, so the documentation names nothing deeper.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import latdoc
import latdoc.client
from latdoc.cli import build_parser
from paths import ROOT

DOCS = ROOT / "docs"
PAGES = (ROOT / "README.md", *sorted(DOCS.rglob("*.md")))

SHELL_BLOCKS = {"", "sh", "bash", "shell", "console", "cron", "ini"}
"""Fenced blocks read as command lines; ``python`` blocks are read for their code spans,
any other (``text``: what a command printed) line by line as printed."""

ENDS_A_COMMAND = {"|", "||", "&&", ";", ">", ">>", "<", "`", "--"}
PLACEHOLDERS = {"…", "...", "CMD", "COMMAND"}

FENCE = re.compile(
    r"^(?P<fence>```|~~~)(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S
)
SPAN = re.compile(r"(?<!`)(`+)(?!`)(?P<code>(?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
LIBRARY_NAME = re.compile(r"(?<![\w/.-])latdoc((?:\.[A-Za-z_]\w*)+)(?![\w/])")


@dataclass
class Checker:
    """Walks ``latdoc …`` invocations and bare flags through the real parser."""

    parser: argparse.ArgumentParser
    problems: list[str] = field(default_factory=list)
    invocations: int = 0
    flags: int = 0

    # -- the parser's shape ---------------------------------------------------

    @staticmethod
    def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    @staticmethod
    def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
        return {flag: action for action in parser._actions for flag in action.option_strings}

    def parser_for(self, path: tuple[str, ...]) -> argparse.ArgumentParser | None:
        parser: argparse.ArgumentParser | None = self.parser
        for name in path:
            parser = self.subcommands(parser).get(name) if parser else None
        return parser

    def subtree(
        self, path: tuple[str, ...]
    ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
        """The parser at ``path`` and every parser below it, each with its path."""
        top = self.parser_for(path)
        found: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []
        todo = [] if top is None else [(path, top)]
        while todo:
            path, parser = todo.pop()
            found.append((path, parser))
            todo.extend(((*path, name), sub) for name, sub in self.subcommands(parser).items())
        return found

    # -- checking -------------------------------------------------------------

    def check_tokens(self, where: str, tokens: list[str]) -> None:
        """Every ``latdoc`` invocation among ``tokens`` (one line, span or command)."""
        for i, token in enumerate(tokens):
            if is_latdoc(token):
                self.check_invocation(where, tokens[i + 1 :])

    def check_invocation(self, where: str, args: list[str]) -> None:
        """``args`` follow the word ``latdoc``; they end at the end, or another command."""
        if not args or args[0] in PLACEHOLDERS or args[0] in ENDS_A_COMMAND:
            return  # ``latdoc`` named, not run
        self.invocations += 1
        shown = "latdoc " + " ".join(args)
        for alternative in args[0].split("|"):
            self.walk(where, shown, self.parser, ("latdoc",), [alternative, *args[1:]])

    def walk(
        self,
        where: str,
        shown: str,
        parser: argparse.ArgumentParser,
        path: tuple[str, ...],
        args: list[str],
    ) -> None:
        subcommands = self.subcommands(parser)
        options = self.options(parser)
        i = 0
        while i < len(args):
            token = args[i]
            if token in ENDS_A_COMMAND or is_latdoc(token):
                return
            if is_flag(token):
                flag, _, inline_value = token.partition("=")
                i += 1
                action = options.get(flag)
                self.flags += 1
                if action is None:
                    self.problems.append(f"{where}: `{shown}`: {' '.join(path)} has no {flag}")
                    continue
                if action.nargs == 0:
                    continue
                value = inline_value or (args[i] if i < len(args) and not is_flag(args[i]) else "")
                if not inline_value and value:
                    i += 1
                self.check_choice(where, shown, path, flag, action, value)
                continue
            if subcommands:
                if token in PLACEHOLDERS:
                    return
                sub = subcommands.get(token)
                if sub is None:
                    self.problems.append(
                        f"{where}: `{shown}`: {' '.join(path)} has no command {token!r}"
                    )
                    return
                self.walk(where, shown, sub, (*path, token), args[i + 1 :])
                return
            i += 1  # a positional argument

    def check_choice(
        self,
        where: str,
        shown: str,
        path: tuple[str, ...],
        flag: str,
        action: argparse.Action,
        value: str,
    ) -> None:
        if action.choices is None or not value or value in PLACEHOLDERS or value.isupper():
            return
        for choice in value.split("|"):
            if choice not in action.choices:
                self.problems.append(
                    f"{where}: `{shown}`: {choice!r} is no choice of {' '.join(path)} {flag}"
                )

    def check_bare_flags(self, where: str, tokens: list[str], scope: list[tuple[str, ...]]) -> None:
        """A code span that starts with a flag, as an option table's row does: each flag in
        it is an option of one of the commands the page is about."""
        parsers = [found for path in scope for found in self.subtree(path)]
        shown = " ".join(tokens)
        for i, token in enumerate(tokens):
            if not is_flag(token):
                continue
            flag = token.partition("=")[0]
            self.flags += 1
            owners = [(path, p) for path, p in parsers if flag in self.options(p)]
            if not owners:
                named = ", ".join(" ".join(("latdoc", *path)) for path in scope)
                self.problems.append(f"{where}: `{shown}`: no {flag} in {named}")
                continue
            path, owner = owners[0]
            action = self.options(owner)[flag]
            if action.nargs != 0 and i + 1 < len(tokens) and not is_flag(tokens[i + 1]):
                self.check_choice(where, shown, ("latdoc", *path), flag, action, tokens[i + 1])

    # -- a page ---------------------------------------------------------------

    def check_markdown(self, where: str, text: str, scope: list[tuple[str, ...]] | None) -> None:
        """Every invocation in ``text``; bare flags against ``scope`` (None: every command),
        widened by the commands the page itself runs."""
        prose = FENCE.sub("\n", text)
        bare: list[list[str]] = []
        for body, lang in ((m["body"], m["lang"]) for m in FENCE.finditer(text)):
            if lang in SHELL_BLOCKS:
                for line in command_lines(body):
                    self.check_tokens(where, split_command(line))
            elif lang == "python":
                for span in SPAN.finditer(body):
                    self.check_tokens(where, split_span(span["code"]))
            else:
                self.check_printed(where, body)
        for span in SPAN.finditer(prose):
            tokens = split_span(span["code"])
            if tokens and is_flag(tokens[0]):
                bare.append(tokens)
            else:
                self.check_tokens(where, tokens)
        paths: list[tuple[str, ...]] = [()]
        if scope is not None:
            paths = [*scope, *(path for path in invoked(text) if self.parser_for(path))]
        for tokens in bare:
            self.check_bare_flags(where, tokens, paths)

    def check_printed(self, where: str, body: str) -> None:
        """What a command printed: a command in it may wrap onto the next lines."""
        lines = [line.replace("`", " ` ").split() for line in body.splitlines()]
        i = 0
        while i < len(lines):
            tokens = lines[i]
            i += 1
            if not any(is_latdoc(t) for t in tokens):
                continue
            while i < len(lines) and wraps(tokens, lines[i]):
                tokens = tokens + lines[i]
                i += 1
            self.check_tokens(where, tokens)


def is_latdoc(token: str) -> bool:
    return token == "latdoc" or token.endswith(("/latdoc", "=latdoc"))


def is_flag(token: str) -> bool:
    """``--long``, ``--long=value`` or ``-s``; not ``-tokens`` of ``x-ratelimit-…/-tokens``."""
    return re.fullmatch(r"--[A-Za-z][\w-]*(=.*)?|-[A-Za-z]", token, re.S) is not None


def wraps(tokens: list[str], following: list[str]) -> bool:
    """A printed command goes on into ``following``: it stopped at ``latdoc`` or at a flag
    (waiting for its value), or the next line starts with a flag."""
    last = max(i for i, token in enumerate(tokens) if is_latdoc(token))
    tail = tokens[last:]
    if not following or "`" in tail:
        return False
    return is_latdoc(tail[-1]) or is_flag(tail[-1]) or is_flag(following[0])


def command_lines(body: str) -> Iterator[str]:
    """Shell lines with continuations joined and prompts dropped."""
    pending = ""
    for raw in body.splitlines():
        line = pending + raw.removeprefix("$ ")
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        yield line


def split_command(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


def split_span(code: str) -> list[str]:
    code = " ".join(code.split())
    try:
        return shlex.split(code)
    except ValueError:
        return code.split()


def invoked(text: str) -> set[tuple[str, ...]]:
    """The commands a page runs: ``latdoc report --watch …`` makes ``report`` flags its own."""
    found = set()
    for match in re.finditer(r"\blatdoc ((?:[a-z][a-z-]*\|?)+)", text):
        for name in match[1].split("|"):
            if name:
                found.add((name,))
    return found


def scope_of(page: Path) -> list[tuple[str, ...]] | None:
    """The commands a page under ``docs/commands/`` is about; None for the others."""
    if page.parent != DOCS / "commands" or page.stem == "index":
        return None
    both = {"report": [("runs",), ("report",)], "export": [("export",), ("import",)]}
    return both.get(page.stem, [(page.stem,)])


def where(page: Path) -> str:
    return str(page.relative_to(ROOT))


# -- the tests ---------------------------------------------------------------


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


@pytest.fixture(scope="module")
def checked(parser: argparse.ArgumentParser) -> Checker:
    checker = Checker(parser)
    for page in PAGES:
        checker.check_markdown(where(page), page.read_text(encoding="utf-8"), scope_of(page))
    return checker


def test_every_command_and_flag_shown_exists(checked: Checker) -> None:
    assert checked.problems == []


def test_the_check_reads_the_pages(checked: Checker) -> None:
    """A parser that found nothing would pass everything."""
    assert checked.invocations > 50
    assert checked.flags > 200


def test_every_command_page_is_a_command(parser: argparse.ArgumentParser) -> None:
    checker = Checker(parser)
    for page in sorted((DOCS / "commands").glob("*.md")):
        for path in scope_of(page) or []:
            assert checker.parser_for(path) is not None, where(page)


@pytest.mark.parametrize(
    ("markdown", "scope", "problem"),
    [
        ("`latdoc probe --no-such-flag`", None, "latdoc probe has no --no-such-flag"),
        ("```sh\nlatdoc diagnose URL \\\n    --max-request 3\n```", None, "has no --max-request"),
        ("```sh\nlatdoc nosuch --json\n```", None, "latdoc has no command 'nosuch'"),
        ("`latdoc lab net status`", None, "latdoc lab net has no command 'status'"),
        ("`latdoc verify --remedy cache`", None, "'cache' is no choice of latdoc verify --remedy"),
        (
            "```text\n  measure it: latdoc verify URL --model\n  m --remedy trimm\n```",
            None,
            "'trimm'",
        ),
        ("| `--remedy keepalive` | A |", [("probe",)], "no --remedy in latdoc probe"),
        ("| `--no-such-flag N` | A |", None, "no --no-such-flag in latdoc"),
    ],
)
def test_a_flag_or_command_that_does_not_exist_is_reported(
    parser: argparse.ArgumentParser,
    markdown: str,
    scope: list[tuple[str, ...]] | None,
    problem: str,
) -> None:
    checker = Checker(parser)
    checker.check_markdown("example.md", markdown, scope)
    assert len(checker.problems) == 1, checker.problems
    assert problem in checker.problems[0]


def test_flags_that_exist_are_not_reported(parser: argparse.ArgumentParser) -> None:
    checker = Checker(parser)
    checker.check_markdown(
        "example.md",
        "`latdoc lab net exec -- latdoc probe https://api.lab.test:8000/v1 --http2`\n"
        "```console\n$ latdoc report --watch prod --by hour-of-day  # per hour\n```\n"
        "| `--remedy keepalive` | A |",
        [("verify",)],
    )
    assert checker.problems == []
    assert checker.invocations == 3


def test_readme_links_into_docs_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?:|#)([^)#\s]+)", readme)
    assert any(target.startswith("docs/") for target in targets)
    missing = [target for target in targets if not (ROOT / target).is_file()]
    assert missing == []


def deeper_names(text: str) -> list[str]:
    """Dotted names under ``latdoc`` that are not public: neither a name of ``latdoc``'s
    ``__all__`` nor of ``latdoc.client``'s (schema names such as ``latdoc.trace/1`` aside)."""
    public = {
        "latdoc": {*latdoc.__all__, "client", "__all__"},
        "latdoc.client": {*latdoc.client.__all__, "__all__"},
    }
    found = []
    for match in LIBRARY_NAME.finditer(text):
        parts = match[1].lstrip(".").split(".")
        module, name = ("latdoc.client", parts[1:2]) if parts[0] == "client" else ("latdoc", parts)
        if name and name[0] not in public[module]:
            found.append(match[0])
    return found


def test_only_public_names_of_the_library_are_named() -> None:
    named = [
        f"{where(page)}: {name}"
        for page in PAGES
        for name in deeper_names(page.read_text(encoding="utf-8"))
    ]
    assert named == []


def test_a_private_name_is_reported() -> None:
    text = (
        "`latdoc.Store.aggregate` and `latdoc.client.RetryPolicy()` "
        "(`latdoc.diagnosis/2`, `~/.local/share/latdoc/latdoc.db`), not "
        "`latdoc.pipeline.diagnose_endpoint` nor `latdoc.client._retry.RetryPolicy`"
    )
    assert deeper_names(text) == [
        "latdoc.pipeline.diagnose_endpoint",
        "latdoc.client._retry.RetryPolicy",
    ]
