"""The flake hunt's reading of its runs: which run has the hog, what pytest's JUnit XML
says, each file's time, and the durations file the suite orders itself by."""

from __future__ import annotations

import json
from pathlib import Path

import durations
from flake_hunt import RunResult, file_of, hog_indices, read_junit, save_durations

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4" time="12.5">
<testcase classname="tests.integration.test_lab_net" name="test_a" time="3.0"/>
<testcase classname="tests.integration.test_lab_net" name="test_b" time="2.0">
  <failure message="assert 44.5 == 20 ± 15">Traceback</failure></testcase>
<testcase classname="tests.unit.lab.net.test_lab_net.TestLink" name="test_c" time="0.5"/>
<testcase classname="tests.unit.test_x" name="test_d" time="0.1"><skipped/></testcase>
</testsuite></testsuites>
"""


def test_the_hog_runs_are_spread_over_the_runs() -> None:
    assert hog_indices(5, 2) == {1, 3}
    assert hog_indices(4, 4) == {0, 1, 2, 3}
    assert hog_indices(5, 0) == set()


def test_a_junit_class_name_is_its_test_file() -> None:
    assert file_of("tests.integration.test_lab_net") == "integration/test_lab_net.py"
    assert file_of("tests.unit.lab.net.test_lab_net.TestLink") == "unit/lab/net/test_lab_net.py"


def test_the_junit_xml_gives_counts_failures_time_and_each_files_time(tmp_path: Path) -> None:
    (tmp_path / "run.xml").write_text(JUNIT)
    result = RunResult(0, hog=False, returncode=1, wall_s=20.0)
    read_junit(tmp_path / "run.xml", result)
    assert (result.passed, result.skipped, result.tests_s) == (2, 1, 12.5)
    assert result.failed == ["tests.integration.test_lab_net::test_b"]
    assert result.files_s == {
        "integration/test_lab_net.py": 5.0,
        "unit/lab/net/test_lab_net.py": 0.5,
        "unit/test_x.py": 0.1,
    }
    missing = RunResult(1, hog=True, returncode=2, wall_s=1.0)
    read_junit(tmp_path / "none.xml", missing)
    assert missing.tests_s is None and missing.failed == []


def test_the_durations_are_the_quiet_runs_median_and_order_the_files(tmp_path: Path) -> None:
    runs = [
        RunResult(0, False, 0, 1.0, files_s={"a.py": 1.0, "b.py": 9.0}),
        RunResult(1, True, 0, 1.0, files_s={"a.py": 50.0, "b.py": 90.0}),
        RunResult(2, False, 0, 1.0, files_s={"a.py": 3.0, "b.py": 7.0, "c.py": 4.0}),
    ]
    path = tmp_path / "durations.json"
    save_durations(runs, path)
    seconds = json.loads(path.read_text())
    assert seconds == {"a.py": 2.0, "b.py": 8.0, "c.py": 4.0}
    assert durations.load(path) == seconds
    # Longest first; a file not yet timed runs as the median (4 s), ties as collected.
    order = durations.longest_first(["a.py", "new.py", "c.py", "b.py", "a.py"], seconds)
    assert order == ["b.py", "new.py", "c.py", "a.py"]
    assert durations.load(tmp_path / "absent.json") == {}
