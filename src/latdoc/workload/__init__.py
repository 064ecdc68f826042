"""What to send, and when: the workloads that drive the probe.

- ``_prompts``: prompts of unique random words; ``_calibration``: how many of
  them make N tokens on this endpoint, learned from its own usage.
- ``_budget``: hard caps on requests, tokens and seconds, reserved before sending.
- ``_diagnosis_plan``: what a diagnosis plans to send, and the most it sends and spends;
  ``_steps``: the three measured steps that send it (network, input length, load),
  each request through ``_sending``, which reserves, labels and keeps it.
- ``_probe_loop``: a series of probes as ``latdoc probe`` sends them.

Inputs read from files: :mod:`.traces`, production traces to replay, and
:mod:`.otlp`, an application's recorded GenAI spans as traces to diagnose.

What the features send (a load sweep, a watch, an experiment) is in each feature's own
``send`` module under :mod:`latdoc.features`, built on these. A workload sends and
labels; it computes no verdict and prints nothing.
"""

from latdoc.workload._answers import answer_of
from latdoc.workload._budget import (
    Budget,
    Reservation,
    Spending,
    budget_for,
    check_money_cap,
)
from latdoc.workload._calibration import (
    ASSUMED,
    CalibrationFailed,
    TokenCalibration,
    calibrate,
    calibration_words,
    cannot_answer_note,
    fit_calibration,
    prompt_cost,
)
from latdoc.workload._diagnosis_plan import (
    EXTRA_COLD,
    LENGTHS,
    DiagnosisPlan,
    PlannedSend,
    planned_requests,
    planned_sends,
    planned_spend,
    planned_tokens,
)
from latdoc.workload._probe_loop import DEFAULT_PROMPT, ProbePlan, ProbeRun, run_probe
from latdoc.workload._prompts import make_prompt
from latdoc.workload._sending import ProgressHook, SampleHook, StepsResult
from latdoc.workload._settle import network_unsettled
from latdoc.workload._steps import run_steps

__all__ = [
    "ASSUMED",
    "DEFAULT_PROMPT",
    "EXTRA_COLD",
    "LENGTHS",
    "Budget",
    "CalibrationFailed",
    "DiagnosisPlan",
    "PlannedSend",
    "ProbePlan",
    "ProbeRun",
    "ProgressHook",
    "Reservation",
    "SampleHook",
    "Spending",
    "StepsResult",
    "TokenCalibration",
    "answer_of",
    "budget_for",
    "calibrate",
    "calibration_words",
    "cannot_answer_note",
    "check_money_cap",
    "fit_calibration",
    "make_prompt",
    "network_unsettled",
    "planned_requests",
    "planned_sends",
    "planned_spend",
    "planned_tokens",
    "prompt_cost",
    "run_probe",
    "run_steps",
]
