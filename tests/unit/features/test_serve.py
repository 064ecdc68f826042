"""``latdoc serve``'s app, driven in process through its ASGI interface (no socket): the
runs list and its filters and pages, a run's page framed from the report's own renderer,
the JSON API, the errors said as pages or JSON, the token, and a store never written."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from latdoc.errors import UsageError
from latdoc.features.serve import API_SCHEMA, ServeOptions, make_app
from latdoc.features.serve.analysis import PAGE_SIZE, list_query
from latdoc.store import LOAD_KIND, VERIFY_KIND, RunFilter, Store
from report_samples import run_samples

START = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


class Clock:
    """Each run a minute after the last."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def _fill(path: Path, runs: int) -> list[str]:
    ids = []
    with Store(path, clock=Clock()) as store:
        for i in range(runs):
            kind = LOAD_KIND if i % 3 == 2 else "diagnose"
            run_id = store.new_run(
                endpoint=f"http://127.0.0.1:{8000 + i % 2}/v1", model="m", scenario="chat",
                meta={}, kind=kind,
            )  # fmt: skip
            store.finish_run(run_id, status="done", diagnosis=None)
            ids.append(run_id)
    return ids


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(make_app(ServeOptions(str(db)))) as client:
        yield client


def test_the_list_pages_newest_first_and_filters(db: Path, client: TestClient) -> None:
    ids = _fill(db, 7)
    page = client.get("/api/runs", params={"limit": 3}).json()
    assert page["schema"] == API_SCHEMA
    assert page["total"] == 7
    assert [r["run_id"] for r in page["runs"]] == ids[::-1][:3]
    second = client.get("/api/runs", params={"limit": 3, "after": page["next"]}).json()
    assert [r["run_id"] for r in second["runs"]] == ids[::-1][3:6]
    last = client.get("/api/runs", params={"limit": 3, "after": second["next"]}).json()
    assert [r["run_id"] for r in last["runs"]] == [ids[0]] and last["next"] is None
    loads = client.get("/api/runs", params={"kind": "load"}).json()
    assert [r["run_id"] for r in loads["runs"]] == [ids[5], ids[2]]
    on_8001 = client.get("/api/runs", params={"endpoint": ":8001"}).json()
    assert on_8001["total"] == 3
    html = client.get("/", params={"kind": "load"}).text
    assert ids[5] in html and ids[4] not in html
    assert "2 of 2 runs shown" in html


def test_dates_pick_runs_by_their_utc_day(db: Path) -> None:
    _fill(db, 3)
    chosen = list_query({"since": "2026-11-01", "until": "2026-11-01"}).chosen
    with Store(db, read_only=True) as store:
        assert store.runs.count_runs(chosen) == 3
        assert store.runs.count_runs(list_query({"since": "2026-11-02"}).chosen) == 0
        assert store.runs.count_runs(RunFilter()) == 3


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"kind": "nap"}, "kind 'nap'"),
        ({"since": "1 Nov"}, "give a date as YYYY-MM-DD"),
        ({"limit": "0"}, "limit '0'"),
        ({"limit": "many"}, "limit 'many'"),
    ],
)
def test_a_bad_query_is_said(
    query: dict[str, str], said: str, db: Path, client: TestClient
) -> None:
    _fill(db, 1)
    with pytest.raises(UsageError, match=said):
        list_query(query)
    answer = client.get("/api/runs", params=query)
    assert answer.status_code == 400
    assert said in answer.json()["error"]
    page = client.get("/", params=query)
    assert page.status_code == 400 and said.replace("'", "&#39;") in page.text


def test_a_cursor_that_names_no_run_is_refused(db: Path, client: TestClient) -> None:
    _fill(db, 2)
    answer = client.get("/api/runs", params={"after": "19990101-000000-000000"})
    assert answer.status_code == 404


