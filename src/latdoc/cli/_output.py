"""What a command writes: a result as its options ask (:func:`emit`), and files (an
export, an HTML report) whole or not at all.

Each file is written to a temporary name beside its target and renamed onto it
(``os.replace``) once complete, so a command that fails or is interrupted leaves no
file behind, and an earlier file of the same name as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from latdoc.errors import UsageError
from latdoc.i18n import Message

if TYPE_CHECKING:
    import argparse

    from latdoc.report.shown import Shown


@contextlib.contextmanager
def output_path(target: str | Path) -> Iterator[Path]:
    """Where to write ``target``: a new file beside it, renamed onto it when the block ends
    and removed when the block raises. A target that exists and is not a regular file
    (``/dev/null``, a pipe) is written directly. A file that cannot be written is a
    :class:`UsageError` naming ``target``."""
    target = Path(target)
    real = Path(os.path.realpath(target))
    try:
        existing: os.stat_result | None = real.stat()
    except OSError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with _said(target):
            yield target
        return
    temporary = real.with_name(f".{real.name}.{secrets.token_hex(4)}.tmp")
    with _said(target):
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        with _said(target):
            if existing is not None:
                os.chmod(temporary, stat.S_IMODE(existing.st_mode))
            yield temporary
            os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def write_output(target: str | Path, text: str) -> None:
    """Write ``text`` to the file ``target``, whole or not at all."""
    with output_path(target) as path:
        path.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def _said(target: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise UsageError(
            Message(
                "cannot write {target}: {why}", target=str(target), why=exc.strerror or str(exc)
            )
        ) from None


def emit(result: Shown, args: argparse.Namespace, *, terminal: bool = True) -> None:
    """Show ``result`` as ``--html FILE`` and ``--json`` ask, the same for every command:
    its page to FILE if it has one; its JSON document on stdout, else its blocks (a
    stored run re-rendered, not ``terminal``, shows them only when no page was asked);
    where its runs are kept, on stderr. A command without ``--html`` (``probe``) writes no
    page. A line a block will not fold (``latdoc providers``' base URLs) is printed
    whole past the width, for the terminal to wrap: every other line fits already."""
    from latdoc.report import make_console

    html: str | None = getattr(args, "html", None)
    if html and (page := result.page()) is not None:
        path = Path(html)
        write_output(path, page)
        print(f"HTML {result.page_kind} written to {path}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(result.document(), indent=2) + "\n")
    elif terminal or not html:
        console = make_console(sys.stdout)
        for block in result.shown():
            console.print(block, crop=False)
    if (kept := result.kept()) is not None:
        print(kept, file=sys.stderr)
