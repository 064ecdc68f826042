"""The suite's files, longest first, so two workers end together.

``make test`` runs on two workers that each take a whole file at a time (``--dist
loadfile``), in the order the files were collected: alphabetically, the long files of
``verify`` and ``watch`` came last, and one worker ran them alone while the other sat
idle for a minute. Given in order of their running time, longest first, the workers
share the files as a greedy scheduler would (the longest-processing-time rule), and the
last files to run are the short ones.

The times are what each file took in a quiet run of the suite, kept in
``durations.json`` (seconds by file, relative to ``tests/``); ``bench/flake_hunt.py
--save-durations`` writes it again from its quiet runs. A file it does not know yet
runs among those of median length; the order only shares the work, so a time gone
stale costs a little balance and nothing else.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from paths import TESTS

FILE = TESTS / "durations.json"


def load(path: Path = FILE) -> dict[str, float]:
    """Seconds by test file; empty where there is no file or it does not parse."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def longest_first(files: Sequence[str], seconds: dict[str, float]) -> list[str]:
    """``files`` (without repeats) by their known time, longest first; an unknown file
    as the median, ties in the order given."""
    default = statistics.median(seconds.values()) if seconds else 0.0
    unique = list(dict.fromkeys(files))
    order = {name: k for k, name in enumerate(unique)}
    return sorted(unique, key=lambda name: (-seconds.get(name, default), order[name]))