def test_a_run_page_is_the_report_framed(db: Path, client: TestClient) -> None:
    from latdoc.features.diagnose import ShownDiagnosis, rediagnose

    with Store(db) as store:
        run_id = store.new_run(endpoint="https://api.example.com/v1", model="m",
                               scenario="chat", meta={})  # fmt: skip
        store.add_samples(run_id, run_samples())
        store.finish_run(run_id, status="done", diagnosis=None)
        report = ShownDiagnosis(rediagnose(store, run_id)).page()
    page = client.get(f"/runs/{run_id[:12]}")
    assert page.status_code == 200
    html = page.text
    assert '<nav class="serve"' in html and 'href="/"' in html
    # The report's own page, whole, inside the frame: its headline and its plots.
    title = report.split("<title>")[1].split("</title>")[0]
    assert f"<title>{title}</title>" in html
    assert html.count("<svg") == report.count("<svg") > 0
    assert "EventSource" not in html, "a finished run is not followed"
    document = client.get(f"/api/runs/{run_id}").json()
    assert document["run"]["run_id"] == run_id
    assert document["document"]["schema"].startswith("latdoc.diagnosis/")
    rows = client.get(f"/api/runs/{run_id}/rows", params={"limit": 5}).json()
    assert rows["schema"] == "latdoc-requests" and len(rows["rows"]) == 5
    assert rows["next_offset"] == 5 and rows["total"] == len(run_samples())
    tail = client.get(f"/api/runs/{run_id}/rows", params={"offset": 5, "limit": 1000}).json()
    assert tail["next_offset"] is None
    assert len(rows["rows"]) + len(tail["rows"]) == rows["total"]


def test_a_running_run_is_followed(db: Path, client: TestClient) -> None:
    with Store(db) as store:
        run_id = store.new_run(endpoint="https://api.example.com/v1", model="m",
                               scenario="chat", meta={})  # fmt: skip
        store.add_samples(run_id, run_samples()[:4])
        html = client.get(f"/runs/{run_id}").text
        assert f'data-live="/api/runs/{run_id}/events"' in html
        assert "EventSource" in html
        listed = client.get("/").text
        assert "live-dot" in listed


def test_an_unknown_run_is_a_page_and_a_json_error(db: Path, client: TestClient) -> None:
    _fill(db, 1)
    page = client.get("/runs/nope")
    assert page.status_code == 404 and "no run nope" in page.text
    assert "Traceback" not in page.text
    answer = client.get("/api/runs/nope")
    assert answer.status_code == 404 and answer.json()["error"].startswith("no run nope")
    assert client.get("/no/such/page").status_code == 404


def test_the_icon_a_browser_asks_for_is_no_error(db: Path, client: TestClient) -> None:
    _fill(db, 1)
    answer = client.get("/favicon.ico")
    assert answer.status_code == 204 and answer.content == b""


def test_a_store_that_cannot_be_read_is_503(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    import sqlite3

    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 200)
    for path in (foreign, garbage, tmp_path / "missing.db"):
        with TestClient(make_app(ServeOptions(str(path)))) as client:
            page = client.get("/")
            assert page.status_code == 503, path
            assert "Traceback" not in page.text
            assert client.get("/api/runs").json()["status"] == 503
    assert not (tmp_path / "missing.db").exists(), "serving creates no store"


