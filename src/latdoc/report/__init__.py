"""Rendering a diagnosis or a probe: terminal renderables (rich), JSON documents with a
schema name, and a self-contained HTML page with plots.

Renderers are pure: they return renderables, dicts or strings; only the CLI writes.
Importing this package does not load matplotlib; :func:`render_html` does, when called.
"""

from latdoc.report._compare import (
    COMPARISON_SCHEMA,
    comparison_to_dict,
    format_p,
    render_comparison,
    render_comparison_html,
    run_to_dict,
)
from latdoc.report._console import make_console, render_text
from latdoc.report._gates import gates_to_dict, render_gates
from latdoc.report._html import render_html
from latdoc.report._providers import (
    PROVIDERS_SCHEMA,
    ShownProviders,
    providers_to_dict,
    render_providers,
)
from latdoc.report._runs import render_runs
from latdoc.report._system import SYSTEM_SCHEMA, ShownSystem, render_system, system_to_dict
from latdoc.report._terminal_diagnosis import render_diagnosis
from latdoc.report._terminal_probe import render_summary, render_waterfall
from latdoc.report.json_out import (
    DIAGNOSIS_SCHEMA,
    TRACE_SCHEMA,
    diagnosis_to_dict,
    trace_to_dict,
)
from latdoc.report.metrics import PrometheusMetrics
from latdoc.report.names import format_ms
from latdoc.report.progress import ProgressBars

__all__ = [
    "COMPARISON_SCHEMA",
    "DIAGNOSIS_SCHEMA",
    "PROVIDERS_SCHEMA",
    "SYSTEM_SCHEMA",
    "TRACE_SCHEMA",
    "ProgressBars",
    "PrometheusMetrics",
    "ShownProviders",
    "ShownSystem",
    "comparison_to_dict",
    "diagnosis_to_dict",
    "format_ms",
    "format_p",
    "gates_to_dict",
    "make_console",
    "providers_to_dict",
    "render_comparison",
    "render_comparison_html",
    "render_diagnosis",
    "render_gates",
    "render_html",
    "render_providers",
    "render_runs",
    "render_summary",
    "render_system",
    "render_text",
    "render_waterfall",
    "run_to_dict",
    "system_to_dict",
    "trace_to_dict",
]
