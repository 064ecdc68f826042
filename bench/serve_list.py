"""``latdoc serve``'s runs list and run pages at 100,000 runs, against the same at 1,000.

Builds two temporary stores, of 1,000 and of 100,000 runs (``--runs``), each a run every
five minutes: a mix of kinds (diagnose, load, probe, watch, verify arms, instrument),
endpoints (a dozen, hosted and local), statuses (most done, some failed or interrupted,
a few running), a few samples for one run in fifty, and a diagnosis document with a
verdict and a cost for a third of the diagnoses. Newest of all, a diagnosis measured in
full and an experiment that followed it, whose pages are drawn by the report's renderer.

Then asks the app itself (:func:`latdoc.features.serve.make_app`, in process through
Starlette's ``TestClient``: no socket, so the time is the app's and the store's) for:
the list's first page (``/``), a page filtered by kind, by a part of the endpoint, and by
a month of dates, the page after following ``next`` 20 times, ``/api/runs``, and the
pages of the finished diagnosis and of its experiment (each drawn afresh: the app keeps
drawn pages, so every try is a new app). Each case is the median of ``--tries``
requests after one untimed. Printed: each case's milliseconds at either size and their
ratio; a keyset page should cost about the same at either size (ratio near 1), and
every page of the list should stay under 300 ms at 100,000 runs. (At 1,000 runs the
21st page is the last, of two runs.) A run's page is mostly its report's drawing,
which does not grow with the store: its ratio is what to watch.

The runs are written as rows by the store's own row writer
(:func:`latdoc.store.rows.insert_run`, :func:`~latdoc.store.rows.insert_samples`) in one
transaction, into a store :class:`~latdoc.store.Store` created: ``Store.new_run`` and
``finish_run`` commit a transaction each, and a commit waits for the disk, about 7 ms a
run here, so 100,000 runs would take twelve minutes instead of seconds. The two runs with
pages are written through ``Store`` itself.

Run: ``.venv/bin/python bench/serve_list.py [--runs N] [--tries N]`` (about a minute).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.features.serve import ServeOptions, make_app
from latdoc.records import Chunk, RequestTrace, Sample, Step
from latdoc.store import Store
from latdoc.store.redact import Redactor
from latdoc.store.rows import insert_run, insert_samples
from latdoc.store.run import RunInfo

SMALL = 1_000
LIST_LIMIT_MS = 300.0
"""What a page of the list may take at 100,000 runs."""
EVERY = timedelta(minutes=5)
MS = 1_000_000
ENDPOINTS = (
    "https://api.openai.com/v1/chat/completions",
    "https://api.anthropic.com/v1/messages",
    "https://api.mistral.ai/v1/chat/completions",
    "https://api.together.xyz/v1/chat/completions",
    "https://api.groq.com/openai/v1/chat/completions",
    "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
    "https://gw.example.internal/llm/v1/chat/completions",
    "https://gw-eu.example.internal/llm/v1/chat/completions",
    "http://127.0.0.1:8000/v1/chat/completions",
    "http://127.0.0.1:8001/v1/chat/completions",
    "http://localhost:11434/v1/chat/completions",
    "http://10.0.3.17:8080/v1/chat/completions",
)
KINDS = (
    ("diagnose", 40),
    ("load", 20),
    ("probe", 15),
    ("watch", 10),
    ("verify", 10),
    ("instrument", 5),
)
STATUSES = (("done", 85), ("failed", 5), ("interrupted", 9), ("running", 1))
VERDICTS = ("healthy", "queueing", "network", "prefill", "cold_connections", "stalls")
FILTER_ENDPOINT = "gw.example"
"""A part of one endpoint's URL, as a filter is typed."""


