"""What `latdoc diagnose --from-otlp` reads from the spans each instrumentation writes.

An ``openai`` SDK application (tests/otlp_app.py), traced in turn by OpenLLMetry, the
contrib openai-v2 instrumentation, OpenInference and Langfuse (the released packages),
streams prompts of 120 to 2,100 words from the lab, whose prefill takes 1 ms a prompt
token, without asking for usage and then asking for it. The lab sends its role-only
chunk either after the prefill (as OpenAI and vLLM do) or with the headers, before it.
For each it prints the spans read, where the first token was read from, the time to
first token read less the lab's planned prefill (median and largest: the network, the
SDK and the application's own delays), the prefill per 1K prompt tokens the length
curve fits (the lab's is 1,000 ms per 1K of its tokens; a prompt of ``word`` repeated
holds 1.25 estimated tokens a lab token) and the verdict.

Run: ``.venv/bin/python bench/otlp_instrumentations.py [--repeats 2]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from latdoc.analysis.attribution import diagnose
from latdoc.analysis.traffic import traffic_views
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel, chat_prompt_tokens
from latdoc.model import RunContext
from latdoc.probe import dialects
from latdoc.records import Sample, Step
from latdoc.workload.otlp import read_otlp

APP = Path(__file__).resolve().parent.parent / "tests" / "otlp_app.py"
LATENCY = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=1.0, decode_ms_per_token=2.0)
WORDS = (120, 600, 1200, 2100)
INSTRUMENTATIONS = ("openllmetry", "openai-v2", "openinference", "langfuse")


def _run(name: str, late: bool, usage: bool, words: list[int], out: Path) -> None:
    config = LabConfig(latency=LATENCY, headers_after_prefill=late, seed=1)
    with LabServer(config) as server:
        command = [sys.executable, str(APP), name, server.base_url, str(out)]
        command += [str(w) for w in words] + ["--max-tokens", "16"]
        if usage:
            command.append("--usage")
        subprocess.run(command, check=True, capture_output=True, timeout=600)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    words = [w for _ in range(args.repeats) for w in WORDS]
    print(
        f"{'instrumentation':<15} {'role chunk':<14} {'usage':<5} {'spans':>5} "
        f"{'ttft from':<10} {'ttft-prefill med/max ms':>24} {'prefill/1K':>10}  verdict"
    )
    for name in INSTRUMENTATIONS:
        for late in (True, False):
            for usage in (False, True):
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp) / "spans.json"
                    _run(name, late, usage, words, out)
                    traffic = read_otlp(out.read_text(), str(out))
                over = []
                for trace, w in zip(traffic.traces, words, strict=True):
                    planned = LATENCY.prefill_ms(
                        chat_prompt_tokens([{"role": "user", "content": "word " * w}])
                    )
                    if trace.ttft_ms is not None:
                        over.append(trace.ttft_ms - planned)
                samples = [Sample(Step.TRAFFIC, t, index=i) for i, t in enumerate(traffic.traces)]
                views = traffic_views(samples, dialects.names())
                context = RunContext(run_id="bench", endpoint="otlp", model="lab-sim")
                diagnosis = diagnose(samples, context, views)
                curve = diagnosis.length
                rate = f"{curve.prefill_ms_per_1k:.0f}" if curve is not None else "-"
                spread = f"{statistics.median(over):.1f} / {max(over):.1f}" if over else "not read"
                source = (
                    "chunks"
                    if any(t.chunks for t in traffic.traces)
                    else ("attr/event" if over else "-")
                )
                print(
                    f"{name:<15} {'after prefill' if late else 'with headers':<14} "
                    f"{'yes' if usage else 'no':<5} {len(traffic.traces):>5} {source:<10} "
                    f"{spread:>24} {rate:>10}  {diagnosis.verdict.primary}"
                )


if __name__ == "__main__":
    main()
