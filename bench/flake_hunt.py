"""A flake hunt: the suite run several times on fresh clones, some beside a CPU hog.

Each run clones the repository's committed HEAD into a directory of its own (what CI
sees: nothing uncommitted, no venv, no cache), installs it with the project's own
Makefile, and runs the tests as CI does (``make test``, lint included) or the
integration tier alone (``--tier integration``). The hog runs keep every core busy
with as many pure-Python busy loops as the machine has cores, at the suite's own
priority, from the tests' start to their end (the install runs without it).

Printed per run: whether the hog ran, the tests passed, failed and skipped, the
seconds pytest took and the seconds of the whole command; then every test that
failed, with how many runs it failed in (beside the hog and without). Each run's log
and JUnit XML stay in the work directory (printed), for the tracebacks.

Exits 1 when any run failed. Run: ``make test-stress`` (``RUNS=5 HOG_RUNS=2`` by
default) or ``.venv/bin/python bench/flake_hunt.py --runs 5 --hog-runs 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
HOG = "while True:\n    pass\n"


@dataclass
class RunResult:
    index: int
    hog: bool
    returncode: int
    wall_s: float
    tests_s: float | None = None
    passed: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    files_s: dict[str, float] = field(default_factory=dict)
    log: Path | None = None


def hog_indices(runs: int, hog_runs: int) -> set[int]:
    """Which runs (0-based) have the hog: spread evenly over the runs."""
    if hog_runs <= 0:
        return set()
    step = runs / hog_runs
    return {min(runs - 1, int(step * k + step / 2)) for k in range(hog_runs)}


@contextmanager
def cpu_hog(cores: int) -> Iterator[None]:
    """``cores`` busy loops, at this process's priority, for the length of the block."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(cores)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


def file_of(classname: str) -> str:
    """The test file of a JUnit class name, relative to ``tests/``:
    ``tests.unit.lab.net.test_lab_net.Class`` is ``unit/lab/net/test_lab_net.py``."""
    parts = classname.split(".")
    module = max((k for k, p in enumerate(parts) if p.startswith("test_")), default=len(parts) - 1)
    return "/".join(parts[1 : module + 1]) + ".py"


def save_durations(results: list[RunResult], path: Path) -> None:
    """Each file's median time over the quiet runs (the hog's are not what CI sees), in
    the file the suite orders itself by (``tests/durations.py``)."""
    quiet = [r.files_s for r in results if not r.hog and r.files_s] or [
        r.files_s for r in results if r.files_s
    ]
    if not quiet:
        return
    names = sorted({name for files in quiet for name in files})
    medians = {n: round(statistics.median(f[n] for f in quiet if n in f), 1) for n in names}
    path.write_text(json.dumps(medians, indent=1) + "\n")


def read_junit(path: Path, result: RunResult) -> None:
    """Fill ``result`` with what pytest's JUnit XML says: counts, failures and time."""
    if not path.exists():
        return
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    result.tests_s = sum(float(s.get("time", 0)) for s in suites)
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        file = file_of(case.get("classname", ""))
        result.files_s[file] = result.files_s.get(file, 0.0) + float(case.get("time", 0))
        if case.find("failure") is not None or case.find("error") is not None:
            result.failed.append(name)
        elif case.find("skipped") is not None:
            result.skipped += 1
        else:
            result.passed += 1


