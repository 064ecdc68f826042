"""``latdoc verify --check FILE``: the user's own checks of the answers, sent through
both arms of an experiment.

- ``cases``: the file (JSON Lines), its cases and their expectations;
- ``send``: the cases held in the run's budget before the trials and sent after them,
  each arm sending them as it sends the user's own request;
- ``analysis``: each arm's pass rate with its interval, and McNemar's test of the
  difference on the same cases;
- ``render``: the table, the test and the failing cases, and the document's ``checks``.
"""

from latdoc.features.verify.checks.analysis import Answer, CheckReport, judge_checks
from latdoc.features.verify.checks.cases import CheckCase, CheckFile, normalise, read_checks
from latdoc.features.verify.checks.render import checks_clause, checks_to_dict, render_checks
from latdoc.features.verify.checks.send import Held, hold_checks, send_checks

__all__ = [
    "Answer",
    "CheckCase",
    "CheckFile",
    "CheckReport",
    "Held",
    "checks_clause",
    "checks_to_dict",
    "hold_checks",
    "judge_checks",
    "normalise",
    "read_checks",
    "render_checks",
    "send_checks",
]
