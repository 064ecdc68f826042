"""Advice: typed findings become remedies ranked for the user's priorities.

- :func:`with_remedies` fills a diagnosis's findings with their remedies, ranked by
  :func:`recommend` for the user's priorities among latency, cost and quality (else the
  scenario's preset); each kind's remedies come from its builders (``kinds``: one module
  per kind, which declares each remedy's effects on cost and quality; the
  :data:`BUILDERS` tuple lists them, :func:`builders_for` finds a kind's), each remedy
  named once in :mod:`~.keys`;
- :func:`advised_pool`: the pool the advice gives this host, by the method's rule;
- :func:`checklist` judges the client host's facts, :func:`with_system` keeps the items
  that matter for the verdict;
- :func:`verify_command` and :func:`watch_command`: the command that measures a remedy
  on this endpoint.

Advice measures nothing: a gain is printed only when the run measured or fitted it.
"""

from latdoc.advice import keys
from latdoc.advice._sizing import advised_pool
from latdoc.advice.builders import BUILDERS, RemedyBuilder, builders_for
from latdoc.advice.remedies import recommend, with_remedies
from latdoc.advice.system import checklist, for_verdict, with_system
from latdoc.advice.verify import verify_command, watch_command

__all__ = [
    "BUILDERS",
    "RemedyBuilder",
    "advised_pool",
    "builders_for",
    "checklist",
    "for_verdict",
    "keys",
    "recommend",
    "verify_command",
    "watch_command",
    "with_remedies",
    "with_system",
]
