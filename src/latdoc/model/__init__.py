"""What analysis returns and every layer above reads: the diagnosis as data.

:class:`Diagnosis` with its :class:`Verdict`, :class:`Finding` and :class:`Remedy`
records, the :class:`Kind` of slow each names, the length curve, the server's own
account, the client host's facts and checklist items, the :class:`RunContext`
an analysis is given, the user's :class:`Priorities` among latency, cost and quality
with each remedy's :class:`Effects` on them, and a model's :class:`Price`. Frozen
records, and two definitions that every layer must read alike: latdoc's one percentile
(:mod:`.percentile`), here because the length curve's band reads it, and what a
request costs at a price (:mod:`.cost`), read by the plan before it sends and by
every report after. The functions that compute the records live in
:mod:`latdoc.analysis`, the advice that fills in remedies in :mod:`latdoc.advice`.
This package imports nothing of latdoc but its records and errors.
"""

from latdoc.model.context import Preset, RunContext
from latdoc.model.cost import (
    Cost,
    CostSummary,
    Price,
    PriceTier,
    Rates,
    cost_of,
    cost_text,
    cost_to_dict,
    cost_words,
    dollars,
    planned_cost,
    price_from_dict,
    price_to_dict,
    summarise_costs,
)
from latdoc.model.diagnosis import (
    Diagnosis,
    Finding,
    GainSource,
    LengthCheck,
    LongerPrompt,
    NetworkBottleneck,
    NetworkCheck,
    NoticeableBar,
    PromptSource,
    Remedy,
    RequestParts,
    Verdict,
    Workload,
)
from latdoc.model.document import DIAGNOSIS_SCHEMA, diagnosis_to_dict
from latdoc.model.host import HostFacts, SystemItem
from latdoc.model.kind import RUN_KINDS, Kind
from latdoc.model.length import CURVE_CONFIDENCE, LengthCurve, LengthPoint
from latdoc.model.percentile import QUANTILE_METHOD, quantile, quantiles
from latdoc.model.priorities import (
    PRESETS,
    Corner,
    CostChange,
    Effects,
    Priorities,
    QualityRisk,
    Scenario,
    parse_priorities,
)
from latdoc.model.server import Disagreement, ServerAccount
from latdoc.model.sizing import DEFAULT_CONCURRENCY, pool_size

__all__ = [
    "CURVE_CONFIDENCE",
    "DEFAULT_CONCURRENCY",
    "DIAGNOSIS_SCHEMA",
    "PRESETS",
    "QUANTILE_METHOD",
    "RUN_KINDS",
    "Corner",
    "Cost",
    "CostChange",
    "CostSummary",
    "Diagnosis",
    "Disagreement",
    "Effects",
    "Finding",
    "GainSource",
    "HostFacts",
    "Kind",
    "LengthCheck",
    "LengthCurve",
    "LengthPoint",
    "LongerPrompt",
    "NetworkBottleneck",
    "NetworkCheck",
    "NoticeableBar",
    "Preset",
    "Price",
    "PriceTier",
    "Priorities",
    "PromptSource",
    "QualityRisk",
    "Rates",
    "Remedy",
    "RequestParts",
    "RunContext",
    "Scenario",
    "ServerAccount",
    "SystemItem",
    "Verdict",
    "Workload",
    "cost_of",
    "cost_text",
    "cost_to_dict",
    "cost_words",
    "diagnosis_to_dict",
    "dollars",
    "parse_priorities",
    "planned_cost",
    "pool_size",
    "price_from_dict",
    "price_to_dict",
    "quantile",
    "quantiles",
    "summarise_costs",
]
