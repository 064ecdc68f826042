"""How often ``latdoc compare`` cries wolf: two runs of one unchanged endpoint, many seeds.

For each seed, two probe runs of the same requests are sent to the same simulated
endpoint (in its own process, with a little jitter so runs are not identical) and
stored; ``compare`` then judges every metric of every group. With the p-values
adjusted for the number of tests, at least 19 of 20 comparisons must say "no
significant difference". The second half of the output shows the comparison
still sees a real 10% difference, so the test is not simply blind.
Run: ``make bench`` or ``.venv/bin/python bench/compare_null.py``.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path

from latdoc.features.compare import compare_runs
from latdoc.features.probe import probe_endpoint
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint
from latdoc.store import Store
from latdoc.workload import ProbePlan

LATENCY = LatencyModel(
    prefill_base_ms=30.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0, jitter_ms=3.0
)


def probe_run(store: Store, url: str, seed: int, repeat: int) -> str:
    plan = ProbePlan(Endpoint(url, "lab-sim"), prompt_tokens=None, max_tokens=8, repeat=repeat,
                     seed=seed)  # fmt: skip
    return probe_endpoint(plan, store=store).run_id


def significant_comparisons(
    store: Store, a_url: str, b_url: str, seeds: int, repeat: int
) -> tuple[int, float]:
    """(comparisons with any significant metric, mean TTFT ratio A ÷ B) over ``seeds``."""
    flagged, ratios = 0, []
    for seed in range(seeds):
        a = probe_run(store, a_url, seed, repeat)
        b = probe_run(store, b_url, seed + 1000, repeat)
        result = compare_runs(store, a, b, allow_different=True, seed=seed).comparison
        flagged += any(m.significant for g in result.groups for m in g.metrics)
        headline = result.headline("ttft")
        if headline is not None and headline.ratio is not None:
            ratios.append(headline.ratio)
    return flagged, sum(ratios) / max(1, len(ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=20, help="requests per run")
    args = parser.parse_args()
    slower = replace(LATENCY, prefill_base_ms=LATENCY.prefill_base_ms * 1.1 + 2.0)
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "bench.db") as store:
        with LabProcess(LabConfig(latency=LATENCY, seed=1)) as lab:
            flagged, ratio = significant_comparisons(
                store, lab.base_url, lab.base_url, args.seeds, args.repeat
            )
            print(f"same endpoint twice: {args.seeds - flagged} of {args.seeds} comparisons "
                  f"found no significant difference (goal: at least 19 of 20); "
                  f"mean TTFT ratio A÷B {ratio:.3f}")  # fmt: skip
        with (
            LabProcess(LabConfig(latency=slower, seed=2)) as slow,
            LabProcess(LabConfig(latency=LATENCY, seed=3)) as fast,
        ):
            seen, ratio = significant_comparisons(
                store, slow.base_url, fast.base_url, max(5, args.seeds // 4), args.repeat
            )
            runs = max(5, args.seeds // 4)
            print(f"a real ~13% TTFT difference: found significant in {seen} of {runs} "
                  f"comparisons; mean TTFT ratio A÷B {ratio:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
