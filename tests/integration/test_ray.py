"""Beyond one process on Ray: load from actors, the network step from vantage nodes.

One real Ray cluster on loopback for the module (:class:`LocalRayCluster`): a head
with 2 CPUs carrying ``vantage:a`` and a second node, a process of its own, with
1 CPU carrying ``vantage:b``. It is stopped by its own process ids at the end.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import latdoc
from latdoc import Endpoint, LoadPlan, Store, Workers, load_endpoint, render_load, render_text
from latdoc.cli import main
from latdoc.lab.raycluster import LocalRayCluster, RayNode
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel

pytestmark = pytest.mark.slow

pytest.importorskip("ray", reason="the [ray] extra is not installed")

OUTPUT = 16
LATENCY = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=10.0)
SLOW = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=150.0)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    source = str(Path(latdoc.__file__).resolve().parents[1])
    nodes = (RayNode(2, {"vantage:a": 1}), RayNode(1, {"vantage:b": 1}))
    with LocalRayCluster(nodes, env={"PYTHONPATH": source}, timeout=120) as running:
        yield running
    assert running.pids() == []


@pytest.fixture(scope="module")
def lab_url() -> Iterator[str]:
    with LabProcess(LabConfig(slots=8, latency=LATENCY, seed=5)) as server:
        yield server.base_url


def _plan(base_url: str, **options: object) -> LoadPlan:
    defaults: dict[str, object] = {
        "max_tokens": OUTPUT,
        "duration_per_level": 1.5,
        "max_seconds": 60.0,
        "seed": 3,
    }
    return LoadPlan(Endpoint(base_url, "lab-sim"), **{**defaults, **options})  # type: ignore[arg-type]


def _members(db: Path) -> list[dict[str, object]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists():
            with sqlite3.connect(db) as conn:
                try:
                    row = conn.execute("SELECT meta FROM runs").fetchone()
                except sqlite3.OperationalError:
                    row = None
            if row is not None:
                members: list[dict[str, object]] = json.loads(row[0])["workers"]["members"]
                return members
        time.sleep(0.05)
    raise AssertionError("the run did not start in time")


def test_load_from_ray_actors_lands_in_one_run_like_a_local_load(
    cluster: LocalRayCluster, lab_url: str, tmp_path: Path
) -> None:
    with Store(tmp_path / "ray.db") as store:
        run = load_endpoint(
            _plan(lab_url, concurrency=(2, 4)), store=store, workers=Workers(2, ray=cluster.address)
        )
        info = store.run_info(run.run_id)
    assert run.status == "done"
    assert [lv.window.label for lv in run.analysis.levels] == ["2", "4"]
    assert {s.worker for s in run.samples} == {0, 1}
    assert all(s.trace.ok for s in run.samples)
    four = run.analysis.levels[1]
    assert four.little is not None and four.little.in_flight == pytest.approx(4, rel=0.15)
    workers = info.meta["workers"]
    assert (workers["backend"], workers["address"]) == ("ray", cluster.address)
    pids = {m["pid"] for m in workers["members"]}
    assert len(pids) == 2 and os.getpid() not in pids
    for member in workers["members"]:
        offset = member["clock_offset"]
        assert abs(offset["monotonic_ns"]) <= offset["uncertainty_ns"] < 100_000_000
    text = " ".join(render_text(render_load(run.analysis, run.notes)).split())
    assert "Latency by level" in text and "Note: sent from 2 Ray actors on " in text


def test_a_dead_actor_loses_only_its_in_flight_requests(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    db = tmp_path / "dead.db"
    killed: list[int] = []

    def kill_worker_one() -> None:
        members = _members(db)
        time.sleep(1.0)  # the level is under way: two requests out, none back
        pid = next(int(str(m["pid"])) for m in members if m["worker"] == 1)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    with LabProcess(LabConfig(slots=8, latency=SLOW)) as server, Store(db) as store:
        killer = threading.Thread(target=kill_worker_one)
        killer.start()
        run = load_endpoint(
            # Both streams of each actor send at once (no spread start): two in flight.
            replace(
                _plan(server.base_url, concurrency=(4,), duration_per_level=2.5), burst_start=True
            ),
            store=store,
            workers=Workers(2, ray=cluster.address),
        )
        killer.join()
    assert killed
    lost = [n.text for n in run.notes if "was lost" in n.text]
    assert len(lost) == 1 and lost[0].startswith("worker 1 (pid ")
    assert "2 requests it had started were lost in flight" in lost[0]
    assert {s.worker for s in run.samples} == {0}


def test_ctrl_c_stops_every_actor(cluster: LocalRayCluster, lab_url: str, tmp_path: Path) -> None:
    db = tmp_path / "int.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "latdoc", "load", lab_url, "-m", "lab-sim", "--db", str(db),
         "--max-tokens", str(OUTPUT), "--concurrency", "4", "--duration-per-level", "30",
         "--ray", cluster.address, "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        pids = [int(str(m["pid"])) for m in _members(db)]
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted by the user" in out, (out, err)
    assert "Traceback" not in err, err
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_probe_from_two_vantages_compares_them_side_by_side(
    cluster: LocalRayCluster, lab_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "vantage.db"
    code = main(
        ["probe", lab_url, "-m", "lab-sim", "--db", str(db), "-n", "4", "--new-connection-each",
         "--ray", cluster.address, "--vantage", "a,b", "--json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    assert document["schema"] == "latdoc.vantages/1"
    assert [v["name"] for v in document["vantages"]] == ["a", "b"]
    for v in document["vantages"]:
        assert v["requests"] == 4 and v["failed"] == 0
        assert v["dns_ms"] is not None and v["connect_ms"] > 0 and v["ttft_ms"] > 20
    assert document["nearest"] in ("a", "b") and document["nearest_by"] == "rtt"
    with Store(db) as store:
        runs = {r.meta["vantage"]: r for r in store.find_runs("probe")}
    assert set(runs) == {"a", "b"}
    assert all(r.requests == 4 and r.meta["ray"] == cluster.address for r in runs.values())
    code = main(["probe", lab_url, "-m", "lab-sim", "--ray", cluster.address, "--vantage", "zz"])
    assert code == 2
    assert capsys.readouterr().err.startswith(
        "Error: no node of the Ray cluster at " + cluster.address + " carries vantage:zz"
    )


def test_diagnose_from_two_vantages_keeps_a_diagnosis_each(
    cluster: LocalRayCluster, lab_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "diag.db"
    code = main(
        ["diagnose", lab_url, "-m", "lab-sim", "--db", str(db), "--max-seconds", "6",
         "--max-requests", "14", "--ray", cluster.address, "--vantage", "b,a"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "The endpoint by vantage" in out and "Nearest:" in out
    with Store(db) as store:
        runs = {r.meta["vantage"]: r for r in store.find_runs("diagnose")}
        assert set(runs) == {"a", "b"}
        for info in runs.values():
            _, samples, document = store.load_run(info.run_id)
            assert document is not None and document["schema"].startswith("latdoc.diagnosis/")
            assert any(s.step == "network" for s in samples)


def test_more_workers_than_the_cluster_has_cpus_is_refused(
    cluster: LocalRayCluster, lab_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["load", lab_url, "-m", "lab-sim", "--concurrency", "9", "--ray", cluster.address,
         "--workers", "9"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"Error: 9 load workers need 9 CPUs; the Ray cluster at {cluster.address} has 3"
    )
