"""``latdoc diagnose``, ``latdoc runs`` and ``latdoc report``: parse, call a verb of
:mod:`latdoc.features.diagnose` (or of the store, for ``runs``), print what its renderer
makes of the result."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from latdoc.cli._options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    add_budget_arguments,
    add_concurrency_argument,
    add_html_argument,
    add_json_argument,
    add_lang_argument,
    add_output_tokens_argument,
    add_prompt_tokens_argument,
    add_seed_argument,
    add_store_argument,
    add_target_arguments,
    add_trace_arguments,
    add_vantage_arguments,
    add_yes_argument,
    duration,
    plan_default,
    positive_int,
    vantages,
)
from latdoc.cli._output import emit
from latdoc.cli._sending import Sending
from latdoc.errors import UsageError
from latdoc.features.agent import ShownAgentDiagnosis, diagnose_otlp_file
from latdoc.features.diagnose import (
    ShownDiagnosis,
    diagnose_endpoint,
    diagnose_traffic,
    plan_line,
    planned_table,
    reference_of_run,
)
from latdoc.features.vantage import diagnose_vantages
from latdoc.i18n import N_
from latdoc.model import Scenario, parse_priorities
from latdoc.pipeline import named_metrics_url
from latdoc.reference import load_reference
from latdoc.report import ProgressBars, make_console, render_runs
from latdoc.store import Store
from latdoc.workload import DiagnosisPlan

DEFAULT_MAX_REQUESTS = plan_default(DiagnosisPlan, "max_requests")
DEFAULT_MAX_SECONDS = plan_default(DiagnosisPlan, "max_seconds")


def add_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    _add_diagnose_parser(sub)
    _add_runs_parser(sub)


def _add_diagnose_parser(sub: argparse._SubParsersAction[Any]) -> None:
    d = sub.add_parser(
        "diagnose",
        help="which kind of slow is it: network, model service or input length",
        description="Measure the network, input-length and load steps within a budget, "
        "attribute the latency, and rank remedies for your scenario. With no URL (no --provider, "
        "no OPENAI_BASE_URL) the built-in local endpoint is diagnosed.",
    )
    add_target_arguments(d)
    d.add_argument(
        "--scenario",
        choices=[s.value for s in Scenario],
        default=Scenario.CHAT.value,
        help="chat: latency first; batch: cost first; longdoc: quality with long input",
    )
    d.add_argument(
        "--priorities", type=parse_priorities, metavar="ORDER|WEIGHTS",
        help="rank remedies for your own order of latency, cost and quality "
        "(latency,cost,quality, or weights: latency=3,cost=1,quality=2) instead of the "
        "scenario's",
    )  # fmt: skip
    d.add_argument(
        "--reference", type=load_reference, metavar="FILE",
        help="what healthy is for you: a TOML file of the reference profile's fields, any "
        "subset ([quantity.tpot_ms] slow_edge = 20), laid over the profile latdoc ships "
        "(docs: How it measures); kept with the run",
    )  # fmt: skip
    d.add_argument(
        "--reference-run", metavar="RUN",
        help="what healthy is for you: a stored run of another endpoint, region, model or "
        "day, whose measured values (DNS, round trip, handshake, time per token, prefill "
        "growth, swing, client delay) become the reference; kept with the run",
    )  # fmt: skip
    add_budget_arguments(d, max_requests=DEFAULT_MAX_REQUESTS, max_seconds=DEFAULT_MAX_SECONDS)
    add_output_tokens_argument(d, DiagnosisPlan, "--output-tokens")
    add_prompt_tokens_argument(
        d,
        "prompt tokens of your typical request: the shares and the verdict are for a "
        "request of N prompt tokens, read from the measured length curve (default: the "
        "median of the recorded requests with --trace, --from-run or --from-otlp, else the "
        "seed's long prompt, 2,048)",
    )
    d.add_argument(
        "--context-window", type=positive_int, metavar="N",
        help="the model's context window, to clip the long prompts",
    )  # fmt: skip
    add_concurrency_argument(
        d,
        "concurrent requests you expect in production: the load step sends N at once "
        "(as the budget affords) and the pool is sized for N",
    )
    d.add_argument(
        "--server-metrics", metavar="URL|off", default="auto",
        help="the engine's Prometheus page, read before and after the run (llama.cpp, "
        "vLLM); default /metrics on the endpoint's host",
    )  # fmt: skip
    recorded = d.add_mutually_exclusive_group()
    recorded.add_argument(
        "--from-run", metavar="RUN_ID",
        help="diagnose an application's traffic recorded by latdoc.instrument; sends nothing",
    )  # fmt: skip
    recorded.add_argument(
        "--from-otlp", metavar="FILE",
        help="diagnose GenAI spans exported as OTLP JSON; sends nothing",
    )  # fmt: skip
    add_trace_arguments(
        d, "a workload-shaped diagnosis", "the three steps, diagnosed as recorded traffic"
    )
    add_html_argument(d, "write a self-contained HTML report")
    add_json_argument(d, "print the diagnosis as JSON")
    add_lang_argument(d)
    d.add_argument(
        "--dry-run", action="store_true",
        help="print the requests the plan may send and what they may cost, and send nothing",
    )  # fmt: skip
    add_store_argument(d)
    add_seed_argument(d, "generated prompts")
    add_vantage_arguments(d, "every step")


def _add_runs_parser(sub: argparse._SubParsersAction[Any]) -> None:
    runs = sub.add_parser(
        "runs",
        help="list stored diagnosis runs",
        description="List the stored runs, newest first. With --prune, remove the runs "
        "chosen by --status and --older-than: it prints what it would remove and removes "
        "it only with --yes.",
    )
    add_store_argument(runs)
    runs.add_argument("--limit", type=positive_int, default=50)
    runs.add_argument(
        "--prune", action="store_true",
        help="remove the runs --status and --older-than choose (a dry run without --yes)",
    )  # fmt: skip
    runs.add_argument(
        "--status", action="append", metavar="STATUS[,STATUS]",
        help="with --prune: the statuses to remove (interrupted, failed, done, recorded, "
        "running); default every status but running",
    )  # fmt: skip
    runs.add_argument(
        "--older-than", type=duration, metavar="DURATION",
        help="with --prune: only runs started more than DURATION ago (7d, 12h)",
    )  # fmt: skip
    add_yes_argument(runs, "with --prune: remove them, not only list them")


def run_diagnose(args: argparse.Namespace) -> int:
    if args.reference_run is not None:
        if args.reference is not None:
            raise UsageError(
                N_("--reference and --reference-run both say what healthy is: give one")
            )
        with Store(args.db) as store:
            args.reference = reference_of_run(store, args.reference_run)
    if args.from_run or args.from_otlp:
        if args.trace:
            raise UsageError(N_("--trace sends the trace's requests; --from-run and "
                                "--from-otlp send nothing: give one of them"))  # fmt: skip
        return _diagnose_recorded(args)
    if args.trace:
        return _diagnose_trace(args)
    sending = Sending.of(args)
    err = sys.stderr
    places = vantages(args)
    if places is not None and args.server_metrics not in ("auto", "off"):
        raise UsageError(
            N_("--server-metrics reads an engine from this machine: not with --vantage")
        )
    if places is not None and args.reference is not None:
        raise UsageError(
            N_(
                "--reference and --reference-run are not taken with --vantage: diagnose "
                "each place on its own"
            )
        )
    named_metrics_url(args.server_metrics)
    with sending.to(err, engine=True) as (endpoint, connection):
        plan = sending.plan(
            DiagnosisPlan,
            endpoint,
            connection,
            context_window=args.context_window,
            concurrency=args.concurrency,
        )
        print(plan_line(plan), file=err)
        if args.dry_run:
            make_console(sys.stdout).print(planned_table(plan))
            print("Dry run: nothing was sent.", file=err)
            return EXIT_OK
        with sending.store() as store, ProgressBars(err) as progress:
            if places is not None:
                runs = diagnose_vantages(
                    plan,
                    ray=args.ray,
                    vantages=places,
                    store=store,
                    scenario=Scenario(args.scenario),
                    priorities=args.priorities,
                )
                emit(runs.shown(), args)
                return EXIT_REQUEST_FAILED if runs.every_failed else EXIT_OK
            run = diagnose_endpoint(
                plan,
                scenario=Scenario(args.scenario),
                priorities=args.priorities,
                store=store,
                on_progress=progress,
                server_metrics=args.server_metrics,
                prompt_tokens=args.prompt_tokens,
                reference=args.reference,
            )
    emit(ShownDiagnosis(run), args)
    print(
        f"Run {run.run_id}: {len(run.samples)} traces kept in {run.store_path}; "
        f"`latdoc report {run.run_id} --html FILE` renders it again.",
        file=err,
    )
    if run.status == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_REQUEST_FAILED if run.all_failed else EXIT_OK


def _diagnose_trace(args: argparse.Namespace) -> int:
    """Replay the trace, keep it as recorded traffic, and diagnose that."""
    from latdoc.features.load import LoadPlan
    from latdoc.features.load.send.replay import Replay, record_replay

    sending = Sending.of(args)
    err = sys.stderr
    with sending.to(err, engine=True) as (endpoint, connection):
        plan = sending.plan(LoadPlan, endpoint, connection, concurrency=(args.concurrency,))
        replay = Replay(args.trace, args.trace_format, args.speed, args.concurrency)
        print(f"Replaying {args.trace} against {endpoint.base_url}, then diagnosing it as "
              "recorded traffic.", file=err)  # fmt: skip
        with sending.store() as store:
            with ProgressBars(err, transient=True) as progress:
                run_id = record_replay(plan, replay, store, on_progress=progress)
            run = diagnose_traffic(
                store,
                run_id,
                prompt_tokens=args.prompt_tokens,
                priorities=args.priorities,
                reference=args.reference,
            )
    emit(ShownDiagnosis(run), args)
    print(f"Run {run.run_id}: {len(run.samples)} replayed requests in {run.store_path}.",
          file=err)  # fmt: skip
    return EXIT_INTERRUPTED if run.status == "interrupted" else EXIT_OK


def _diagnose_recorded(args: argparse.Namespace) -> int:
    if args.url:
        raise UsageError(N_("--from-run and --from-otlp send nothing: give no URL"))
    with Store(args.db) as store:
        if args.from_run:
            run = diagnose_traffic(
                store,
                args.from_run,
                prompt_tokens=args.prompt_tokens,
                priorities=args.priorities,
                reference=args.reference,
            )
            shown: ShownDiagnosis | ShownAgentDiagnosis = ShownDiagnosis(run)
        else:
            shown = diagnose_otlp_file(
                store,
                args.from_otlp,
                prompt_tokens=args.prompt_tokens,
                priorities=args.priorities,
                reference=args.reference,
            )
            run = shown.run
    emit(shown, args)
    print(
        f"Run {run.run_id}: {len(run.samples)} recorded requests in {run.store_path}.",
        file=sys.stderr,
    )
    return EXIT_OK


def run_runs(args: argparse.Namespace) -> int:
    if args.prune:
        return _prune(args)
    if args.status or args.older_than or args.yes:
        raise UsageError(N_("--status, --older-than and --yes choose what --prune removes"))
    with Store(args.db) as store:
        runs = store.list_runs(args.limit)
    if not runs:
        print("No stored runs yet: `latdoc diagnose` makes one.")
        return EXIT_OK
    print(render_runs(runs))
    return EXIT_OK


def _prune(args: argparse.Namespace) -> int:
    """Print the runs chosen; remove them with ``--yes``."""
    from datetime import UTC, datetime, timedelta

    statuses = None
    if args.status:
        statuses = {s.strip() for given in args.status for s in given.split(",") if s.strip()}
    before = None
    if args.older_than is not None:
        before = datetime.now(UTC) - timedelta(seconds=args.older_than)
    with Store(args.db) as store:
        chosen = store.choose_runs(statuses, started_before=before)
        if not chosen:
            print("No run matches: nothing to remove.")
            return EXIT_OK
        traces = sum(r.requests for r in chosen)
        print(render_runs(chosen))
        what = f"{len(chosen)} run{'' if len(chosen) == 1 else 's'} ({traces} traces)"
        if not args.yes:
            print(
                f"Would remove {what}; add --yes to remove {'it' if len(chosen) == 1 else 'them'}."
            )
            return EXIT_OK
        removed = store.delete_runs([r.run_id for r in chosen])
    print(f"Removed {removed} run{'' if removed == 1 else 's'} ({traces} traces).")
    return EXIT_OK