def test_serving_never_writes_the_store(db: Path, client: TestClient) -> None:
    ids = _fill(db, 4)
    before = _digest(db)
    files = sorted(p.name for p in db.parent.iterdir())
    for path in ("/", f"/runs/{ids[0]}", "/api/runs", f"/api/runs/{ids[1]}",
                 f"/api/runs/{ids[1]}/rows"):  # fmt: skip
        assert client.get(path).status_code in (200, 404)
    assert _digest(db) == before
    # SQLite's own companions of a WAL file may appear for a reader; nothing is in them.
    companions = {"runs.db-wal", "runs.db-shm"}
    assert sorted(p.name for p in db.parent.iterdir() if p.name not in companions) == files
    wal = db.with_name("runs.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_the_token_is_asked_for_and_leaves_the_address_bar(db: Path) -> None:
    _fill(db, 1)
    app = make_app(ServeOptions(str(db), token="s3cret"))
    with TestClient(app) as client:
        refused = client.get("/api/runs")
        assert refused.status_code == 401 and "s3cret" not in refused.text
        assert client.get("/api/runs", headers={"Authorization": "Bearer nope"}).status_code == 401
        ok = client.get("/api/runs", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        first = client.get("/?token=s3cret&kind=load", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/?kind=load"
        assert client.get("/").status_code == 200, "the cookie carries it from then on"


def test_an_experiment_page_shows_both_arms_and_its_diagnosis(db: Path, client: TestClient) -> None:
    with Store(db, clock=Clock()) as store:
        diagnosis = store.new_run(endpoint="https://api.example.com/v1", model="m",
                                  scenario="chat", meta={})  # fmt: skip
        store.add_samples(diagnosis, run_samples())
        store.finish_run(diagnosis, status="done", diagnosis=None)
        arms = {}
        for arm in ("A", "B"):
            arms[arm] = store.new_run(
                endpoint="https://api.example.com/v1", model="m", scenario="", kind=VERIFY_KIND,
                meta={"experiment": "e1", "remedy": "prompt-cache", "arm": arm,
                      "arm_label": f"arm {arm}"},
            )  # fmt: skip
            store.add_samples(arms[arm], run_samples(failed=False))
            store.finish_run(arms[arm], status="done", diagnosis=None)
    page = client.get(f"/runs/{arms['B']}").text
    assert f"Proposed by the diagnosis {diagnosis}" in page
    assert "arm A" in page and "arm B" in page
    back = client.get(f"/runs/{diagnosis}").text
    assert f"Verified: prompt-cache ({arms['A']})" in back


def test_the_page_size_has_a_default_and_a_bound() -> None:
    assert list_query({}).limit == PAGE_SIZE
    with pytest.raises(UsageError):
        list_query({"limit": "100000"})


def test_an_experiment_is_tied_to_the_latest_diagnosis_of_its_target(db: Path) -> None:
    from latdoc.features.serve.analysis import related

    url, other = "https://api.example.com/v1", "https://gw.example.com/v1"
    with Store(db, clock=Clock()) as store:

        def run(kind: str, endpoint: str = url, **meta: str) -> str:
            run_id = store.new_run(endpoint=endpoint, model="m", scenario="", meta=meta, kind=kind)
            store.finish_run(run_id, status="done", diagnosis=None)
            return run_id

        first = run("diagnose")
        early = run(VERIFY_KIND, arm="A", remedy="r")
        run(VERIFY_KIND, arm="B", remedy="r")
        run(VERIFY_KIND, other, arm="A", remedy="r")
        second = run("diagnose")
        run("diagnose", other)
        late = run(VERIFY_KIND, arm="A", remedy="r")
        infos = {run_id: store.runs.run_info(run_id) for run_id in (first, second, early, late)}
        assert related(store, infos[first]).verified_by == (infos[early],)
        assert related(store, infos[second]).verified_by == (infos[late],)
        assert related(store, infos[late]).proposed_by == infos[second]
        assert related(store, infos[early]).proposed_by == infos[first]
        assert store.runs.endpoints() == [url, other], "the one used last first"


def test_the_list_speaks_chinese_when_asked(db: Path, client: TestClient) -> None:
    from latdoc.i18n import speaking

    ids = _fill(db, 2)
    with speaking("zh"):
        page = client.get("/").text
        missing = client.get("/runs/nope")
    assert "<h1>运行记录</h1>" in page and "显示 2 次运行中的 2 次" in page
    assert 'lang="zh"' in page and ids[0] in page
    assert "Runs, newest first" not in page and "Older" not in page
    assert "<h1>未找到</h1>" in missing.text
    assert "中没有运行 nope" in missing.text, "the error's message, said in Chinese too"
