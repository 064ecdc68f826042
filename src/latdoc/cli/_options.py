"""What every command parses alike: the flags' types and the flags they share.

Each is written once here; the command modules only declare their own flags. A type
reads its text with the library's reader (:mod:`latdoc.analysis.quantities`, the
probe's, a feature's), wrapped by :func:`argument_type`, so the library and the command
line read a value, and refuse it, alike. The exit codes are ``_parser``'s, named here
too for the command modules; the target, the key and the store are ``_sending``'s.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import ipaddress
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from latdoc.analysis import quantities
from latdoc.cli._parser import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from latdoc.cli._parser import EXIT_OK as EXIT_OK
from latdoc.cli._parser import EXIT_REQUEST_FAILED as EXIT_REQUEST_FAILED
from latdoc.cli._parser import EXIT_USAGE as EXIT_USAGE
from latdoc.cli._sending import choice
from latdoc.errors import UsageError, message_of
from latdoc.i18n import LANGUAGES, N_, Message, say, translate
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.probe import BASE_URL_VARIABLE as BASE_URL_VARIABLE
from latdoc.probe import dialects, load_tools, parse_extra_body, providers

if TYPE_CHECKING:
    from latdoc.report.metrics import PrometheusMetrics

T = TypeVar("T")


def argument_type(read: Callable[[str], T]) -> Callable[[str], T]:
    """``read`` (a reader of :mod:`latdoc.analysis.quantities` or of a feature) as a
    flag's type: its :class:`UsageError` becomes argparse's ``argument --flag: …``, said
    in the language spoken, as argparse's own words are (argparse keeps only the text)."""

    @functools.wraps(read)
    def parse(text: str) -> T:
        try:
            return read(text)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(translate(message_of(exc))) from None

    return parse


positive_int = argument_type(quantities.positive_int)
non_negative_float = argument_type(quantities.non_negative_float)
positive_float = argument_type(quantities.positive_float)
duration = argument_type(quantities.duration)
"""The one parser of every flag that takes a duration: ``30s``, ``5m``, ``1.5h``, ``2d``."""
json_object = argument_type(parse_extra_body)
"""``--extra-body``: a JSON object of request fields latdoc does not write itself."""
tools_file = argument_type(load_tools)
"""``--tools``: a JSON file of tool definitions every request offers."""


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    """The endpoint to measure and how to connect to it: the same flags on every command."""
    p.add_argument("url", nargs="?", help="base URL, e.g. https://api.openai.com/v1")
    p.add_argument("--model", "-m", help="model name (required for a real endpoint)")
    p.add_argument(
        "--provider",
        choices=providers.names(),
        metavar="NAME",
        help="a known host: picks the API dialect, the base URL and the key's variable "
        f"(a URL or --api given still wins); one of {', '.join(providers.names())}; "
        "`latdoc providers` lists them",
    )
    p.add_argument(
        "--api",
        choices=dialects.names(),
        help=f"API dialect (default: the --provider's, else {dialects.DEFAULT.name}): "
        f"{_dialect_help()}",
    )
    p.add_argument(
        "--extra-body", type=json_object, default={}, metavar="JSON",
        help="fields added to every request body, e.g. '{\"ignore_eos\": true, "
        "\"temperature\": 0}' (not model, messages, prompt, stream or max_tokens)",
    )  # fmt: skip
    p.add_argument(
        "--tools", type=tools_file, default=(), metavar="FILE",
        help="offer every request the tools in FILE (a JSON list of function definitions, "
        "in any API's shape: name, description, JSON Schema parameters); the record keeps "
        "when the first tool call and its arguments' last byte arrived",
    )  # fmt: skip
    g = p.add_argument_group("connection")
    g.add_argument("--http2", action="store_true", help="offer HTTP/2 (ALPN) as well as 1.1")
    g.add_argument("--cacert", metavar="FILE", help="CA certificates to verify the server with")
    g.add_argument(
        "--insecure", "-k", action="store_true", help="do not verify the server's certificate"
    )
    g.add_argument(
        "--api-key-env",
        metavar="VAR",
        help=f"environment variable holding the API key (default: the --provider's; else "
        f"{_key_help()})",
    )
    g.add_argument(
        "--proxy", metavar="URL",
        help="send through this proxy instead of the environment's (HTTPS_PROXY, HTTP_PROXY, "
        "ALL_PROXY; NO_PROXY still applies): http://[USER:PASSWORD@]HOST:PORT for CONNECT "
        "and forwarding, socks5h://HOST:PORT for SOCKS5",
    )  # fmt: skip
    g.add_argument(
        "--no-proxy", action="store_true",
        help="connect direct, whatever the proxy variables of the environment say",
    )  # fmt: skip
    g.add_argument(
        "--timeout",
        type=duration,
        default=300.0,
        metavar="DURATION",
        help="give up on one request after DURATION (30s, 5m; a bare number is seconds; "
        "default 300s)",
    )


