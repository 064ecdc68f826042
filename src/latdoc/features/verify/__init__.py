"""``latdoc verify``: one remedy measured as an experiment on the endpoint.

- :mod:`~latdoc.features.verify.experiments`: the registry, one module per remedy
  experiment: its options, its arms, how it is judged;
- ``plan``: the plan of an experiment, and the remedies the registry names;
- ``arms``: what the arms send, and the arm most experiments start from;
- ``send``: an experiment's arms, interleaved in shuffled blocks within a budget;
- ``run``: the experiment run and both arms kept as runs (``runs``), then compared and
  the gates checked; an experiment with a runner of its own is run by it;
- ``render``: what the command shows of a result (a :class:`latdoc.report.shown.Shown`):
  its document, its terminal blocks, its page;
- :mod:`~latdoc.features.verify.checks`: the user's own checks of the answers
  (``--check FILE``), sent through both arms after the trials;
- :mod:`~latdoc.features.verify.conversation` and :mod:`~latdoc.features.verify.retry`:
  the two experiments that are not one request against another, each with its own
  layers.
"""

from latdoc.features.verify.analysis import NOT_APPLICABLE, TRADE
from latdoc.features.verify.checks import CheckFile, CheckReport, read_checks
from latdoc.features.verify.conversation import ConversationVerdict, verify_conversation
from latdoc.features.verify.experiments import Outcome
from latdoc.features.verify.plan import VerifyPlan, VerifyRemedy, arm_summaries
from latdoc.features.verify.render import (
    VERIFY_SCHEMA,
    VerifyResult,
    plan_line,
    verdict_line,
)
from latdoc.features.verify.retry import RetryVerdict, verify_retry
from latdoc.features.verify.run import verify_remedy

__all__ = [
    "NOT_APPLICABLE",
    "TRADE",
    "VERIFY_SCHEMA",
    "CheckFile",
    "CheckReport",
    "ConversationVerdict",
    "Outcome",
    "RetryVerdict",
    "VerifyPlan",
    "VerifyRemedy",
    "VerifyResult",
    "arm_summaries",
    "plan_line",
    "read_checks",
    "verdict_line",
    "verify_conversation",
    "verify_remedy",
    "verify_retry",
]
