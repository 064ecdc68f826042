"""``latdoc load``: a sweep of closed-loop concurrency or open-loop arrival rates.

- ``send``: the levels and what each sends, from this process or from worker
  processes and Ray actors; the search for the most load that meets the objectives;
  a trace replayed;
- ``analysis``: percentiles, throughput, the knee, the plateau and Little's law, and
  an SLO's objectives read at a level;
- ``run``: the sweep kept as a run, held against a baseline's gates, and analysed
  again from the store;
- ``document``: the sweep's analysis as the store keeps it, and back;
- ``render``: two tables per level, a JSON document, a page.
"""

from latdoc.features.load.analysis import (
    LevelWindow,
    LoadAnalysis,
    Objective,
    Slo,
    objective,
    parse_slo,
)
from latdoc.features.load.document import LOAD_RECORD_SCHEMA, load_from_record, load_to_record
from latdoc.features.load.render import (
    LOAD_SCHEMA,
    ShownLoad,
    load_to_dict,
    render_load,
    render_load_html,
)
from latdoc.features.load.run import (
    DEFAULT_RAY_WORKERS,
    MAX_REMOTE_STREAMS,
    LoadRun,
    Workers,
    check_load_target,
    is_loopback,
    load_endpoint,
    reload_load,
)
from latdoc.features.load.send.findmax import DEFAULT_LIMIT, FindMaxAsk
from latdoc.features.load.send.replay import Replay
from latdoc.features.load.send.sweep import DEFAULT_CONCURRENCY, LoadPlan, parse_levels, parse_rates

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_LIMIT",
    "DEFAULT_RAY_WORKERS",
    "LOAD_RECORD_SCHEMA",
    "LOAD_SCHEMA",
    "MAX_REMOTE_STREAMS",
    "FindMaxAsk",
    "LevelWindow",
    "LoadAnalysis",
    "LoadPlan",
    "LoadRun",
    "Objective",
    "Replay",
    "ShownLoad",
    "Slo",
    "Workers",
    "check_load_target",
    "is_loopback",
    "load_endpoint",
    "load_from_record",
    "load_to_dict",
    "load_to_record",
    "objective",
    "parse_levels",
    "parse_rates",
    "parse_slo",
    "reload_load",
    "render_load",
    "render_load_html",
]
