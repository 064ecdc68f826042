"""``latdoc diagnose``, ``latdoc runs`` and ``latdoc report``: parse, run, store, render."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from latdoc.analysis.attribution import RunContext
from latdoc.analysis.model import Diagnosis, Scenario, StepNote
from latdoc.cli_common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    endpoint_and_connection,
)
from latdoc.errors import UsageError
from latdoc.report.progress import ProgressBars
from latdoc.workload.sample import Sample

DEFAULT_MAX_REQUESTS = 40
DEFAULT_MAX_SECONDS = 120.0


def add_diagnose_parsers(
    sub: argparse._SubParsersAction[Any],
    add_connection_options: Any,
    positive_int: Any,
    positive_float: Any,
) -> None:
    d = sub.add_parser(
        "diagnose",
        help="which kind of slow is it: network, model service or input length",
        description="Measure the network, input-length and load steps within a budget, "
        "attribute the latency, and rank remedies for your scenario. With no URL (and no "
        "OPENAI_BASE_URL) the built-in local endpoint is diagnosed.",
    )
    d.add_argument("url", nargs="?", help="base URL, e.g. https://api.openai.com/v1")
    d.add_argument("--model", "-m", help="model name (required for a real endpoint)")
    d.add_argument(
        "--scenario",
        choices=[s.value for s in Scenario],
        default=Scenario.CHAT.value,
        help="chat: latency first; batch: cost first; longdoc: quality with long input",
    )
    d.add_argument(
        "--max-requests", type=positive_int, default=DEFAULT_MAX_REQUESTS, metavar="N",
        help=f"hard cap on requests (default {DEFAULT_MAX_REQUESTS})",
    )  # fmt: skip
    d.add_argument(
        "--max-tokens", type=positive_int, metavar="N",
        help="hard cap on prompt + output tokens over the whole run",
    )  # fmt: skip
    d.add_argument(
        "--max-seconds", type=positive_float, default=DEFAULT_MAX_SECONDS, metavar="S",
        help=f"wall-time budget; the plan adapts to it (default {DEFAULT_MAX_SECONDS:g})",
    )  # fmt: skip
    d.add_argument(
        "--output-tokens", type=positive_int, default=32, metavar="N",
        help="max_tokens of each request (default 32)",
    )  # fmt: skip
    d.add_argument(
        "--context-window", type=positive_int, metavar="N",
        help="the model's context window, to clip the long prompts",
    )  # fmt: skip
    d.add_argument(
        "--concurrency", type=positive_int, default=10, metavar="N",
        help="concurrent requests you expect in production, for pool sizing (default 10)",
    )  # fmt: skip
    d.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    d.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    d.add_argument("--db", metavar="FILE", help="the SQLite store (default: user data dir)")
    d.add_argument("--seed", type=int, help="seed for generated prompts")
    add_connection_options(d)

    runs = sub.add_parser("runs", help="list stored diagnosis runs")
    runs.add_argument("--db", metavar="FILE")
    runs.add_argument("--limit", type=positive_int, default=50)

    report = sub.add_parser("report", help="re-render a stored run without sending anything")
    report.add_argument("run_id", help="a run id (or a unique prefix) from `latdoc runs`")
    out = report.add_mutually_exclusive_group()
    out.add_argument("--html", metavar="FILE")
    out.add_argument("--json", action="store_true")
    report.add_argument("--db", metavar="FILE")


def _context_meta(args: argparse.Namespace) -> dict[str, Any]:
    from latdoc import __version__
    from latdoc.hostinfo import cpu_count, tcp_settings

    return {
        "latdoc": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": platform.node(),
        "cpu_count": cpu_count(),
        "tcp_settings": tcp_settings(),
        "concurrency": args.concurrency,
        "options": {
            "max_requests": args.max_requests,
            "max_tokens": args.max_tokens,
            "max_seconds": args.max_seconds,
            "output_tokens": args.output_tokens,
            "context_window": args.context_window,
            "http2": args.http2,
        },
    }


def context_from(
    run_id: str,
    endpoint: str,
    model: str,
    scenario: str,
    meta: Mapping[str, Any],
    notes: Sequence[StepNote],
) -> RunContext:
    return RunContext(
        run_id=run_id,
        endpoint=endpoint,
        model=model,
        scenario=Scenario(scenario),
        concurrency=int(meta.get("concurrency", 1)),
        cpu_count=int(meta.get("cpu_count", 1)),
        tcp_settings={str(k): int(v) for k, v in dict(meta.get("tcp_settings", {})).items()},
        notes=tuple(notes),
    )


def plan_line(args: argparse.Namespace) -> str:
    from latdoc.steps import LENGTHS, planned_requests, planned_tokens

    worst = planned_tokens(args.output_tokens, args.context_window)
    tokens = min(worst, args.max_tokens) if args.max_tokens else worst
    requests = min(planned_requests(), args.max_requests)
    return (
        f"Plan: at most {requests} requests, {tokens:,} prompt + output tokens and "
        f"{args.max_seconds:g} s — calibration, network (cold and warm), input length "
        f"({', '.join(str(n) for n in LENGTHS)} tokens, as the time allows), load "
        "(sequential, then 4 at once)."
    )


@contextlib.contextmanager
def builtin_target(http2: bool, err: TextIO) -> Iterator[tuple[str, str, str | None]]:
    """The built-in local endpoint: the real engine where installed, else the simulated one."""
    try:
        from latdoc.lab.engine import EngineServer, engine_available
    except ImportError:
        reason: str | None = "the engine module is missing"
    else:
        reason = engine_available()
    if reason is None:
        print("Starting the built-in llama.cpp engine (SmolLM2-135M) …", file=err)
        with EngineServer() as engine:
            yield engine.base_url, engine.model, None
        return
    from latdoc.lab.demo import DEMO_CONFIG
    from latdoc.lab.process import LabProcess

    print(f"Using the built-in simulated endpoint ({reason}).", file=err)
    with LabProcess(DEMO_CONFIG, tls=True, http2=http2) as lab:
        yield lab.base_url, DEMO_CONFIG.model, lab.ca_file


def cmd_diagnose(args: argparse.Namespace, api_key: str | None, target: Any) -> int:
    from latdoc.diagnose import build_diagnosis, run_diagnosis
    from latdoc.report import diagnosis_to_dict
    from latdoc.steps import DiagnosisPlan
    from latdoc.store import Store
    from latdoc.workload.budget import Budget

    budget = Budget(args.max_requests, args.max_tokens, args.max_seconds)
    err, out = sys.stderr, sys.stdout
    with target as (url, model, cacert):
        endpoint, connection = endpoint_and_connection(args, url, model, cacert, api_key)
        plan = DiagnosisPlan(
            endpoint=endpoint,
            connection=connection,
            output_tokens=args.output_tokens,
            max_requests=args.max_requests,
            max_tokens=args.max_tokens,
            max_seconds=args.max_seconds,
            context_window=args.context_window,
            seed=args.seed,
        )
        meta = _context_meta(args)
        print(plan_line(args), file=err)
        samples: list[Sample] = []
        secrets = [api_key] if api_key else []
        with Store(args.db, secrets=secrets) as store:
            run_id = store.new_run(endpoint=url, model=model, scenario=args.scenario, meta=meta)

            def keep(sample: Sample) -> None:
                samples.append(sample)
                store.add_sample(run_id, sample)

            progress = ProgressBars(err)
            status, notes = "done", []
            try:
                result = asyncio.run(
                    run_diagnosis(plan, budget=budget, on_sample=keep, on_progress=progress)
                )
                notes = result.notes
            except KeyboardInterrupt:
                status = "interrupted"
                notes = [StepNote("run", "interrupted by the user; diagnosed what was measured")]
            finally:
                progress.close()
            context = context_from(run_id, url, model, args.scenario, meta, notes)
            diagnosis = build_diagnosis(samples, context)
            store.finish_run(run_id, status=status, diagnosis=diagnosis_to_dict(diagnosis))
            db_path = store.path
    _emit(diagnosis, samples, args, out)
    print(
        f"Run {run_id}: {len(samples)} traces kept in {db_path}; "
        f"`latdoc report {run_id} --html FILE` renders it again.",
        file=err,
    )
    if status == "interrupted":
        return EXIT_INTERRUPTED
    measured = [s for s in samples if s.step != "calibration"]
    failed_all = measured and all(not s.trace.ok for s in measured)
    return EXIT_REQUEST_FAILED if failed_all else EXIT_OK


def _emit(
    diagnosis: Diagnosis, samples: Sequence[Sample], args: argparse.Namespace, out: TextIO
) -> None:
    from latdoc.report import diagnosis_to_dict, make_console, render_diagnosis, render_html

    if args.html:
        path = Path(args.html)
        try:
            path.write_text(render_html(diagnosis, samples), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        print(f"HTML report written to {path}", file=sys.stderr)
    if args.json:
        out.write(json.dumps(diagnosis_to_dict(diagnosis), indent=2) + "\n")
    elif args.command == "diagnose" or not args.html:
        make_console(out).print(render_diagnosis(diagnosis))


def cmd_runs(args: argparse.Namespace) -> int:
    from latdoc.store import Store

    with Store(args.db) as store:
        runs = store.list_runs(args.limit)
    if not runs:
        print("No stored runs yet: `latdoc diagnose` makes one.")
        return EXIT_OK
    print(f"  {'run':<24} {'started (UTC)':<20} {'status':<12} {'req':>4} {'fail':>4}  "
          f"{'verdict':<14} model @ endpoint")  # fmt: skip
    for r in runs:
        print(
            f"  {r.run_id:<24} {r.started_at:%Y-%m-%d %H:%M:%S}  {r.status:<12} "
            f"{r.requests:>4} {r.failed:>4}  {r.verdict or '-':<14} {r.model} @ {r.endpoint}"
        )
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from latdoc.diagnose import build_diagnosis
    from latdoc.store import Store

    with Store(args.db) as store:
        info, samples, stored = store.load_run(args.run_id)
    notes = [
        StepNote(str(n.get("step", "")), str(n.get("text", "")))
        for n in (stored or {}).get("notes", [])
        if isinstance(n, Mapping)
    ]
    context = context_from(info.run_id, info.endpoint, info.model, info.scenario, info.meta, notes)
    diagnosis = build_diagnosis(samples, context)
    _emit(diagnosis, samples, args, sys.stdout)
    return EXIT_OK
