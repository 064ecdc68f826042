"""Pure functions on traces: from the samples of a run to a :class:`~latdoc.model.Diagnosis`.

- :func:`diagnose`: the verdict, findings and shares of one run (``attribution``), from
  the :class:`Facts` the rules read (``facts``) and the rule of each kind of slow
  (``kinds``: one module per kind, the :data:`KINDS` tuple lists them);
- :func:`fit_length_curve`: TTFT against prompt length with its bootstrap interval;
- :func:`compare_samples` and :func:`compare_arms`: two runs or two arms, like with like,
  Holm-adjusted;
- :func:`summarize`: a probe's repeats; :func:`split_ttft` and :func:`server_account`:
  the wait split by who spent it, with the server's own timing;
- :class:`Distribution` and the interval and test functions every one of them uses
  (``stats``).

Nothing here does I/O, sends a request or prints.
"""

from latdoc.analysis.attribution import diagnose
from latdoc.analysis.compare import (
    Comparison,
    GroupComparison,
    MetricComparison,
    compare_arms,
    compare_samples,
)
from latdoc.analysis.engine_metrics import engine_delta, parse_exposition
from latdoc.analysis.facts import Facts, gather_facts
from latdoc.analysis.kinds import KINDS, KindSpec, spec_of
from latdoc.analysis.length import fit_length_curve, length_points
from latdoc.analysis.repeats import RepeatSummary, summarize
from latdoc.analysis.servertime import ServerTiming, server_account, server_timing_of, split_ttft
from latdoc.analysis.stats import (
    Distribution,
    bootstrap_ci,
    difference_ci,
    mann_whitney_p,
    median_of,
    quantile,
    ratio_ci,
)
from latdoc.analysis.traffic import traffic_views

__all__ = [
    "KINDS",
    "Comparison",
    "Distribution",
    "Facts",
    "GroupComparison",
    "KindSpec",
    "MetricComparison",
    "RepeatSummary",
    "ServerTiming",
    "bootstrap_ci",
    "compare_arms",
    "compare_samples",
    "diagnose",
    "difference_ci",
    "engine_delta",
    "fit_length_curve",
    "gather_facts",
    "length_points",
    "mann_whitney_p",
    "median_of",
    "parse_exposition",
    "quantile",
    "ratio_ci",
    "server_account",
    "server_timing_of",
    "spec_of",
    "split_ttft",
    "summarize",
    "traffic_views",
]
