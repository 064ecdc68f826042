"""The command line starts light: a command's module is imported only when it runs.

``latdoc --help`` shows every command from the table in ``latdoc.cli``; the table
must say what the modules themselves register, in the same order.
"""

from __future__ import annotations

import argparse

import pytest

from latdoc.cli import _COMMANDS, build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_help_from_the_table_is_the_help_of_the_modules() -> None:
    light, whole = build_parser(()), build_parser()
    assert list(_subcommands(whole)) == list(_COMMANDS)
    assert light.format_help() == whole.format_help()


@pytest.mark.parametrize("name", list(_COMMANDS))
def test_each_command_alone_gets_its_whole_parser(name: str) -> None:
    alone = _subcommands(build_parser([name]))
    whole = _subcommands(build_parser())
    assert list(alone) == list(_COMMANDS)
    assert alone[name].format_help() == whole[name].format_help()
