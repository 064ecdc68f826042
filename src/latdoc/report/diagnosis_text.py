"""A diagnosis for the terminal and as JSON: the verdict, the evidence per step, the remedies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from latdoc.analysis.diagnosis import Diagnosis, Finding, Kind, Remedy
from latdoc.report.names import format_value, kind_name
from latdoc.report.probe_text import format_ms

BAR_WIDTH = 32


def _bar(value: float, largest: float) -> str:
    if largest <= 0:
        return ""
    cells = max(1, round(BAR_WIDTH * value / largest)) if value > 0 else 0
    return "█" * cells


def _network_lines(n: Mapping[str, float | None]) -> list[str]:
    if n.get("setup_ms") is None and n.get("ttft_ms") is None:
        return ["    not measured"]
    parts = []
    for key, label in (
        ("dns_ms", "DNS"),
        ("connect_ms", "TCP"),
        ("tls_ms", "TLS"),
        ("send_ms", "send"),
        ("wait_ms", "server wait"),
        ("ttfb_ms", "first byte"),
        ("ttft_ms", "first token"),
    ):
        value = n.get(key)
        if value is not None:
            parts.append(f"{label} {format_ms(value)}")
    lines = ["    " + " · ".join(parts)]
    saving = n.get("keepalive_saving_ms")
    if saving is not None and saving > 0:
        lines.append(f"    keep-alive saves {format_ms(saving)} of first-byte time per request")
    setup, ttfb = n.get("setup_ms"), n.get("cold_ttfb_ms")
    if setup is not None and ttfb is not None:
        if ttfb > 3 * setup:
            lines.append(
                f"    first byte on a new connection {format_ms(ttfb)} ≫ its network setup "
                f"{format_ms(setup)}: the time is in the model service, not the network"
            )
        elif setup > 200:
            lines.append(
                f"    network setup {format_ms(setup)} > 200 ms and first byte ≈ setup: "
                "the network is the bottleneck"
            )
    return lines


def _length_lines(d: Diagnosis) -> list[str]:
    curve = d.length
    if curve is None:
        return ["    not measured"]
    pts = " · ".join(f"{p.prompt_tokens} → {format_ms(p.ttft_ms)}" for p in curve.points)
    return [
        f"    TTFT by prompt tokens: {pts}",
        f"    prefill {format_ms(curve.prefill_ms_per_1k)} per 1K tokens at the longest; "
        f"curve {curve.shape}; longest/shortest {curve.ratio_long_short:.1f}×",
    ]


def _load_lines(ld: Mapping[str, float | None]) -> list[str]:
    p50 = ld.get("ttft_p50_ms")
    if p50 is None:
        return ["    not measured"]
    line = f"    same-length TTFT p50 {format_ms(p50)}"
    cv, spread = ld.get("ttft_cv"), ld.get("ttft_p95_over_p50")
    if cv is not None and spread is not None:
        line += f", CV {cv:.2f}, p95/p50 {spread:.2f}"
    lines = [line]
    conc, ratio = ld.get("concurrent_ttft_p50_ms"), ld.get("concurrent_over_sequential")
    if conc is not None and ratio is not None:
        lines.append(
            f"    {ld.get('concurrency') or 0:.0f} at once: TTFT p50 {format_ms(conc)} "
            f"({ratio:.2f}× sequential)"
        )
    return lines


def _finding_lines(f: Finding) -> list[str]:
    evidence = ", ".join(f"{k} {format_value(k, v)}" for k, v in f.evidence.items())
    return [
        f"  ● {f.title}  [{f.kind}]  adds ~{format_ms(f.share_ms)}, confidence {f.confidence:.2f}",
        f"      rule: {f.rule}",
        f"      evidence: {evidence}",
    ]


def _remedy_lines(i: int, r: Remedy) -> list[str]:
    gain = f"  (saves ~{format_ms(r.predicted_gain_ms)})" if r.predicted_gain_ms else ""
    lines = [f"  {i}. {r.title}{gain}"]
    lines += [f"       {line}" for line in r.change.splitlines()]
    if r.tradeoff:
        lines.append(f"       trade-off: {r.tradeoff}")
    return lines


def render_diagnosis(d: Diagnosis) -> str:
    v = d.verdict
    lines = [
        f"  {d.requests} requests to {d.endpoint} (model {d.model}), {d.failed} failed",
        "",
        f"  Verdict: {kind_name(v.primary)}   confidence {v.confidence:.2f}",
    ]
    if v.contributing:
        lines.append("  Contributing: " + ", ".join(str(k) for k in v.contributing))
    largest = max(d.shares_ms.values(), default=0.0)
    lines += ["", "  What each kind adds to a typical request:"]
    for kind, ms in sorted(d.shares_ms.items(), key=lambda kv: -kv[1]):
        lines.append(f"    {kind:<14} {format_ms(ms):>10}  {_bar(ms, largest)}")
    lines += ["", "  Step 1 — network", *_network_lines(d.network)]
    lines += ["", "  Step 2 — input length", *_length_lines(d)]
    lines += ["", "  Step 3 — fluctuation and load", *_load_lines(d.load)]
    if d.findings:
        lines += ["", "  Findings:"]
        for f in d.findings:
            lines += _finding_lines(f)
    if d.remedies:
        lines += ["", f"  Remedies, ranked for {d.scenario}:"]
        for i, r in enumerate(d.remedies, 1):
            lines += _remedy_lines(i, r)
    if d.notes:
        lines += ["", "  Left out:"]
        lines += [f"    {n.step}: {n.text}" for n in d.notes]
    return "\n".join(lines)


def diagnosis_to_dict(d: Diagnosis) -> dict[str, Any]:
    """The JSON form: verdict, shares in seconds, findings with their top remedy, steps."""
    top: dict[Kind, Remedy] = {}
    for r in d.remedies:
        top.setdefault(r.addresses, r)
    findings = []
    for f in d.findings:
        remedy = top.get(f.kind)
        findings.append(
            {
                "kind": str(f.kind),
                "title": f.title,
                "rule": f.rule,
                "evidence": dict(f.evidence),
                "share_s": round(f.share_ms / 1000, 6),
                "confidence": f.confidence,
                "remedy": remedy.title if remedy else None,
                "predicted_gain_ms": remedy.predicted_gain_ms if remedy else None,
            }
        )
    curve = d.length
    return {
        "run_id": d.run_id,
        "endpoint": d.endpoint,
        "model": d.model,
        "scenario": str(d.scenario),
        "requests": d.requests,
        "failed": d.failed,
        "verdict": {
            "primary": str(d.verdict.primary),
            "contributing": [str(k) for k in d.verdict.contributing],
            "confidence": d.verdict.confidence,
        },
        "shares": {str(k): round(v / 1000, 6) for k, v in d.shares_ms.items()},
        "findings": findings,
        "remedies": [
            {
                "key": r.key,
                "title": r.title,
                "addresses": str(r.addresses),
                "change": r.change,
                "predicted_gain_ms": r.predicted_gain_ms,
                "tradeoff": r.tradeoff,
            }
            for r in d.remedies
        ],
        "steps": {
            "network": dict(d.network),
            "length": None
            if curve is None
            else {
                "points": [
                    {"prompt_tokens": p.prompt_tokens, "ttft_ms": p.ttft_ms, "n": p.n}
                    for p in curve.points
                ],
                "a_ms": curve.a_ms,
                "b_ms_per_1k": curve.b_ms_per_1k,
                "c_ms_per_1k2": curve.c_ms_per_1k2,
                "prefill_ms_per_1k": curve.prefill_ms_per_1k,
                "shape": curve.shape,
                "ratio_long_short": curve.ratio_long_short,
            },
            "load": dict(d.load),
        },
        "notes": [{"step": n.step, "text": n.text} for n in d.notes],
    }
