"""The mistakes of what a user gives latdoc, said in Chinese under ``LATDOC_LANG=zh``: the
parser's own (argparse's sentences, and a flag's value its type refuses), a proxy URL,
a trace file; in English, each the same text as before, byte for byte."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from latdoc.cli._parser import ARGPARSE_ERRORS, argparse_message
from latdoc.i18n import speaking, translate

ENGLISH_WORDS = re.compile(
    r"\b(?:argument|arguments|expected|invalid|value|choose|from|not|allowed|with|the|following|"
    r"are|required|unrecognized|ambiguous|option|could|match|ignored|explicit|most|least)\b"
)
"""The words of argparse's sentences that no translation keeps."""


@pytest.mark.parametrize(
    ("argv", "english", "chinese"),
    [
        (
            ["report", "--bogus"],
            "Error: unrecognized arguments: --bogus",
            "错误：无法识别的参数：--bogus",
        ),
        (
            ["verify"],
            "Error: the following arguments are required: --remedy",
            "错误：缺少以下参数：--remedy",
        ),
        (
            ["report", "--watch"],
            "Error: argument --watch: expected one argument",
            "错误：参数 --watch：需要一个值",
        ),
        (
            ["report", "--html", "a", "--json"],
            "Error: argument --json: not allowed with argument --html",
            "错误：参数 --json：不能与参数 --html 一起使用",
        ),
        (
            ["lab", "bogus"],
            "Error: argument lab_command: invalid choice: 'bogus' (choose from 'serve', "
            "'net', 'engine')",
            "错误：参数 lab_command：无效的取值：'bogus'（可选：'serve', 'net', 'engine'）",
        ),
        (
            ["probe", "--extra-body", "[1]"],
            "Error: argument --extra-body: expected a JSON object such as "
            """'{"ignore_eos": true}', got '[1]'""",
            "错误：参数 --extra-body：需要一个 JSON 对象，例如 "
            """'{"ignore_eos": true}'，收到的是 '[1]'""",
        ),
        (
            ["probe", "http://127.0.0.1:9/v1", "-m", "m", "--proxy", "ftp://proxy:21"],
            "Error: --proxy ftp://proxy:21: proxy scheme 'ftp' is not supported; use http://, "
            "https://, socks5:// or socks5h://",
            "错误：--proxy ftp://proxy:21：不支持代理协议 'ftp'；请使用 http://、https://、"
            "socks5:// 或 socks5h://",
        ),
    ],
)
def test_the_mistake_is_said_in_the_language_asked(
    argv: list[str],
    english: str,
    chinese: str,
    monkeypatch: pytest.MonkeyPatch,
    error_line: Callable[[list[str]], str],
) -> None:
    assert error_line(argv) == english
    monkeypatch.setenv("LATDOC_LANG", "zh")
    assert error_line(argv) == chinese


def test_a_trace_latdoc_cannot_read_is_said_in_chinese(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error_line: Callable[[list[str]], str]
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": "many", "output_length": 1}\n')
    argv = ["load", "http://127.0.0.1:9/v1", "-m", "m", "--trace", str(trace)]
    argv += ["--trace-format", "mooncake"]
    english = error_line(argv)
    assert english == f"Error: {trace}:1: input_length must be a whole number, not 'many'"
    monkeypatch.setenv("LATDOC_LANG", "zh")
    assert error_line(argv) == f"错误：{trace}:1：input_length 须为整数，而不是 'many'"


def _argparse_errors() -> list[str]:
    """What argparse itself says for each kind of mistake, in this Python."""
    said: list[str] = []

    class Recording(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            said.append(message)
            raise SystemExit(2)

    parser = Recording(prog="p")
    parser.add_argument("--one")
    parser.add_argument("--single", nargs=1)
    parser.add_argument("--pair", nargs=2)
    parser.add_argument("--maybe", nargs="?", const="x", type=float)
    parser.add_argument("--many", nargs="+")
    parser.add_argument("--kind", choices=["a", "b"])
    parser.add_argument("--flag", action="store_true")
    parser.add_argument("--flagon", action="store_true")
    either = parser.add_mutually_exclusive_group(required=False)
    either.add_argument("--left", action="store_true")
    either.add_argument("--right", action="store_true")
    needed = Recording(prog="q")
    needed.add_argument("name")
    group = needed.add_mutually_exclusive_group(required=True)
    group.add_argument("--up", action="store_true")
    group.add_argument("--down", action="store_true")
    for parse, argv in [
        (parser.parse_args, ["--one"]),
        (parser.parse_args, ["--single"]),
        (parser.parse_args, ["--pair", "1"]),
        (parser.parse_args, ["--maybe", "x1"]),
        (parser.parse_args, ["--many"]),
        (parser.parse_args, ["--kind", "c"]),
        (parser.parse_args, ["--flag=1"]),
        (parser.parse_args, ["--fla"]),
        (parser.parse_args, ["--left", "--right"]),
        (parser.parse_args, ["extra"]),
        (needed.parse_args, ["--up"]),
        (needed.parse_args, ["n"]),
    ]:
        with pytest.raises(SystemExit):
            parse(argv)
    return said


@pytest.mark.parametrize("message", _argparse_errors())
def test_every_sentence_argparse_says_is_translated(message: str) -> None:
    said = argparse_message(message)
    assert said == message
    with speaking("zh"):
        chinese = translate(said)
    assert ENGLISH_WORDS.search(chinese) is None, chinese


def test_each_form_is_one_argparse_says() -> None:
    matched = {
        template
        for message in _argparse_errors()
        for pattern, template in ARGPARSE_ERRORS
        if pattern.search(message)
    }
    assert {template for _, template in ARGPARSE_ERRORS} - matched <= {
        "expected at most one argument"
    }
