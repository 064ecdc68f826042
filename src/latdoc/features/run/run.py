"""A plan's steps run in order.

Each step is run by the command line it stands for (``run_step``: the command line's
own entry point, which returns the command's exit status). The plan's status is the
first failing step's; a step that fails does not stop the ones after it unless
``stop_on_failure`` says so, and an interrupted step stops the plan with its status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from latdoc.features.run.send import PlannedStep

OK = 0
"""A step's exit status when it passed."""
INTERRUPTED = 130
"""A step's exit status when Ctrl-C (or SIGTERM) ended it: the shell's 128 + SIGINT."""


def run_plan(
    steps: Sequence[PlannedStep],
    run_step: Callable[[PlannedStep], int],
    *,
    stop_on_failure: bool = False,
    on_step: Callable[[PlannedStep, int], None] | None = None,
) -> int:
    """Run ``steps`` in order through ``run_step``, telling ``on_step`` each step and how
    many there are before it starts; return the plan's exit status."""
    status = OK
    for step in steps:
        if on_step is not None:
            on_step(step, len(steps))
        code = run_step(step)
        if code == INTERRUPTED:
            return code
        if code != OK:
            status = status or code
            if stop_on_failure:
                break
    return status
