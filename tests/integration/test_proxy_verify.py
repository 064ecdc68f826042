"""A proxy named: a slow ``CONNECT`` is a network-path finding with its remedies, and
``latdoc verify --remedy direct`` and ``--remedy proxy --alt-proxy URL`` measure them
through real proxies on loopback (tinyproxy, microsocks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import LabFactory
from forward_proxy import binary, microsocks, slow_answering, tinyproxy
from latdoc.advice import keys
from latdoc.cli import EXIT_OK, EXIT_USAGE, main

PASSWORD = "alt-pr0xy-pw-51c0"


needs_tinyproxy = pytest.mark.skipif(binary("tinyproxy") is None, reason="needs tinyproxy")


def _verify(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, object], str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip().startswith("{") else {}, out + err


@needs_tinyproxy
def test_verify_direct_measures_the_proxy_against_the_direct_route(
    lab: LabFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    with lab(tls=True) as server, tinyproxy(tmp_path / "proxy") as proxy:
        assert server.ca_file is not None
        monkeypatch.setenv("HTTPS_PROXY", proxy.url())
        argv = ["verify", server.base_url, "-m", "lab-sim", "--cacert", server.ca_file,
                "--remedy", "direct", "--max-requests", "30", "--max-seconds", "60",
                "--db", str(tmp_path / "v.db"), "--json"]  # fmt: skip
        code, document, text = _verify(argv, capsys)
        tunnels = proxy.log_text().count("CONNECT localhost")
        monkeypatch.delenv("HTTPS_PROXY")
        direct_code, direct_doc, _ = _verify(argv, capsys)
    assert direct_code == EXIT_USAGE  # not applicable: nothing was measured
    assert code == EXIT_OK, text[-2000:]
    assert document["verdict"] != "not_applicable", document.get("reason")
    assert f"through {proxy.url()} (HTTPS_PROXY)" in json.dumps(document)
    assert tunnels >= 3  # arm A's requests, each on a new connection through the proxy
    assert direct_doc["verdict"] == "not_applicable"
    assert "go direct already" in str(direct_doc["reason"])


@pytest.mark.skipif(binary("microsocks") is None, reason="needs microsocks")
def test_verify_another_proxy_keeps_its_password_out_of_every_output(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(tls=True) as server, microsocks(auth=("erin", PASSWORD)) as socks:
        assert server.ca_file is not None
        db = tmp_path / "p.db"
        alt = socks.url("socks5h", f"erin:{PASSWORD}@")
        argv = ["verify", server.base_url, "-m", "lab-sim", "--cacert", server.ca_file,
                "--remedy", "proxy", "--alt-proxy", alt, "--max-requests", "30",
                "--max-seconds", "60", "--db", str(db), "--json"]  # fmt: skip
        code, document, text = _verify(argv, capsys)
        missing, _, missing_text = _verify(argv[:8] + argv[10:], capsys)
    assert code == EXIT_OK, text[-2000:]
    assert document["verdict"] != "not_applicable", document.get("reason")
    assert socks.url("socks5h", "***@") in json.dumps(document)
    assert PASSWORD not in text
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("p.db*"))
    assert stored and PASSWORD.encode() not in stored
    assert missing == EXIT_USAGE and "--alt-proxy URL" in missing_text


HOLD_S = 0.08


@needs_tinyproxy
def test_diagnose_names_a_proxy_slow_to_open_its_tunnels(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (
        lab(tls=True) as server,
        tinyproxy(tmp_path / "proxy") as near,
        slow_answering(near, HOLD_S) as slow,
    ):
        assert server.ca_file is not None
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--cacert", server.ca_file,
             "--proxy", slow.url(), "--max-requests", "16", "--max-seconds", "90",
             "--db", str(tmp_path / "d.db"), "--json"]
        )  # fmt: skip
        out, err = capsys.readouterr()
    assert code == EXIT_OK, err[-2000:]
    document = json.loads(out)
    assert document["steps"]["network"]["proxy_connect_ms"] >= HOLD_S * 1000
    titles = [f["title"] for f in document["findings"]]
    assert any(t.startswith("A proxy adds time to every new connection") for t in titles), titles
    remedies = {r["key"] for r in document["remedies"]}
    assert {keys.PROXY_BYPASS, keys.PROXY_KEEP_ALIVE, keys.NEARER_PROXY} <= remedies, remedies
