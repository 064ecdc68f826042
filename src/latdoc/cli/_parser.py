"""The parser every command's arguments go through, and the exit codes of ``latdoc``.

Light on purpose: ``latdoc --version`` and ``latdoc --help`` import this and
nothing of the commands.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING``, without importing typing, which ``--version`` does not need."""
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_OK = 0
EXIT_REQUEST_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are :class:`UsageError` (one ``Error:`` line, exit 2)."""

    def error(self, message: str) -> NoReturn:
        from latdoc.errors import UsageError

        raise UsageError(message)