def _dialect_help() -> str:
    """Each dialect's name, what it is and its route: ``chat (OpenAI chat completions,
    /chat/completions; the default), …``."""
    default = dialects.DEFAULT
    return ", ".join(
        f"{d.name} ({d.title}, {d.route.path}"
        + "".join(f", or {r.path} after a base URL ending {r.after}" for r in d.other_routes)
        + f"{'; the default' if d is default else ''})"
        for d in dialects.DIALECTS
    )


def _key_help() -> str:
    """The default dialect's key variables, then each other dialect's with its dialects:
    ``OPENAI_API_KEY; ANTHROPIC_API_KEY with --api anthropic``."""
    default = " or ".join(dialects.DEFAULT.key_variables)
    others: dict[str, list[str]] = {}
    for d in dialects.DIALECTS:
        variables = " or ".join(d.key_variables)
        if variables != default:
            others.setdefault(variables, []).append(f"--api {d.name}")
    return "; ".join([default, *(f"{v} with {' or '.join(a)}" for v, a in others.items())])


def add_budget_arguments(
    p: argparse.ArgumentParser,
    *,
    max_requests: int,
    max_seconds: float | None = None,
    over: str | None = None,
) -> argparse._ArgumentGroup:
    """The hard caps every sending command takes: ``--max-requests``, ``--token-budget``
    and, given its default, ``--max-seconds`` (a watch has no wall-time cap); ``over`` says
    what they span (default: the whole run). Returns the group for more of its own."""
    g = p.add_argument_group("budget")
    g.add_argument(
        "--max-requests", type=positive_int, default=max_requests, metavar="N",
        help=f"hard cap on requests{f' {over}' if over else ''} (default {max_requests})",
    )  # fmt: skip
    g.add_argument(
        "--token-budget", type=positive_int, metavar="N",
        help=f"hard cap on prompt + output tokens {over or 'over the whole run'}",
    )  # fmt: skip
    g.add_argument(
        "--max-cost", type=positive_float, metavar="DOLLARS",
        help=f"hard cap in US dollars {over or 'over the whole run'}, at the model's price: "
        "each request is counted at its worst case before it is sent, then at the usage "
        "the server reports",
    )  # fmt: skip
    g.add_argument(
        "--price", metavar="in=X,out=Y[,cached=Z]",
        help="the model's price, in dollars per million prompt, output and cached prompt "
        "tokens (default: genai-prices' price of the model at the URL's provider; a server "
        "on this machine has none)",
    )  # fmt: skip
    if max_seconds is not None:
        g.add_argument(
            "--max-seconds", type=duration, default=max_seconds, metavar="DURATION",
            help=f"wall-time budget (90s, 10m; a bare number is seconds); the plan adapts to "
            f"it (default {max_seconds:g}s)",
        )  # fmt: skip
    return g


