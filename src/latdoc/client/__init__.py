"""The production half: what applications run with.

:func:`instrument` times an application's own requests with the probe's
definitions and keeps them as a run that ``latdoc diagnose --from-run`` reads.
"""

from latdoc.client._instrument import Instrumentation, instrument

__all__ = ["Instrumentation", "instrument"]
