"""The diagnosis in Chinese: for every kind of slow the truth bank makes, the terminal
report says it in Chinese, and so does the page, with no English sentence left but
names, units, commands and code; the report fits the terminal in cells, as a Chinese
character takes two; and the library speaks English unless asked."""

from __future__ import annotations

import dataclasses
import functools

import pytest
from rich.cells import cell_len

from bank import CAUSES, context, draw, generate
from english import english_runs, visible_text
from latdoc import Diagnosis, build_diagnosis, render_diagnosis, render_html, render_text
from latdoc.advice.system import ProxyRouteFact, checklist, proxy_items
from latdoc.i18n import language, speaking
from latdoc.model import HostFacts
from latdoc.records import Sample

MIXES = (*((cause,) for cause in CAUSES), ("far", "slow_upload"), ("burst_queue", "server_timing"))
"""Each cause the bank models alone (a server that tells its timing is healthy, shown phase
by phase), and two that bring more findings and remedies."""


@functools.cache
def recorded(causes: tuple[str, ...]) -> tuple[list[Sample], Diagnosis]:
    """The bank's clear, low-noise run of ``causes`` and its diagnosis, made once for every
    test that reads them (neither is changed)."""
    s = draw(1000, causes=causes, intensity="clear", noise="low")
    samples = generate(s)
    return samples, build_diagnosis(samples, context(s))


def diagnosed(causes: tuple[str, ...]) -> Diagnosis:
    return recorded(causes)[1]


def chinese(d: Diagnosis, width: int = 100) -> str:
    with speaking("zh"):
        return render_text(render_diagnosis(d), width)


@pytest.mark.parametrize("causes", MIXES, ids="+".join)
def test_every_kind_of_slow_is_reported_in_chinese(causes: tuple[str, ...]) -> None:
    d = diagnosed(causes)
    text = chinese(d)
    assert english_runs(text) == [], text
    assert "诊断结论：" in text and "第一步 — 网络" in text


def test_each_kind_is_named_in_chinese_with_its_verdict() -> None:
    names = {
        "long_input": "输入长度（预填充随提示变长而增长）",
        "burst_queue": "服务端排队",
        "slow_decode": "解码（生成慢或输出长）",
        "slow_dns": "建立连接",
        "far": "网络路径",
    }
    for cause, name in names.items():
        assert f"诊断结论：{name}" in chinese(diagnosed((cause,))), cause


def test_the_chinese_report_fits_the_terminal_in_cells() -> None:
    text = chinese(diagnosed(("long_input",)), 80)
    assert max(cell_len(line) for line in text.splitlines()) <= 80


def test_the_numbers_and_commands_are_the_same_in_both_languages() -> None:
    d = diagnosed(("long_input",))
    english, zh = render_text(render_diagnosis(d), 400), chinese(d, 400)
    for remedy in d.remedies:
        if remedy.verify_command is not None:
            assert remedy.verify_command in english and remedy.verify_command in zh
    assert d.workload is not None
    total = f"{d.workload.total_ms / 1000:.2f} s"  # the typical request, end to end
    for number in ("2,048", total, "128 → "):
        assert number in english and number in zh


def test_the_library_speaks_english_unless_asked() -> None:
    d = diagnosed(("slow_decode",))
    before = render_text(render_diagnosis(d), 100)
    chinese(d)
    assert language() == "en"
    assert render_text(render_diagnosis(d), 100) == before
    assert english_runs(before)


def test_the_scanner_finds_a_sentence_left_in_english_and_passes_names() -> None:
    assert english_runs("规则：the fitted time grows with the prompt") == [
        "fitted time grows with the prompt"
    ]
    assert english_runs("确认：latdoc verify https://x.test/v1 --model m --remedy trim") == []
    assert english_runs("  from latdoc.client import RetryPolicy, make_async_client") == []
    assert english_runs("DNS 12.0 ms   TCP 24.0 ms   TLS 41.0 ms   发送 2.5 ms") == []


@pytest.mark.parametrize("causes", [("long_input",), ("burst_queue", "server_timing"), ("errors",)])
def test_the_page_is_chinese(causes: tuple[str, ...]) -> None:
    samples, d = recorded(causes)
    with speaking("zh"):
        page = render_html(d, samples)
    text = visible_text(page)
    assert english_runs(text) == [], text
    assert '<html lang="zh">' in page
    assert "诊断结论" in text and "优化建议" in text


def test_the_page_in_english_is_the_page_it_was() -> None:
    samples, d = recorded(("long_input",))
    page = render_html(d, samples)
    assert '<html lang="en">' in page
    text = visible_text(page)
    assert "Verdict" in text and "Remedies, best first" in text
    assert "Shares are of a typical request of 2,048 prompt tokens" in text


# A host that fails every check a diagnosis may show.
FAILING_HOST = HostFacts(
    slow_start_after_idle=1, congestion_control="cubic", keepalive_time_s=7200,
    keepalive_intvl_s=75, keepalive_probes=9, port_range=(60000, 60100), open_files_soft=64,
    open_files_hard=64, cpu_count=4, http2_available=False, python_version="3.10.2",
    openssl_version="OpenSSL 1.0.2", tls13=False,
)  # fmt: skip
PROXIES = (
    ProxyRouteFact(("api.example.com", "a.test"), "http://proxy:3128 (HTTPS_PROXY)", True),
    ProxyRouteFact(("api.example.com",), "direct", False),
)


def test_the_host_checks_a_diagnosis_shows_are_chinese() -> None:
    samples, diagnosis = recorded(("slow_dns",))
    items = (*checklist(FAILING_HOST, 10), *proxy_items(PROXIES))
    d = dataclasses.replace(diagnosis, system=items)
    text = chinese(d)
    host = text[text.index("本客户端主机上") :]
    assert english_runs(host) == [], host
    assert "个端口" in host and "的代理" in host
    with speaking("zh"):
        page = visible_text(render_html(d, samples))
    assert english_runs(page) == []
