"""How long latdoc takes to start: ``import latdoc``, ``latdoc --version`` and ``latdoc --help``.

Each command runs as a fresh process of this interpreter, next to ``python -c pass``
(the interpreter's own start, the floor), interleaved: every round runs all four
once, in turn, so a busy moment of the machine falls on all of them alike. One
warm-up round is run and not counted. Printed per command: the median and the
spread (min … max) of the wall time, its ratio to ``python -c pass`` and the goal
for that ratio; then the distribution's core dependencies (those no extra asks
for) as the installed metadata declares them.

``--check`` exits 1 when a median ratio misses its goal; without it the goals are
only printed.
Run: ``make bench`` or ``.venv/bin/python bench/startup.py``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DISTRIBUTION = "llm-latency-doctor"


@dataclass(frozen=True)
class Command:
    """One way of starting: what runs, and the most it may take against ``python -c pass``."""

    label: str
    argv: tuple[str, ...]
    goal: float | None


def latdoc_argv() -> tuple[str, ...]:
    """The ``latdoc`` entry point next to this interpreter, or ``python -m latdoc``."""
    script = Path(sys.executable).parent / "latdoc"
    return (str(script),) if script.exists() else (sys.executable, "-m", "latdoc")


def commands() -> list[Command]:
    latdoc = latdoc_argv()
    return [
        Command("python -c pass", (sys.executable, "-c", "pass"), None),
        Command("import latdoc", (sys.executable, "-c", "import latdoc"), 12.0),
        Command("latdoc --version", (*latdoc, "--version"), 4.0),
        Command("latdoc --help", (*latdoc, "--help"), 4.0),
    ]


def wall_seconds(argv: tuple[str, ...]) -> float:
    start = time.perf_counter_ns()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter_ns() - start) / 1e9


def measure(cmds: list[Command], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {c.label: [] for c in cmds}
    for c in cmds:
        wall_seconds(c.argv)
    for _ in range(rounds):
        for c in cmds:
            times[c.label].append(wall_seconds(c.argv))
    return times


def core_dependencies() -> list[str]:
    """The distribution's requirements without an ``extra == …`` marker."""
    requires = importlib.metadata.requires(DISTRIBUTION) or []
    return [r for r in requires if "extra ==" not in r.partition(";")[2]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="measured rounds (default 15)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()
    cmds = commands()
    times = measure(cmds, max(1, args.rounds))
    floor = statistics.median(times[cmds[0].label])
    print(f"{sys.executable} ({sys.version.split()[0]}), {args.rounds} interleaved rounds")
    print(f"{'':<18} {'median':>9} {'min … max':>21} {'× pass':>7} {'goal':>6}")
    missed: list[str] = []
    for c in cmds:
        t = times[c.label]
        median = statistics.median(t)
        ratio = median / floor
        spread = f"{min(t) * 1e3:.1f} … {max(t) * 1e3:.1f} ms"
        goal = f"≤{c.goal:g}×" if c.goal is not None else ""
        mark = ""
        if c.goal is not None and ratio > c.goal:
            missed.append(c.label)
            mark = "  missed"
        print(f"{c.label:<18} {median * 1e3:>6.1f} ms {spread:>21} {ratio:>6.1f}× {goal:>6}{mark}")
    print()
    print(f"core dependencies of {DISTRIBUTION}:")
    for requirement in core_dependencies():
        print(f"  {requirement}")
    extras = importlib.metadata.metadata(DISTRIBUTION).get_all("Provides-Extra") or []
    print(f"extras: {', '.join(extras)}")
    if missed:
        print(f"\ngoal missed: {', '.join(missed)}")
        if args.check:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
