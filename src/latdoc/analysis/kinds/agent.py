"""``agent``: an agent's run held back outside the model, by its tools and its own work
between model calls. It is named of a run as a whole, from its span tree
(:mod:`latdoc.features.agent`), where the tools or the agent itself took more of the
run's wall clock than its model calls: no rule over requests finds it, since a request
holds none of that time.
"""

from __future__ import annotations

from latdoc.analysis.kinds._spec import KindSpec
from latdoc.i18n import N_
from latdoc.model import Kind

__all__ = ["SPEC"]

SPEC = KindSpec(
    Kind.AGENT,
    N_("Agent"),
    N_("the time is outside the model: tools and the agent's own work"),
    colour="#6f8f3a",
    rule=None,
)