def _pick(rng: random.Random, weighted: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([name for name, _ in weighted], [w for _, w in weighted])[0]


def _trace(
    start: datetime, *, cold: bool, wait_ms: float, prompt_tokens: int = 128, failed: bool = False
) -> RequestTrace:
    """A streamed request from its phases: DNS, connect and TLS when ``cold``, the wait
    for the first byte, ten chunks."""
    marks, at = [], 150_000
    for ms in (
        12.0 if cold else None,
        24.0 if cold else None,
        41.0 if cold else None,
        2.5,
        wait_ms,
        35.0,
        1200.0,
    ):
        if ms is not None:
            at += round(ms * MS)
        marks.append(at if ms is not None else None)
    dns, connect, tls, sent, first_byte, first_token, done = marks
    error = (
        TraceError(ErrorKind.HTTP, Phase.WAIT, "HTTP 429: rate limited", 429) if failed else None
    )
    chunks = (
        ()
        if failed
        else tuple(
            Chunk(t_ns=first_token + (done - first_token) * i // 9, chars=40, tokens=11)
            for i in range(10)
        )
    )
    return RequestTrace(
        started_at=start,
        t0_ns=10_000_000_000,
        url=ENDPOINTS[0],
        model="gpt-4o-mini",
        dialect="openai-chat",
        http_version="HTTP/1.1",
        remote_ip="203.0.113.7",
        connection_id=1,
        new_connection=cold,
        queue_done_ns=150_000,
        dns_done_ns=dns,
        connect_done_ns=connect,
        tls_done_ns=tls,
        sent_ns=sent,
        first_byte_ns=first_byte,
        first_token_ns=None if failed else first_token,
        done_ns=None if failed else done,
        status=429 if failed else 200,
        chunks=chunks,
        prompt_tokens=prompt_tokens,
        output_tokens=None if failed else 100,
        output_tokens_exact=not failed,
        error=error,
    )


def diagnosis_samples(start: datetime) -> list[Sample]:
    """What ``latdoc diagnose`` keeps: cold and warm requests, a prompt-length sweep,
    a burst at concurrency 8 with one request refused."""
    samples = []
    for i in range(4):
        samples.append(
            Sample(Step.NETWORK, _trace(start, cold=True, wait_ms=360.0 + 15 * i), cold=True)
        )
        samples.append(Sample(Step.NETWORK, _trace(start, cold=False, wait_ms=370.0)))
    for tokens in (128, 512, 2048, 8192):
        for repeat in range(3):
            wait = (300 + 0.12 * tokens + 0.00002 * tokens * tokens) * (0.92 + 0.06 * repeat)
            trace = _trace(start, cold=False, wait_ms=wait, prompt_tokens=tokens)
            samples.append(Sample(Step.LENGTH, trace, target_prompt_tokens=tokens))
    for i in range(6):
        samples.append(
            Sample(
                Step.LOAD, _trace(start, cold=False, wait_ms=400.0 + 900.0 * (i % 3)), concurrency=8
            )
        )
    samples.append(
        Sample(Step.LOAD, _trace(start, cold=False, wait_ms=0.0, failed=True), concurrency=8)
    )
    return [
        Sample(s.step, s.trace, s.target_prompt_tokens, s.concurrency, s.cold, i)
        for i, s in enumerate(samples)
    ]


@dataclass(frozen=True)
class Built:
    path: Path
    first: datetime
    last: datetime
    diagnosis: str
    experiment: str


def build(path: Path, runs: int, seed: int) -> Built:
    """A store of ``runs`` runs (see the module's text), and the two with pages."""
    rng = random.Random(seed)
    first = datetime(2026, 1, 1, tzinfo=UTC)
    with Store(path):
        pass  # the schema, created and stamped by the store itself
    redactor = Redactor()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    for i in range(runs):
        started = first + i * EVERY
        kind, status = _pick(rng, KINDS), _pick(rng, STATUSES)
        endpoint = rng.choice(ENDPOINTS)
        run_id = f"{started:%Y%m%d-%H%M%S}-{i:06x}"
        meta: dict[str, Any] = {"latdoc": "0.9", "python": "3.12.7"}
        if kind == "verify":
            meta |= {"experiment": f"e{i // 2}", "arm": "AB"[i % 2], "remedy": "reuse connections"}
        diagnosis = None
        if kind == "diagnose" and status == "done" and rng.random() < 1 / 3:
            diagnosis = {
                "schema": "latdoc.diagnosis/2",
                "verdict": {"primary": rng.choice(VERDICTS)},
                "cost": {"total": round(rng.uniform(0.001, 0.5), 4)},
            }
        finished = None if status == "running" else started + timedelta(seconds=rng.randint(5, 200))
        info = RunInfo(
            run_id,
            started,
            finished,
            status,
            endpoint,
            "gpt-4o-mini",
            "chat",
            0,
            0,
            None,
            kind=kind,
        )
        insert_run(conn, redactor, info, meta, diagnosis)
        if i % 50 == 0:
            samples = [
                Sample(
                    Step.WATCH,
                    _trace(
                        started,
                        cold=j == 0,
                        wait_ms=rng.uniform(200, 900),
                        failed=rng.random() < 0.1,
                    ),
                    index=j,
                )
                for j in range(rng.randint(1, 8))
            ]
            insert_samples(conn, redactor, run_id, samples)
    conn.execute("COMMIT")
    conn.close()
    clock = iter([first + runs * EVERY + k * timedelta(seconds=1) for k in range(10)])
    with Store(path, clock=lambda: next(clock)) as store:
        diagnosis = store.new_run(
            endpoint=ENDPOINTS[0], model="gpt-4o-mini", scenario="chat", meta={}
        )
        store.add_samples(diagnosis, diagnosis_samples(first + runs * EVERY))
        store.finish_run(diagnosis, status="done", diagnosis=None)
        arms = []
        for arm in "AB":
            arms.append(
                store.new_run(
                    endpoint=ENDPOINTS[0],
                    model="gpt-4o-mini",
                    scenario="chat",
                    meta={"experiment": "last", "arm": arm, "remedy": "reuse connections"},
                    kind="verify",
                )
            )
            store.add_samples(arms[-1], diagnosis_samples(first + runs * EVERY)[:8])
            store.finish_run(arms[-1], status="done", diagnosis=None)
        experiment = arms[0]
    return Built(path, first, first + runs * EVERY, diagnosis, experiment)


@contextmanager
def client(path: Path) -> Iterator[TestClient]:
    with TestClient(make_app(ServeOptions(str(path)))) as c:
        yield c


def _ok(response: Any) -> Any:
    if response.status_code != 200:
        raise SystemExit(f"{response.url}: {response.status_code}\n{response.text[:500]}")
    return response


def deep_cursor(c: TestClient, pages: int) -> str:
    """The cursor after following ``next`` ``pages`` times from the top."""
    after = None
    for _ in range(pages):
        page = _ok(c.get("/api/runs", params={} if after is None else {"after": after})).json()
        after = page["next"]
    assert after is not None, "fewer runs than pages"
    return after


def cases(built: Built) -> dict[str, Callable[[TestClient], None]]:
    month = {
        "since": f"{built.last - timedelta(days=45):%Y-%m-%d}",
        "until": f"{built.last - timedelta(days=15):%Y-%m-%d}",
    }
    with client(built.path) as c:
        deep = deep_cursor(c, 20)
    return {
        "/ (first page)": lambda c: _ok(c.get("/")),
        "/?kind=load": lambda c: _ok(c.get("/", params={"kind": "load"})),
        f"/?endpoint={FILTER_ENDPOINT}": lambda c: _ok(
            c.get("/", params={"endpoint": FILTER_ENDPOINT})
        ),
        "/?since..until (30 days)": lambda c: _ok(c.get("/", params=month)),
        "/?after= (21st page)": lambda c: _ok(c.get("/", params={"after": deep})),
        "/api/runs": lambda c: _ok(c.get("/api/runs")),
        "/api/runs?kind=load&endpoint=": lambda c: _ok(
            c.get("/api/runs", params={"kind": "load", "endpoint": FILTER_ENDPOINT})
        ),
        "/runs/<diagnosis>": lambda c: _ok(c.get(f"/runs/{built.diagnosis}")),
        "/runs/<experiment arm>": lambda c: _ok(c.get(f"/runs/{built.experiment}")),
    }


def timed(built: Built, tries: int) -> dict[str, float]:
    """Each case's median milliseconds over ``tries`` requests, each to a fresh app."""
    out = {}
    for name, ask in cases(built).items():
        times = []
        for k in range(tries + 1):
            with client(built.path) as c:
                t = time.perf_counter()
                ask(c)
                if k:
                    times.append((time.perf_counter() - t) * 1e3)
        out[name] = statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", help="where to put the temporary stores (default: system temp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        sizes = (SMALL, args.runs)
        measured = []
        for runs in sizes:
            t = time.perf_counter()
            built = build(Path(tmp) / f"runs-{runs}.db", runs, args.seed)
            took = time.perf_counter() - t
            size = built.path.stat().st_size / 1e6
            print(f"{runs:>9,} runs: built in {took:5.1f} s, {size:6.1f} MB")
            measured.append(timed(built, args.tries))
        small, large = measured
        width = max(map(len, small))
        print()
        print(f"{'case':<{width}}  {f'{SMALL:,} runs':>12}  {f'{args.runs:,} runs':>12}  ratio")
        slow = []
        for name in small:
            print(
                f"{name:<{width}}  {small[name]:9.1f} ms  {large[name]:9.1f} ms  "
                f"{large[name] / small[name]:5.2f}×"
            )
            if not name.startswith("/runs/") and large[name] > LIST_LIMIT_MS:
                slow.append(name)
        print()
        print(
            f"pages of the list over {LIST_LIMIT_MS:g} ms at {args.runs:,} runs: {', '.join(slow)}"
            if slow
            else f"every page of the list under {LIST_LIMIT_MS:g} ms at {args.runs:,} runs"
        )


if __name__ == "__main__":
    main()
