"""The stored runs as ``latdoc runs`` lists them: a line each, in the order given, with
what a run left out (requests not recorded or not reported, and why) under it."""

from __future__ import annotations

from collections.abc import Sequence

from latdoc.store import RunInfo


def render_runs(runs: Sequence[RunInfo]) -> str:
    """A header and a line per run: its id, start (UTC), status, requests, failures,
    verdict, model and endpoint."""
    lines = [
        f"  {'run':<24} {'started (UTC)':<20} {'status':<12} {'req':>4} {'fail':>4}  "
        f"{'verdict':<14} model @ endpoint"
    ]
    for r in runs:
        lines.append(
            f"  {r.run_id:<24} {r.started_at:%Y-%m-%d %H:%M:%S}  {r.status:<12} "
            f"{r.requests:>4} {r.failed:>4}  {r.verdict or '-':<14} {r.model} @ {r.endpoint}"
        )
        for key in ("not_recorded", "not_reported"):
            lost = r.meta.get(key)
            if isinstance(lost, dict) and isinstance(lost.get("reasons"), dict):
                for why, n in lost["reasons"].items():
                    lines.append(
                        f"  {'':<24} {n} request{'' if n == 1 else 's'} {lost['what']}: {why}"
                    )
    return "\n".join(lines)
