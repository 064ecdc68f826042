"""The lab's shape: each room's public names, a cheap import, and how services stop.

Every lab service (the simulated server, its child process, the engine, the
network) starts and stops through :class:`latdoc.lab._service.Service`; here a
real :class:`LabServer` shows the contract, and a service that cannot stop shows
which error wins.
"""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from latdoc.lab import LabConfig, LabProcess, LabServer, LatencyModel


def test_importing_the_lab_starts_nothing_and_loads_no_server() -> None:
    code = (
        "import sys, threading; import latdoc.lab, latdoc.lab.sim, latdoc.lab.net, "
        "latdoc.lab.engine; assert threading.active_count() == 1; "
        "heavy = {'xllamacpp', 'uvicorn', 'hypercorn', 'trustme', 'dnslib'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert out.stderr == ""


def test_a_service_stops_when_its_block_ends_or_fails() -> None:
    fast = LabConfig(latency=LatencyModel(prefill_base_ms=1, decode_ms_per_token=1))
    with LabServer(fast) as lab:
        url = f"{lab.base_url}/models"
        assert httpx.get(url).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)
    with pytest.raises(RuntimeError, match="in the block"), LabServer(fast) as lab:  # noqa: PT012
        url = f"{lab.base_url}/models"
        raise RuntimeError("in the block")
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)


def test_the_child_process_runs_its_entry_point_once(capfd: pytest.CaptureFixture[str]) -> None:
    fast = LabConfig(latency=LatencyModel(prefill_base_ms=1, decode_ms_per_token=1))
    with LabProcess(fast) as lab:
        assert httpx.get(f"{lab.base_url}/models").status_code == 200
    assert capfd.readouterr().err == ""
