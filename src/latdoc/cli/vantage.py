"""What ``probe`` and ``diagnose`` print with ``--vantage``: the places side by side."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from latdoc.cli._options import EXIT_OK, EXIT_REQUEST_FAILED
from latdoc.features.vantage import VantageRuns, render_vantages, vantages_to_dict
from latdoc.report import make_console


def emit_vantages(runs: VantageRuns, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the comparison (``--json``: its document); say where each run is kept."""
    comparison = runs.comparison
    if args.json:
        out.write(json.dumps(vantages_to_dict(comparison), indent=2) + "\n")
    else:
        make_console(out).print(render_vantages(comparison, title="The endpoint by vantage"))
    kept = ", ".join(f"{name} {run_id}" for name, run_id in runs.run_ids.items())
    print(f"Runs kept in {runs.store_path}, one per vantage: {kept}.", file=err)
    every_failed = any(r.requests and r.failed == r.requests for r in comparison.rows)
    return EXIT_REQUEST_FAILED if every_failed else EXIT_OK
