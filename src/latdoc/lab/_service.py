"""How every lab service starts and stops: :class:`Service`.

A service (a server thread, a child process, the engine, a network) is started
with :meth:`~Service.start` and stopped with :meth:`~Service.stop`, or used as a
context manager that does both. ``stop`` must be safe to call on a service that
never started or already stopped, because the context manager also calls it when
``start`` fails half-way.
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

from latdoc.errors import LabError

__all__ = ["Service"]


class Service(abc.ABC):
    """A lab service; ``with service:`` starts it and always stops it.

    When the body of the ``with`` (or ``start``) fails and stopping fails too, the
    first failure is the one raised: the :class:`~latdoc.errors.LabError` from
    stopping is added to it as a note.
    """

    @abc.abstractmethod
    def start(self) -> None:
        """Start the service; return once it is ready."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the service and release what it holds. Idempotent."""

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException as exc:
            self._stop_after(exc)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.stop()
        else:
            self._stop_after(exc)

    def _stop_after(self, failure: BaseException) -> None:
        """Stop after ``failure``; a :class:`LabError` in stopping becomes a note on it."""
        try:
            self.stop()
        except LabError as error:
            failure.add_note(f"and {type(self).__name__} did not stop cleanly: {error}")
