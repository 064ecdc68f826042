"""``latdoc record``: a local gateway in front of the provider that times every call an
application makes through it, in any language, without touching its code.

Layers, each importing only those below: ``run`` (the gateway's life: listen, pass
on, keep, stop), over ``render`` (what it says, and the notes it keeps), over
``gateway`` (the ASGI app that passes each request on), over ``analysis`` (what a
recording kept, and the gateway's own time summed up).
"""

from latdoc.features.record.analysis import Recorded
from latdoc.features.record.gateway import TOKEN_HEADER, Upstream, parse_upstream
from latdoc.features.record.render import call_line, closing_lines
from latdoc.features.record.run import RecordPlan, record_traffic

__all__ = [
    "TOKEN_HEADER",
    "RecordPlan",
    "Recorded",
    "Upstream",
    "call_line",
    "closing_lines",
    "parse_upstream",
    "record_traffic",
]
