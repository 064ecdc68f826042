"""Progress of a run on the terminal: one bar per labelled stage, lines printed above.

Shown only when the stream is a terminal; elsewhere (a pipe, a log file, a test's
captured stream) the bars are silent and :meth:`ProgressBars.message` writes a
plain line. rich is imported on the first bar, so a run without a terminal never
loads the live display.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class ProgressBars:
    """``bars(label, done, total)`` after each step of work; ``message(text)`` for a line
    above the bars; ``close()`` keeps the bars on screen, ``clear()`` erases them. Used
    as a context manager, the bars are closed when the block ends, or cleared when
    ``transient`` (a result printed in their place)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        enabled: bool = True,
        transient: bool = False,
        get_time: Callable[[], float] | None = None,
    ) -> None:
        self.stream = stream
        self.enabled = enabled and stream.isatty()
        self.transient = transient
        self._get_time = get_time
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        progress = self._progress or self._start()
        task = self._tasks.get(label)
        if task is None:
            task = self._tasks[label] = progress.add_task(label, total=max(total, 1))
        progress.update(task, completed=min(done, total), total=max(total, 1), refresh=True)

    def message(self, text: str) -> None:
        """Print one line above the bars (or plainly when there are none)."""
        if self._progress is not None:
            self._progress.console.print(text)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def clear(self) -> None:
        """Erase the bars, e.g. before the results are printed in their place."""
        self._stop(keep=False)

    def close(self) -> None:
        """Stop updating and leave the bars on screen."""
        self._stop(keep=True)

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop(keep=not self.transient)

    def _start(self) -> Progress:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from latdoc.report._console import make_console

        self._progress = Progress(
            TextColumn("  {task.description:<12}", markup=False),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=make_console(self.stream),
            auto_refresh=False,
            # Results and --json lines go to stdout as they are, never into the display.
            redirect_stdout=False,
            get_time=self._get_time,
        )
        self._progress.start()
        return self._progress

    def _stop(self, *, keep: bool) -> None:
        progress = self._progress
        if progress is None:
            return
        progress.live.transient = not keep
        progress.stop()
        self._progress = None
        self._tasks = {}
