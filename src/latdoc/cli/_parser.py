"""The parser every command's arguments go through, and the exit codes of ``latdoc``.

Light on purpose: ``latdoc --version`` and ``latdoc --help`` import this and
nothing of the commands.
"""

from __future__ import annotations

import argparse
import re
import sys

from latdoc.i18n import N_, Message

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING``, without importing typing, which ``--version`` does not need."""
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_OK = 0
EXIT_REQUEST_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

ARGPARSE_ERRORS = tuple(
    (re.compile(pattern, re.DOTALL), template)
    for pattern, template in (
        (r"argument (?P<argument>.+?): (?P<error>.+)", N_("argument {argument}: {error}")),
        (
            r"the following arguments are required: (?P<arguments>.+)",
            N_("the following arguments are required: {arguments}"),
        ),
        (r"unrecognized arguments: (?P<arguments>.+)", N_("unrecognized arguments: {arguments}")),
        (
            r"one of the arguments (?P<arguments>.+) is required",
            N_("one of the arguments {arguments} is required"),
        ),
        (
            r"ambiguous option: (?P<option>.+) could match (?P<matches>.+)",
            N_("ambiguous option: {option} could match {matches}"),
        ),
        (
            r"invalid choice: (?P<value>.+) \(choose from (?P<choices>.+)\)",
            N_("invalid choice: {value} (choose from {choices})"),
        ),
        (r"invalid (?P<type>\S+) value: (?P<value>.+)", N_("invalid {type} value: {value}")),
        (r"not allowed with argument (?P<other>.+)", N_("not allowed with argument {other}")),
        (r"ignored explicit argument (?P<value>.+)", N_("ignored explicit argument {value}")),
        (r"expected one argument", N_("expected one argument")),
        (r"expected at most one argument", N_("expected at most one argument")),
        (r"expected at least one argument", N_("expected at least one argument")),
        (r"expected (?P<n>\d+) argument", N_("expected {n} argument")),
        (r"expected (?P<n>\d+) arguments", N_("expected {n} arguments")),
    )
)
"""The sentences argparse's own errors are made of (the same from Python 3.11 to 3.13),
each as a template of the catalogue: an error is matched whole, and ``argument X: …``
again inside."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are :class:`UsageError` (one ``Error:`` line, exit 2),
    said in the command's language."""

    def error(self, message: str) -> NoReturn:
        from latdoc.errors import UsageError

        raise UsageError(argparse_message(message, _type_error(sys.exc_info()[1])))


def argparse_message(message: str, type_error: str | None = None) -> str:
    """argparse's error ``message`` as a :class:`~latdoc.i18n.Message` of the same English
    text, translated where shown; ``type_error`` is a flag type's own error (a
    :class:`~latdoc.i18n.Message` argparse kept only the text of), said as it is where
    ``message`` quotes it. A message of no form argparse makes is returned as it is."""
    if type_error is not None and message == type_error:
        return type_error
    for pattern, template in ARGPARSE_ERRORS:
        match = pattern.fullmatch(message)
        if match is not None:
            values = {
                key: argparse_message(value, type_error) if key == "error" else value
                for key, value in match.groupdict().items()
            }
            said = Message(template, **values)
            return said if said == message else message
    return message


def _type_error(handled: BaseException | None) -> str | None:
    """The error a flag's type raised, where argparse is reporting one: argparse turns it
    into text (``ArgumentTypeError(str(error))``, then an ``ArgumentError``), but each is
    raised while handling the one before, so the first is the context of the others."""
    from latdoc.errors import LatdocError

    if not isinstance(handled, argparse.ArgumentError):
        return None
    cause = handled.__context__
    while cause is not None and not isinstance(cause, LatdocError):
        cause = cause.__context__
    if cause is None or len(cause.args) != 1 or not isinstance(cause.args[0], str):
        return None
    return cause.args[0]