def add_output_tokens_argument(p: argparse.ArgumentParser, plan: type[Any], *also: str) -> None:
    """``--max-tokens`` (and any names it is ``also`` given): the output length of each
    request, in every command, by default ``plan``'s."""
    default = plan_default(plan, "max_tokens")
    p.add_argument(
        "--max-tokens", *also, dest="max_tokens", type=positive_int, default=default,
        metavar="N", help=f"max_tokens of each request: the output length (default {default})",
    )  # fmt: skip


def add_prompt_tokens_argument(
    p: argparse._ActionsContainer, help_text: str, default: int | None = None
) -> None:
    """``--prompt-tokens N``: a prompt's length in tokens, which each command reads its own
    way (said in ``help_text``)."""
    p.add_argument(
        "--prompt-tokens", type=positive_int, default=default, metavar="N", help=help_text
    )


def add_concurrency_argument(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--concurrency N``: the requests expected at once in production, by default the
    model's (:data:`latdoc.model.DEFAULT_CONCURRENCY`)."""
    p.add_argument(
        "--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
        help=f"{help_text} (default {DEFAULT_CONCURRENCY})",
    )  # fmt: skip


def add_seed_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--seed``: the seed of the random choices ``what`` names."""
    p.add_argument("--seed", type=int, help=f"seed for {what}")


def add_json_argument(p: argparse._ActionsContainer, help_text: str | None = None) -> None:
    """``--json``: the result's JSON document on stdout (read by :func:`._output.emit`)."""
    p.add_argument("--json", action="store_true", help=help_text)


def add_html_argument(p: argparse._ActionsContainer, help_text: str | None = None) -> None:
    """``--html FILE``: the result's page written to FILE (read by :func:`._output.emit`)."""
    p.add_argument("--html", metavar="FILE", help=help_text)


def add_lang_argument(p: argparse.ArgumentParser) -> None:
    """``--lang``: the language of what the command prints, read by :func:`latdoc.cli.main`
    before the arguments are parsed (so their own errors are said in it too)."""
    p.add_argument(
        "--lang", choices=LANGUAGES,
        help="the language of the report and of its errors (default: $LATDOC_LANG, else zh "
        "where the locale is zh_*, else en); JSON stays English",
    )  # fmt: skip


def add_yes_argument(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--yes``: go ahead with what the command otherwise only says or refuses."""
    p.add_argument("--yes", action="store_true", help=help_text)


def add_metrics_arguments(p: argparse.ArgumentParser, while_: str) -> None:
    """``--metrics-port`` and ``--metrics-addr``: Prometheus metrics while a command sends."""
    p.add_argument(
        "--metrics-port", type=int, metavar="PORT",
        help=f"serve Prometheus metrics on http://127.0.0.1:PORT/metrics while {while_}",
    )  # fmt: skip
    p.add_argument("--metrics-addr", default="127.0.0.1", metavar="ADDR",
                   help="address the metrics listen on (default 127.0.0.1)")  # fmt: skip


@contextlib.contextmanager
def serving_metrics(args: argparse.Namespace, err: TextIO) -> Iterator[PrometheusMetrics | None]:
    """The metrics exporter ``--metrics-port`` asked for, serving until the block ends;
    None when not asked."""
    if args.metrics_port is None:
        yield None
        return
    if not 0 <= args.metrics_port <= 65535:
        raise UsageError(
            Message(
                "--metrics-port must be between 0 and 65535, got {port}", port=args.metrics_port
            )
        )
    from latdoc.report.metrics import PrometheusMetrics

    metrics = PrometheusMetrics()
    port = metrics.start(args.metrics_port, args.metrics_addr)
    print(f"Metrics on http://{args.metrics_addr}:{port}/metrics", file=err, flush=True)
    try:
        yield metrics
    finally:
        metrics.close()


_VANTAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def vantage_list(text: str) -> tuple[str, ...]:
    """``a,b``: vantage names, each a Ray custom resource ``vantage:NAME``, once each."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if not _VANTAGE_NAME.match(n)]
    if not names or bad or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            say(
                "--vantage {text!r}: expected distinct names of letters, digits, '.', '_' or "
                "'-', e.g. us-east,eu-west",
                text=text,
            )
        )
    return names


def add_ray_argument(g: argparse._ActionsContainer, what: str) -> None:
    """``--ray ADDRESS``: the Ray cluster ``what`` runs on."""
    g.add_argument(
        "--ray", metavar="ADDRESS",
        help=f"{what} (auto: the cluster this machine is part of); needs the [ray] extra",
    )  # fmt: skip


def add_vantage_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """``--ray ADDRESS --vantage a,b``: measure from Ray nodes labelled as vantage points."""
    g = p.add_argument_group("vantage points: measure from other places, on Ray nodes")
    add_ray_argument(g, "the Ray cluster whose vantage nodes measure")
    g.add_argument(
        "--vantage", type=vantage_list, metavar="NAME,NAME",
        help=f"run {what} on the nodes carrying the Ray resource vantage:NAME, one run each, "
        "and compare DNS, connect, TLS, RTT and TTFT side by side",
    )  # fmt: skip


def vantages(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The vantage names asked for, or None; ``--ray`` and ``--vantage`` go together."""
    if (args.ray is None) != (args.vantage is None):
        raise UsageError(N_("--ray ADDRESS and --vantage NAME,NAME go together"))
    names: tuple[str, ...] | None = args.vantage
    if names is not None and not choice(args).url:
        raise UsageError(
            N_(
                "--vantage measures from other machines: give the endpoint's URL (the built-in "
                "endpoint runs on this machine only)"
            )
        )
    return names


def add_trace_arguments(p: argparse.ArgumentParser, title: str, instead: str) -> None:
    """``--trace``, ``--trace-format`` and ``--speed``: a trace of real traffic to replay
    ``instead`` of what the command sends otherwise."""
    from latdoc.workload.traces import names

    group = p.add_argument_group(title)
    group.add_argument(
        "--trace", metavar="FILE",
        help="replay a trace of real traffic (Mooncake JSONL, ShareGPT, BurstGPT CSV, or "
        f"latdoc's own export), gzipped or not, instead of {instead}",
    )  # fmt: skip
    group.add_argument(
        "--trace-format", choices=names(), metavar="FORMAT",
        help=f"the trace's format ({', '.join(names())}); default: from its first line",
    )  # fmt: skip
    group.add_argument(
        "--speed", type=speed, default=1.0, metavar="S",
        help="send at the trace's times ÷ S (default 1), or 'max': back to back on "
        "--concurrency's streams",
    )  # fmt: skip


def speed(text: str) -> float | None:
    """``--speed``: ``2`` (twice a trace's pace), ``0.5``, or ``max`` (``None``: back to
    back)."""
    if text.strip().lower() == "max":
        return None
    return positive_float(text)


def add_gate_argument(p: argparse.ArgumentParser, baseline: str) -> None:
    """``--fail-if``: regression gates against ``baseline`` (said in the help)."""
    p.add_argument(
        "--fail-if",
        metavar="GATES",
        help=f"exit 1 when a gate fails against {baseline}: e.g. 'ttft_p50 > +10%%, "
        "tpot_p95 > +5ms' (a metric of compare's table, p50/p90/p95/p99, a share or a "
        "duration); a gate fails only where the difference is significant",
    )


def add_store_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="FILE", help="the SQLite store (default: user data dir)")


def plan_default(plan: type[Any], name: str) -> Any:
    """The default of ``plan``'s field ``name``: a flag's default is what the library's plan
    does when the field is not given, written once there."""
    import dataclasses

    for f in dataclasses.fields(plan):
        if f.name == name and f.default is not dataclasses.MISSING:
            return f.default
    raise LookupError(f"{plan.__name__}.{name} has no default")


def local_host(host: str) -> bool:
    """``host`` is this machine's loopback (``localhost``, ``127.0.0.1``, ``::1``): a
    server bound there needs no token (``serve``, ``record``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
