"""The report's colours and layout: one inline stylesheet for the page and its SVG plots.

Plots carry classes only (``ph-dns``, ``k-input_length``, ``st-0`` ...); the
colours live here, once, as CSS custom properties with a dark variant chosen by
``prefers-color-scheme``. Mid-tone hues read on both white and near-black.
"""

from __future__ import annotations

PHASE_COLOURS = {
    "queue": "#9aa1aa",
    "dns": "#8b6ee0",
    "connect": "#e6843f",
    "tls": "#d9a521",
    "send": "#33a9bb",
    "wait": "#4a80e0",
    "first_token": "#d95892",
    "stream": "#46a85c",
}

KIND_COLOURS = {
    "network_setup": "#8b6ee0",
    "network_path": "#e6843f",
    "input_length": "#4a80e0",
    "queueing": "#d9a521",
    "decode": "#46a85c",
    "stalls": "#d95892",
    "client": "#33a9bb",
    "errors": "#d64545",
    "healthy": "#9aa1aa",
}

STEP_COLOURS = ("#4a80e0", "#e6843f", "#46a85c", "#8b6ee0", "#d95892", "#33a9bb")

_BASE = """
:root{--bg:#f7f8fa;--card:#fff;--fg:#1d2229;--muted:#5f6b78;--line:#dde1e6;--grid:#eceef1;
--bad:#c93434;--bad-bg:rgba(214,69,69,.10);--accent:#1d2229;--code:#f0f2f5}
@media (prefers-color-scheme:dark){:root{--bg:#14171c;--card:#1c2128;--fg:#e5e8ec;
--muted:#9aa4b0;--line:#2e353e;--grid:#262c34;--bad:#f07070;--bad-bg:rgba(240,112,112,.13);
--accent:#f2f4f7;--code:#232932}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:1120px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:1.9rem;margin:.1em 0 .4em}
h2{font-size:1.35rem;margin:1.8em 0 .6em}
h3{font-size:1.05rem;margin:0 0 .4em}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em}
code{background:var(--code);padding:.08em .35em;border-radius:4px;overflow-wrap:anywhere}
pre{background:var(--code);padding:12px 14px;border-radius:8px;overflow-x:auto;margin:.6em 0}
pre code{background:none;padding:0}
.kicker{text-transform:uppercase;letter-spacing:.08em;font-size:.75rem;color:var(--muted);margin:0}
.muted{color:var(--muted)}
.empty{color:var(--muted);font-style:italic;padding:1em;border:1px dashed var(--line);
border-radius:8px}
.meta{display:flex;flex-wrap:wrap;gap:10px 28px;margin:0}
.meta div{min-width:0}
.meta dt{font-size:.75rem;color:var(--muted);text-transform:uppercase;letter-spacing:.06em}
.meta dd{margin:0;overflow-wrap:anywhere}
.card,.verdict{background:var(--card);border:1px solid var(--line);border-radius:12px;
padding:16px 18px;margin:12px 0}
.verdict{border-left-width:8px;padding:20px 24px;margin-top:24px}
.verdict .primary{font-size:2.1rem;line-height:1.2;margin:.15em 0 .2em}
.verdict .meaning{font-weight:400;color:var(--muted);font-size:1.3rem}
.confidence{font-size:1.1rem;margin:.2em 0}
.also{margin:.2em 0 1em}
.bar-title{font-weight:600;margin-top:1em}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:3px;margin-right:.4em;
vertical-align:baseline}
.verdict .primary .swatch{width:.6em;height:.6em}
.sharebar{display:flex;height:34px;border-radius:8px;overflow:hidden;border:1px solid var(--line)}
.share{display:flex;align-items:center;justify-content:center;color:#fff;font-size:.85rem;
font-weight:600;white-space:nowrap;overflow:hidden;min-width:2px}
.share span{padding:0 6px;overflow:hidden;text-overflow:ellipsis;text-shadow:0 1px 1px #0005}
.legend{list-style:none;padding:0;margin:.6em 0 0;display:flex;flex-wrap:wrap;gap:4px 20px}
.badges{margin:.1em 0 .5em;color:var(--muted)}
.badges strong{color:var(--fg)}
.badge{display:inline-block;color:#fff;border-radius:999px;padding:0 .6em;font-size:.8rem;
font-weight:600;margin-right:.3em}
.badge.step{background:var(--muted)}
.finding{border-left-width:5px}
.rule{margin:.3em 0 .6em}
table.evidence{border-collapse:collapse;font-size:.92rem;min-width:40%}
.evidence th,.evidence td{text-align:left;padding:3px 14px 3px 0;
border-bottom:1px solid var(--line)}
.evidence th{font-weight:400}
.evidence td{font-variant-numeric:tabular-nums;font-weight:600}
.remedies{list-style:none;padding:0;margin:0}
.rank{display:inline-flex;align-items:center;justify-content:center;width:1.6em;height:1.6em;
border-radius:50%;background:var(--fg);color:var(--bg);font-size:.85rem;margin-right:.5em}
.tradeoff{margin:.4em 0 0;padding:.4em .8em;border-left:3px solid var(--bad);
background:var(--bad-bg);
border-radius:0 6px 6px 0}
figure{margin:0 0 28px;background:var(--card);border:1px solid var(--line);border-radius:12px;
padding:16px 18px}
figcaption{color:var(--muted);font-size:.9rem;margin-top:.4em}
.plot-wrap{overflow-x:auto}
svg.plot{display:block;width:100%;height:auto;min-width:600px}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:0 16px}
.notes{padding-left:1.2em}
.notes li{margin:.3em 0}
@media (max-width:600px){main{padding:16px 12px 32px}.verdict{padding:16px}
.verdict .primary{font-size:1.6rem}.verdict .meaning{font-size:1.05rem}
.card,figure{padding:12px}}
footer{margin-top:3em;color:var(--muted);font-size:.85rem}
svg text{fill:var(--fg);font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
font-size:12px}
svg .tick,svg .axis-title,svg .note{fill:var(--muted)}
svg .tick{font-size:11px}
svg .axis{stroke:var(--muted);stroke-width:1}
svg .grid{stroke:var(--grid);stroke-width:1}
svg .row-label{font-size:11px;font-variant-numeric:tabular-nums}
svg .fail{fill:var(--bad);font-weight:600}
svg .fail-band{fill:var(--bad-bg)}
svg .fail-mark{stroke:var(--bad);stroke-width:2}
svg .row:hover .seg{opacity:.75}
svg .fit{fill:none;stroke:var(--accent);stroke-width:2}
svg .fit-swatch{fill:var(--accent)}
svg .pt-request{fill:#4a80e0;fill-opacity:.55;stroke:#4a80e0}
svg .pt-median{fill:none;stroke:var(--accent);stroke-width:2}
svg .marker{stroke:var(--accent);stroke-width:1.5;stroke-dasharray:5 3}
svg .marker.p95{stroke:var(--bad)}
svg .marker-label{font-size:11px;font-weight:600}
svg .marker-label.p95{fill:var(--bad)}
"""


def _colour_rules() -> str:
    rules = [f"svg .ph-{key}{{fill:{colour}}}" for key, colour in PHASE_COLOURS.items()]
    rules += [
        f".k-{key}{{background:{colour};fill:{colour}}}" for key, colour in KIND_COLOURS.items()
    ]
    rules += [f".k-border-{key}{{border-left-color:{c}}}" for key, c in KIND_COLOURS.items()]
    rules += [f"svg .st-{i}{{fill:{colour}}}" for i, colour in enumerate(STEP_COLOURS)]
    return "\n".join(rules)


STYLESHEET = _BASE + _colour_rules() + "\n"
"""The whole stylesheet, inlined into each page."""
