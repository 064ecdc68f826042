"""``latdoc run PLAN.toml``: a team's latency checks kept in its repository as a file.

- ``send``: the plan file read and checked, each step as the command line it stands for
  (:func:`read_plan`, with the names of each command's options as the command line
  gives them);
- ``run``: the steps run in order, the plan's exit status the first failing step's
  (:func:`run_plan`).

Every step is checked before the first sends anything, so a mistake anywhere in the
plan is one error naming its step and nothing is sent.
"""

from latdoc.features.run.run import INTERRUPTED, OK, run_plan
from latdoc.features.run.send import (
    ENDPOINT_KEYS,
    STEP_COMMANDS,
    URL,
    OptionName,
    OptionNames,
    PlannedStep,
    read_plan,
)

__all__ = [
    "ENDPOINT_KEYS",
    "INTERRUPTED",
    "OK",
    "STEP_COMMANDS",
    "URL",
    "OptionName",
    "OptionNames",
    "PlannedStep",
    "read_plan",
    "run_plan",
]
