"""``latdoc system``: the host read from a fake ``/proc/sys``, the checklist judged from
facts, its table at 80 and 120 columns and its JSON, and the items a diagnosis links."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from latdoc import (
    HostFacts,
    Kind,
    RunContext,
    Scenario,
    SystemItem,
    Verdict,
    checklist,
    diagnosis_to_dict,
    read_host,
    render_diagnosis,
    render_html,
    render_text,
)
from latdoc.advice.system import for_verdict, with_system
from latdoc.cli import main
from latdoc.pipeline import host_facts_from_meta, host_meta, run_context
from latdoc.report import SYSTEM_SCHEMA, render_system, system_to_dict
from report_samples import ENDPOINT, make_diagnosis

WIDTHS = [80, 120]
SYSTEM_ITEM_KEYS = {
    "key", "name", "current", "recommended", "ok", "why", "command", "allows", "kinds",
}  # fmt: skip

LINUX_DEFAULTS = {
    "net/ipv4/tcp_slow_start_after_idle": "1\n",
    "net/ipv4/tcp_congestion_control": "cubic\n",
    "net/ipv4/tcp_keepalive_time": "7200\n",
    "net/ipv4/tcp_keepalive_intvl": "75\n",
    "net/ipv4/tcp_keepalive_probes": "9\n",
    "net/ipv4/ip_local_port_range": "32768\t60999\n",
}
DEFAULTS = HostFacts(
    slow_start_after_idle=1,
    congestion_control="cubic",
    keepalive_time_s=7200,
    keepalive_intvl_s=75,
    keepalive_probes=9,
    port_range=(32768, 60999),
    open_files_soft=1024,
    open_files_hard=4096,
    cpu_count=4,
    h2_version=None,
    http2_available=False,
    python_version="3.10.12",
    openssl_version="OpenSSL 3.0.2",
    tls13=True,
)
TUNED = replace(
    DEFAULTS,
    slow_start_after_idle=0,
    keepalive_time_s=60,
    keepalive_intvl_s=10,
    keepalive_probes=6,
    open_files_soft=65536,
    open_files_hard=65536,
    h2_version="4.1.0",
    http2_available=True,
    python_version="3.12.3",
)


def proc_sys(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def by_key(items: tuple[SystemItem, ...]) -> dict[str, SystemItem]:
    return {i.key: i for i in items}


def assert_fits(text: str, width: int) -> None:
    for line in text.splitlines():
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"


def test_the_host_is_read_from_the_proc_sys_tree_it_is_given(tmp_path: Path) -> None:
    facts = read_host(proc_sys(tmp_path, LINUX_DEFAULTS))
    assert facts.slow_start_after_idle == 1
    assert facts.congestion_control == "cubic"
    assert (facts.keepalive_time_s, facts.keepalive_intvl_s, facts.keepalive_probes) == (
        7200,
        75,
        9,
    )
    assert facts.port_range == (32768, 60999)
    # the rest is this process's own: present, and plausible
    assert facts.cpu_count is not None and facts.cpu_count >= 1
    assert facts.open_files_soft is not None and facts.open_files_soft != 0
    assert facts.python_version is not None and facts.python_version.startswith("3.")
    assert facts.openssl_version is not None
    assert facts.http2_available is True  # h2 is one of latdoc's own dependencies


def test_what_cannot_be_read_is_none_not_a_guess(tmp_path: Path) -> None:
    files = {"net/ipv4/tcp_keepalive_time": "soon\n", "net/ipv4/ip_local_port_range": "9 x\n"}
    facts = read_host(proc_sys(tmp_path, files))
    assert facts.slow_start_after_idle is None
    assert facts.keepalive_time_s is None
    assert facts.port_range is None
    assert facts.congestion_control is None
    items = by_key(checklist(facts, 10))
    for key in ("slow_start_after_idle", "keepalive_time", "ephemeral_ports"):
        assert items[key].current is None
        assert items[key].ok is None
    text = render_text(render_system(tuple(items.values()), 10), 80)
    assert "not readable here" in text


def test_a_run_records_the_facts_and_reads_them_back(tmp_path: Path) -> None:
    root = proc_sys(tmp_path, LINUX_DEFAULTS)
    meta = json.loads(json.dumps(host_meta(root)))  # as the store keeps it
    assert host_facts_from_meta(meta) == read_host(root)
    context = run_context("r", ENDPOINT, "m", Scenario.CHAT, meta, [])
    assert context.host == read_host(root)
    assert context.tcp_settings["net.ipv4.tcp_keepalive_time"] == 7200


def test_a_run_stored_before_the_checklist_judges_only_what_it_recorded() -> None:
    old = {"cpu_count": 4, "tcp_settings": {"net.ipv4.tcp_slow_start_after_idle": 1}}
    facts = host_facts_from_meta(old)
    assert facts.slow_start_after_idle == 1
    assert facts.open_files_soft is None and facts.http2_available is None
    items = by_key(checklist(facts, 10))
    assert items["slow_start_after_idle"].ok is False
    assert items["open_files"].ok is None and items["http2"].ok is None


def test_linux_defaults_fail_the_tcp_items_with_the_commands_that_fix_them() -> None:
    items = by_key(checklist(DEFAULTS, 10))
    slow = items["slow_start_after_idle"]
    assert (slow.current, slow.recommended, slow.ok) == ("1", "0", False)
    assert slow.command == "sysctl -w net.ipv4.tcp_slow_start_after_idle=0"
    assert Kind.NETWORK_PATH in slow.kinds
    assert items["keepalive_time"].ok is False
    assert items["keepalive_time"].command == "sysctl -w net.ipv4.tcp_keepalive_time=60"
    assert items["keepalive_time"].allows is not None
    assert "7200 + 9 × 75 = 7875 s (2 h 11 min)" in items["keepalive_time"].allows
    assert items["keepalive_intvl"].command == "sysctl -w net.ipv4.tcp_keepalive_intvl=10"
    assert items["keepalive_probes"].command == "sysctl -w net.ipv4.tcp_keepalive_probes=6"
    assert items["http2"].ok is False
    assert items["http2"].command == "pip install 'httpx[http2]'"
    assert items["python"].ok is False
    assert items["openssl"].ok is True
    pool = items["pool_size"]
    assert (pool.current, pool.recommended, pool.ok) == ("4 cores", "pool of 18", None)
    assert "max_connections=18" in pool.command


def test_a_tuned_host_passes_every_check() -> None:
    items = checklist(TUNED, 10)
    assert [i.key for i in items if i.ok is False] == []


def test_bbr_does_not_restart_slow_start_so_the_setting_is_moot() -> None:
    item = by_key(checklist(replace(DEFAULTS, congestion_control="bbr"), 10))[
        "slow_start_after_idle"
    ]
    assert item.ok is True
    assert item.current == "1 (bbr: not applied)"


def test_under_bbr_diagnose_does_not_advise_the_slow_start_sysctl_either() -> None:
    from latdoc.advice.remedies import recommend

    d = replace(make_diagnosis(), verdict=Verdict(Kind.NETWORK_PATH, (), 0.8))
    d = replace(d, findings=(replace(d.findings[0], kind=Kind.NETWORK_PATH, evidence={}),))
    tcp = {"net.ipv4.tcp_slow_start_after_idle": 1}
    cubic = RunContext("r", ENDPOINT, "m", tcp_settings=tcp, host=DEFAULTS)
    bbr = replace(cubic, host=replace(DEFAULTS, congestion_control="bbr"))
    assert "tcp_settings" in {r.key for r in recommend(d, cubic)}
    assert "tcp_settings" not in {r.key for r in recommend(d, bbr)}


def test_open_files_say_how_many_streams_they_allow() -> None:
    # 2 × 4 cores + 1000 streams = 1008 sockets, + 256 for the rest of the process
    items = by_key(checklist(DEFAULTS, 1000))
    files = items["open_files"]
    assert files.recommended == "≥ 1264"
    assert files.ok is False
    assert files.allows == "~768 sockets at once, after 256 files for everything else"
    # the hard limit caps what `ulimit -n` can do without root
    assert files.command.startswith("ulimit -n 4096")
    assert by_key(checklist(DEFAULTS, 700))["open_files"].ok is True
    low_hard = replace(DEFAULTS, open_files_hard=1024)
    assert "hard limit 1024" in by_key(checklist(low_hard, 1000))["open_files"].command
    unlimited = replace(DEFAULTS, open_files_soft=-1, open_files_hard=-1)
    assert by_key(checklist(unlimited, 100_000))["open_files"].ok is True


def test_the_port_range_holds_the_pool_and_a_minute_of_time_wait() -> None:
    ports = by_key(checklist(DEFAULTS, 10))["ephemeral_ports"]
    assert ports.current == "32768–60999 (28232)"
    assert ports.ok is True
    assert ports.allows is not None and "~470 new connections a second" in ports.allows
    # 8 + 500 pool ports + 500 streams × 60 s of TIME_WAIT = 30508 > 28232
    crowded = by_key(checklist(DEFAULTS, 500))["ephemeral_ports"]
    assert crowded.recommended == "≥ 30508 ports"
    assert crowded.ok is False
    assert crowded.command == 'sysctl -w net.ipv4.ip_local_port_range="10240 65535"'


@pytest.mark.parametrize("width", WIDTHS)
def test_the_checklist_fits_the_width_and_shows_every_item(width: int) -> None:
    items = checklist(DEFAULTS, 10)
    text = render_text(render_system(items, 10), width)
    assert_fits(text, width)
    flat = " ".join(text.split())
    assert "6 of 10 settings to change for 10 concurrent streams" in flat
    for item in items:
        assert item.name.removeprefix("net.ipv4.") in text
        assert item.command in flat
        assert " ".join(item.why.split()) in flat
        if item.allows is not None:
            assert f"allows: {item.allows}" in flat
    assert re.search(r"change\s+tcp_slow_start_after_idle\s+1\s+0", text)
    assert re.search(r"info\s+cores → pool size\s+4 cores\s+pool of 18", text)
    assert not re.search(r"\S…", text), "a value was cut short"


def test_the_json_names_its_schema_and_keeps_nulls() -> None:
    facts = replace(DEFAULTS, slow_start_after_idle=None)
    doc = json.loads(json.dumps(system_to_dict(checklist(facts, 10), 10)))
    assert doc["schema"] == SYSTEM_SCHEMA == "latdoc.system/1"
    assert doc["concurrency"] == 10
    items = {i["key"]: i for i in doc["items"]}
    assert all(set(i) == SYSTEM_ITEM_KEYS for i in doc["items"])
    assert items["slow_start_after_idle"]["current"] is None
    assert items["slow_start_after_idle"]["ok"] is None
    assert items["keepalive_time"]["kinds"] == ["network_setup", "stalls"]
    assert "keepalive_time" in doc["failing"]
    assert "slow_start_after_idle" not in doc["failing"]


def test_the_command_exits_0_even_when_checks_fail(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("latdoc.features.system.run.read_host", lambda: DEFAULTS)
    assert main(["system", "--concurrency", "1000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["concurrency"] == 1000
    assert "open_files" in doc["failing"]
    assert main(["system"]) == 0
    assert "Client host checklist" in capsys.readouterr().out


def test_the_command_reads_this_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["system", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len([i for i in doc["items"] if i["key"] != "proxy"]) == 10
    assert [i for i in doc["items"] if i["key"] == "proxy"]  # and the URLs' proxy routes


def test_a_bad_concurrency_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["system", "--concurrency", "0"]) == 2
    assert capsys.readouterr().err.startswith("Error: ")


def test_only_failing_items_of_the_verdicts_kinds_are_linked() -> None:
    items = checklist(DEFAULTS, 10)
    network_path = for_verdict(items, [Kind.NETWORK_PATH])
    assert [i.key for i in network_path] == ["slow_start_after_idle"]
    decode = for_verdict(items, [Kind.DECODE])
    assert decode == ()
    client = {i.key for i in for_verdict(items, [Kind.CLIENT])}
    assert client == {"http2", "python"}  # the pool is advice, not a failing check


def test_a_diagnosis_lists_the_host_items_for_its_verdict() -> None:
    # input length, with queueing and network setup contributing
    d = make_diagnosis()
    context = RunContext("r", ENDPOINT, "m", concurrency=10, host=DEFAULTS)
    linked = with_system(d, context)
    keys = [i.key for i in linked.system]
    assert keys == ["keepalive_time", "keepalive_intvl", "keepalive_probes", "http2"]
    text = render_text(render_diagnosis(linked), 80)
    assert_fits(text, 80)
    flat = " ".join(text.split())
    assert "On this client host" in flat
    assert "sysctl -w net.ipv4.tcp_keepalive_time=60" in flat
    assert "pip install 'httpx[http2]'" in flat
    assert text.index("Remedies, ranked") < text.index("On this client host")
    doc = diagnosis_to_dict(linked)
    assert [i["key"] for i in doc["system"]] == keys
    for item in doc["system"]:
        assert set(item) == SYSTEM_ITEM_KEYS
    assert doc["system"][0]["command"] == "sysctl -w net.ipv4.tcp_keepalive_time=60"
    assert set(diagnosis_to_dict(d)) == set(doc)  # a key added, none renamed
    page = render_html(linked, [])
    assert "On this client host" in page and "net.ipv4.tcp_keepalive_probes" in page
    network_path = replace(d, verdict=Verdict(Kind.NETWORK_PATH, (), 0.8))
    slow = with_system(network_path, context).system
    assert [i.key for i in slow] == ["slow_start_after_idle"]


def test_without_host_facts_a_diagnosis_lists_nothing() -> None:
    d = make_diagnosis()
    assert with_system(d, RunContext("r", ENDPOINT, "m")).system == ()
    assert diagnosis_to_dict(d)["system"] == []
    assert "On this client host" not in render_text(render_diagnosis(d), 120)
    assert "On this client host" not in render_html(d, [])


def test_a_stored_run_diagnosed_again_keeps_its_host_items(tmp_path: Path) -> None:
    from latdoc import rediagnose
    from latdoc.store import Store

    meta = {**host_meta(proc_sys(tmp_path / "proc", LINUX_DEFAULTS)), "concurrency": 10}
    with Store(str(tmp_path / "runs.db")) as store:
        run_id = store.new_run(endpoint=ENDPOINT, model="m", scenario=Scenario.CHAT, meta=meta)
        store.finish_run(run_id, status="done", notes=[], diagnosis={})
        run = rediagnose(store, run_id)
    assert (
        run.diagnosis.system
        == with_system(
            run.diagnosis, run_context(run_id, ENDPOINT, "m", Scenario.CHAT, meta, [])
        ).system
    )
