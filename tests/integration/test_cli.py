"""``latdoc probe`` end to end: output, JSON keys, exit codes, errors, and the secret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAST, LabFactory
from latdoc.cli import EXIT_OK, EXIT_REQUEST_FAILED, EXIT_USAGE, main
from latdoc.lab.sim import LabConfig
from scripted_server import ScriptedServer, plain_response

JSON_KEYS = {
    "dns_ms",
    "connect_ms",
    "tls_ms",
    "send_ms",
    "wait_ms",
    "ttfb_ms",
    "ttft_ms",
    "tpot_ms",
    "total_ms",
    "new_connection",
    "http_version",
    "prompt_tokens",
    "output_tokens",
    "output_tokens_exact",
    "error",
    "chunks",
}


def test_json_has_one_object_per_request(
    lab: LabFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(tls=True) as server:
        assert server.ca_file is not None
        code = main(
            ["probe", server.base_url, "--model", "lab-sim", "--cacert", server.ca_file,
             "--repeat", "3", "--max-tokens", "5", "--json"]
        )  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert code == EXIT_OK
    rows = [json.loads(line) for line in out]
    assert len(rows) == 3
    for row in rows:
        assert row.keys() >= JSON_KEYS
        assert row["schema"] == "latdoc.trace/1"
        assert row["error"] is None
        assert row["output_tokens"] == 5 and row["output_tokens_exact"] is True
        assert len(row["chunks"]) == 5
        assert row["ttft_ms"] == row["chunks"][0]["t_ms"]
        assert row["ttfb_ms"] <= row["ttft_ms"] <= row["total_ms"]
    assert [r["new_connection"] for r in rows] == [True, False, False]
    assert rows[0]["tls_ms"] > 0 and rows[1]["tls_ms"] == 0
    assert rows[0]["http_version"] == "HTTP/1.1"


def test_text_shows_the_waterfall_and_cold_apart_from_warm(
    lab: LabFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab() as server:
        code = main(["probe", server.base_url, "-m", "lab-sim", "-n", "4", "--max-tokens", "4"])
    out = capsys.readouterr().out
    assert code == EXIT_OK
    for label in ("DNS", "TCP", "Send", "Server wait", "First token", "Streaming"):
        assert label in out
    waterfall = out[: out.index("requests:")]
    assert "TLS" not in waterfall
    assert "Cold (new connection, n = 1)" in out
    assert "Warm (reused connection, n = 3)" in out
    assert "mean" in out and "± σ" in out and "min … max" in out
    assert "\x1b[" not in out, "piped output is plain text"
    assert "Keep-alive saves" in out


def test_new_connection_each_has_no_warm_group(
    lab: LabFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab() as server:
        code = main(["probe", server.base_url, "-m", "lab-sim", "-n", "3", "--new-connection-each"])
    out = capsys.readouterr().out
    assert code == EXIT_OK
    assert "Cold (new connection, n = 3)" in out
    assert "Warm" not in out


def test_failed_requests_print_one_error_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-live-abcdef0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    body = json.dumps({"error": {"message": f"rate limited for {secret}"}}).encode()
    script = plain_response("429 Too Many Requests", "application/json", body)
    script[0] = script[0].replace(b"\r\n\r\n", b"\r\nretry-after: 3\r\n\r\n")
    with ScriptedServer(script) as server:
        code = main(["probe", server.base_url, "-m", "x", "-n", "2", "--json"])
        assert secret.encode() in server.requests[0]
    captured = capsys.readouterr()
    assert code == EXIT_REQUEST_FAILED
    errors = [line for line in captured.err.splitlines() if line.startswith("Error:")]
    assert len(errors) == 2
    assert "request 1/2: http:429 during wait" in errors[0]
    assert "Traceback" not in captured.err
    assert secret not in captured.out and secret not in captured.err
    assert [json.loads(line)["error"]["code"] for line in captured.out.splitlines()] == [
        "http:429",
        "http:429",
    ]
    assert json.loads(captured.out.splitlines()[0])["error"]["retry_after_s"] == 3.0


CANARY = "sk-canary-" + "7f3e9a1c5b" * 3


"""A key no output may ever hold: the lab answers only to it, so every command below
sent it, and none may print, store, export or label it."""


def test_the_canary_key_reaches_the_server_and_no_output(
    lab: LabFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sqlite3

    from latdoc.lab.sim import requests_received
    from latdoc.report.metrics import PrometheusMetrics
    from latdoc.store import Store

    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    scraped: list[bytes] = []
    close = PrometheusMetrics.close

    def scrape_then_close(self: PrometheusMetrics) -> None:
        import prometheus_client

        scraped.append(prometheus_client.generate_latest(self.registry))
        close(self)

    monkeypatch.setattr(PrometheusMetrics, "close", scrape_then_close)
    db, files = tmp_path / "canary.db", tmp_path / "out"
    files.mkdir()
    config = LabConfig(latency=FAST, api_key=CANARY)
    outputs: list[str] = []

    def run(*argv: str, expect: int = EXIT_OK) -> str:
        code = main([*argv, "--db", str(db)])
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)
        assert code == expect, (argv, captured.err)
        return captured.out

    with lab(config) as server, lab(config) as other:
        url = server.base_url
        target = [url, "-m", "lab-sim", "--max-tokens", "4"]
        run("probe", *target, "-n", "2", "--json")
        run(
            "diagnose",
            *target,
            "--max-requests",
            "20",
            "--seed",
            "1",
            "--json",
            "--html",
            str(files / "diagnose.html"),
        )
        for remedy in (
            ["keepalive"],
            ["retry", "--trials", "3"],
            ["endpoint", "--alt", other.base_url, "--same-key"],
        ):
            run(
                "verify",
                *target,
                "--remedy",
                *remedy,
                "--max-requests",
                "24",
                "--seed",
                "1",
                "--html",
                str(files / f"verify-{remedy[0]}.html"),
            )
        run("verify", *target, "--remedy", "endpoint", "--alt", other.base_url, expect=EXIT_USAGE)
        run(
            "load",
            *target,
            "--concurrency",
            "1,2",
            "--duration-per-level",
            "0.5s",
            "--metrics-port",
            "0",
            "--html",
            str(files / "load.html"),
        )
        run(
            "watch",
            *target,
            "--name",
            "canary",
            "--once",
            "--long-tokens",
            "128",
            "--metrics-port",
            "0",
        )
        assert server.app is not None and other.app is not None
        sent = requests_received(server.app) + requests_received(other.app)
    assert sent > 50, "every command reached the lab with the canary key"
    run("runs")
    with Store(db) as store:
        runs = store.list_runs(limit=100)
        exports = [store.export_json(r.run_id) for r in runs]
    assert len(runs) >= 8
    reported = [info for info in runs if info.kind in ("diagnose", "load")]
    assert len(reported) == 2
    for info in reported:
        run("report", info.run_id, "--json")
        run("report", info.run_id, "--html", str(files / f"report-{info.run_id}.html"))
        run("export", info.run_id, "--format", "csv")
        run("export", info.run_id, "--format", "jsonl")
        table = tmp_path / f"requests-{info.run_id}.parquet"
        run("export", info.run_id, "--format", "parquet", "-o", str(table))
        exports.append(table.read_bytes().decode("latin-1"))
    run("report", "--watch", "canary")
    arms = [info.run_id for info in runs if info.meta.get("remedy") == "keepalive"]
    run("compare", *arms)

    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(conn.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables]
    assert {"runs", "samples"} <= set(tables)
    written = [p.read_text(encoding="utf-8") for p in files.iterdir()]
    assert len(written) == 4 + len(reported), "retry writes no page"
    assert len(scraped) == 2 and all(b"latdoc_requests" in text for text in scraped)
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("canary.db*"))
    everything = [*outputs, *rows, *exports, *written, *(t.decode() for t in scraped)]
    assert all(text for text in everything)
    for text in everything:
        assert CANARY not in text and CANARY[3:] not in text
    assert CANARY.encode() not in stored


def test_no_url_probes_the_built_in_endpoint(tmp_path: Path) -> None:
    # A home of its own: the store under it is this test's, whatever another run left.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "latdoc", "probe", "--json", "--max-tokens", "3"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == EXIT_OK, result.stderr
    row = json.loads(result.stdout)
    assert row["error"] is None
    assert row["tls_ms"] > 0
    assert row["output_tokens"] == 3
    assert "built-in simulated endpoint" in result.stderr
