"""``--vantage``: the network step, or a whole diagnosis, measured from Ray nodes labelled
as vantage points, kept as a run per vantage and compared.

- ``analysis``: the network phases side by side, the nearest named with its margin;
- ``run``: the measuring shipped to each vantage and the runs kept;
- ``render``: one table and a JSON document.
"""

from latdoc.features.vantage.analysis import VantageComparison
from latdoc.features.vantage.render import (
    VANTAGE_SCHEMA,
    ShownVantages,
    render_vantages,
    vantages_to_dict,
)
from latdoc.features.vantage.run import VantageRuns, diagnose_vantages, probe_vantages

__all__ = [
    "VANTAGE_SCHEMA",
    "ShownVantages",
    "VantageComparison",
    "VantageRuns",
    "diagnose_vantages",
    "probe_vantages",
    "render_vantages",
    "vantages_to_dict",
]
