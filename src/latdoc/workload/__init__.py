"""What to send, and when: the workloads that drive the probe.

- ``_prompts``: prompts of unique random words; ``_calibration``: how many of
  them make N tokens on this endpoint, learned from its own usage.
- ``_budget``: hard caps on requests, tokens and seconds, reserved before sending.
- ``_steps``: the three measured steps of a diagnosis (network, input length, load).
- ``_probe_loop``: a series of probes as ``latdoc probe`` sends them;
  ``_watch``: a cold short, a warm short and a long request on a schedule.
- ``_experiment``: an A/B experiment, arms interleaved in shuffled blocks;
  ``_remedies``: each remedy ``latdoc verify`` tests, as its two arms;
  ``_conversation``: a multi-turn chat kept whole and under bounding strategies.
- ``_load``: a load sweep, level by level; ``_workers``: one worker's share of it,
  sent from a process or Ray actor of its own, its traces sent back in batches.

A workload sends and labels; it computes no verdict and prints nothing.
"""

from latdoc.workload._budget import Budget
from latdoc.workload._calibration import (
    ASSUMED,
    CalibrationFailed,
    TokenCalibration,
    calibrate,
    calibration_words,
    cannot_answer_note,
    prompt_cost,
)
from latdoc.workload._conversation import (
    ConversationPlan,
    ConversationTurn,
    Strategy,
    parse_strategies,
    run_conversations,
)
from latdoc.workload._experiment import Arm, ExperimentResult, run_experiment
from latdoc.workload._load import (
    LoadPlan,
    level_schedule,
    run_load,
    stopped_for_errors,
    too_many_failed,
    within_time_budget,
)
from latdoc.workload._probe_loop import DEFAULT_PROMPT, ProbePlan, ProbeRun, run_probe
from latdoc.workload._prompts import make_prompt
from latdoc.workload._remedies import (
    HEADLINE,
    VerifyPlan,
    VerifyRemedy,
    arm_summaries,
    build_arms,
    short_question,
    tight_max_tokens,
)
from latdoc.workload._steps import (
    CONCURRENCY,
    LENGTHS,
    DiagnosisPlan,
    ProgressHook,
    SampleHook,
    StepsResult,
    planned_requests,
    planned_tokens,
    run_steps,
)
from latdoc.workload._watch import (
    LONG_TOKENS,
    REQUESTS_PER_TICK,
    SHORT_TOKENS,
    WatchPlan,
    WatchResult,
    WatchTooFast,
    known_calibration,
    run_watch,
)
from latdoc.workload._workers import (
    Batch,
    LevelOrder,
    LoadWorker,
    serve_pipe,
    split,
    worker_clocks,
    worker_host,
    worker_plans,
)

__all__ = [
    "ASSUMED",
    "CONCURRENCY",
    "DEFAULT_PROMPT",
    "HEADLINE",
    "LENGTHS",
    "LONG_TOKENS",
    "REQUESTS_PER_TICK",
    "SHORT_TOKENS",
    "Arm",
    "Batch",
    "Budget",
    "CalibrationFailed",
    "ConversationPlan",
    "ConversationTurn",
    "DiagnosisPlan",
    "ExperimentResult",
    "LevelOrder",
    "LoadPlan",
    "LoadWorker",
    "ProbePlan",
    "ProbeRun",
    "ProgressHook",
    "SampleHook",
    "StepsResult",
    "Strategy",
    "TokenCalibration",
    "VerifyPlan",
    "VerifyRemedy",
    "WatchPlan",
    "WatchResult",
    "WatchTooFast",
    "arm_summaries",
    "build_arms",
    "calibrate",
    "calibration_words",
    "cannot_answer_note",
    "known_calibration",
    "level_schedule",
    "make_prompt",
    "parse_strategies",
    "planned_requests",
    "planned_tokens",
    "prompt_cost",
    "run_conversations",
    "run_experiment",
    "run_load",
    "run_probe",
    "run_steps",
    "run_watch",
    "serve_pipe",
    "short_question",
    "split",
    "stopped_for_errors",
    "tight_max_tokens",
    "too_many_failed",
    "within_time_budget",
    "worker_clocks",
    "worker_host",
    "worker_plans",
]