def one_run(
    index: int, hog: bool, tier: str, work: Path, console: Console, *, keep: bool
) -> RunResult:
    clone = work / f"run-{index + 1}"
    log = work / f"run-{index + 1}.log"
    junit = work / f"run-{index + 1}.xml"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    started = time.monotonic()
    with log.open("w") as out:
        install = subprocess.run(
            ["make", "-C", str(clone), ".venv/.installed", ".venv-litellm/.installed"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        if install.returncode != 0:
            return RunResult(index, hog, install.returncode, time.monotonic() - started, log=log)
        console.print(f"  run {index + 1}: installed in {time.monotonic() - started:.0f} s")
        if tier == "all":
            argv = ["make", "-C", str(clone), "test", f"PYTEST_ARGS=--junitxml={junit}"]
        else:
            argv = [str(clone / ".venv/bin/pytest"), "-q", "-n", "3", "--dist", "loadfile"]
            argv += ["-p", "no:cacheprovider", f"--junitxml={junit}", "tests/integration"]
        started = time.monotonic()
        if hog:
            with cpu_hog(os.cpu_count() or 2):
                done = subprocess.run(argv, cwd=clone, stdout=out, stderr=subprocess.STDOUT)
        else:
            done = subprocess.run(argv, cwd=clone, stdout=out, stderr=subprocess.STDOUT)
    result = RunResult(index, hog, done.returncode, time.monotonic() - started, log=log)
    read_junit(junit, result)
    if not keep:
        shutil.rmtree(clone, ignore_errors=True)
    return result


def summary(results: list[RunResult]) -> Table:
    table = Table(title="Runs")
    for column in ("run", "hog", "passed", "failed", "skipped", "pytest s", "command s", "exit"):
        table.add_column(column, justify="right")
    for r in results:
        tests_s = "-" if r.tests_s is None else f"{r.tests_s:.0f}"
        table.add_row(
            str(r.index + 1), "yes" if r.hog else "no", str(r.passed), str(len(r.failed)),
            str(r.skipped), tests_s, f"{r.wall_s:.0f}", str(r.returncode),
        )  # fmt: skip
    return table


def failures(results: list[RunResult]) -> Table | None:
    with_hog = Counter(name for r in results if r.hog for name in r.failed)
    without = Counter(name for r in results if not r.hog for name in r.failed)
    names = sorted(set(with_hog) | set(without), key=lambda n: -(with_hog[n] + without[n]))
    if not names:
        return None
    runs_hog = sum(r.hog for r in results)
    table = Table(title="Tests that failed")
    table.add_column("test")
    table.add_column(f"failed of {len(results)}", justify="right")
    table.add_column(f"beside the hog (of {runs_hog})", justify="right")
    table.add_column(f"without (of {len(results) - runs_hog})", justify="right")
    for name in names:
        total = with_hog[name] + without[name]
        table.add_row(name, str(total), str(with_hog[name]), str(without[name]))
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs in all (default 5)")
    parser.add_argument("--hog-runs", type=int, default=2, help="of them beside the hog")
    parser.add_argument("--tier", choices=("all", "integration"), default="all")
    parser.add_argument("--work", type=Path, help="where the clones go (default: a new temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep each clone (its venv too)")
    parser.add_argument(
        "--save-durations",
        action="store_true",
        help="write each test file's median time over the quiet runs to tests/durations.json",
    )
    args = parser.parse_args()
    if not 1 <= args.runs <= 50 or not 0 <= args.hog_runs <= args.runs:
        parser.error("--runs is 1 to 50, --hog-runs 0 to --runs")
    work = args.work or Path(tempfile.mkdtemp(prefix="latdoc-flake-hunt-"))
    work.mkdir(parents=True, exist_ok=True)
    console = Console()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    hogs = hog_indices(args.runs, args.hog_runs)
    console.print(f"{args.runs} runs of {args.tier} at {head} in {work}; hog on runs "
                  f"{sorted(k + 1 for k in hogs) or 'none'}")  # fmt: skip
    results = []
    for index in range(args.runs):
        result = one_run(index, index in hogs, args.tier, work, console, keep=args.keep)
        results.append(result)
        state = "ok" if result.returncode == 0 and not result.failed else "FAILED"
        tests_s = "-" if result.tests_s is None else f"{result.tests_s:.0f} s of tests"
        console.print(f"  run {index + 1} ({'hog' if result.hog else 'quiet'}): {state}, "
                      f"{tests_s}, {result.wall_s:.0f} s in all, log {result.log}")  # fmt: skip
    console.print(summary(results))
    if args.save_durations:
        save_durations(results, ROOT / "tests" / "durations.json")
    table = failures(results)
    if table is not None:
        console.print(table)
    broken = [r for r in results if r.returncode != 0 and not r.failed]
    for r in broken:
        console.print(f"run {r.index + 1} exited {r.returncode} with no failed test: see {r.log}")
    return 1 if table is not None or broken else 0


if __name__ == "__main__":
    sys.exit(main())
