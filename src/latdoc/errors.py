"""latdoc's exceptions: one tree, rooted at :class:`LatdocError`.

::

    LatdocError
    ├── UsageError          bad input from the user (a flag, a file, a URL)
    ├── SSEError            bytes that are not a valid event stream
    ├── RequestFailed       a measured request failed; carries its TraceError
    └── LabError            the lab could not start what it was asked to

Lower-level errors (httpcore, ssl, socket) are mapped to these once, at the
boundary of the package that met them, and always name the phase that failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from latdoc.probe.trace import TraceError


class LatdocError(Exception):
    """Base of every error latdoc raises on purpose."""


class UsageError(LatdocError):
    """The user asked for something that cannot be done as asked."""


class SSEError(LatdocError):
    """The response body is not a valid ``text/event-stream``."""


class RequestFailed(LatdocError):
    """A measured request failed; ``error`` says how and in which phase."""

    def __init__(self, error: TraceError) -> None:
        super().__init__(str(error))
        self.error = error


class LabError(LatdocError):
    """A lab component (endpoint, network, engine) could not be started or used."""
