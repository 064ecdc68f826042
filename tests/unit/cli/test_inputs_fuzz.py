"""The other things latdoc reads end in one ``Error:`` line and exit 2 when malformed
(``tests/unit/workload/test_otlp_fuzz.py`` has OTLP files): ``--extra-body`` JSON (truncated, nested
past Python's limit, non-finite or huge numbers, text that is not Unicode),
``--cacert`` files (empty, a directory; ``tests/unit/probe/test_probe.py`` has truncated
and binary ones), run exports
(``Store.import_json``: keys deleted, values of other types), and every file read as
JSON or TOML nested deeper than Python's parsers recurse (``latdoc import``,
``Store.import_json``, ``load --trace`` in each format, ``latdoc run``'s plan): one
line saying it is nested too deeply. Hypothesis draws the malformed ones."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latdoc import Store
from latdoc.cli import EXIT_USAGE, main
from latdoc.errors import UsageError
from latdoc.probe import parse_extra_body
from paths import DATA
from unit.workload.test_otlp_fuzz import JSON_VALUES, parent_of, paths_in

_GOOD = json.dumps({"temperature": 0, "ignore_eos": True, "top_k": [1, 2.5, "x"]})


def _error_line(argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    lines = err.getvalue().splitlines()
    assert code == EXIT_USAGE and len(lines) == 1 and lines[0].startswith("Error: "), lines
    return lines[0]


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.text(max_size=30),
        st.integers(0, len(_GOOD) - 1).map(lambda n: _GOOD[:n]),
        st.builds(
            lambda at, junk: _GOOD[:at] + junk + _GOOD[at:],
            st.integers(0, len(_GOOD)),
            st.sampled_from(["NaN", "1e999", "-Infinity", "\ud800", "\udcff", "9" * 5000, "["]),
        ),
    )
)
def test_extra_body_is_an_object_or_a_one_line_refusal(text: str) -> None:
    refusal = ""
    try:
        value = parse_extra_body(text)
    except UsageError as exc:
        refusal = str(exc)
    if refusal:
        assert "\n" not in refusal
    else:
        assert isinstance(value, dict)
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"a": 1e999}', "1e999 is not a finite number"),
        ('{"a": NaN}', "NaN is not a JSON value"),
        ('{"a": "\\ud800"}', "not Unicode"),
        ('{"a": ' + "9" * 5000 + "}", "not valid JSON"),
    ],
    ids=["deep", "infinite", "nan", "surrogate", "huge"],
)
def test_a_malformed_extra_body_is_one_error_line(body: str, message: str) -> None:
    line = _error_line(["probe", "http://127.0.0.1:9/v1", "-m", "x", "--extra-body", body])
    assert "--extra-body" in line and message in line


def test_a_ca_file_that_cannot_be_used_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "empty.pem").write_bytes(b"")
    (tmp_path / "dir.pem").mkdir()
    base = ["probe", "https://127.0.0.1:9/v1", "-m", "x", "-n", "1", "--db", ":memory:"]
    for name, message in (("empty.pem", "cannot load CA certificates"), ("dir.pem", "not a file")):
        line = _error_line([*base, "--cacert", str(tmp_path / name)])
        assert message in line and name in line


@pytest.fixture(scope="module")
def export() -> str:
    """A run export: the spans of ``tests/data/otlp_openai_v2.json`` diagnosed and stored."""
    otlp = DATA / "otlp_openai_v2.json"
    with tempfile.TemporaryDirectory() as directory:
        db = f"{directory}/s.db"
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["diagnose", "--from-otlp", str(otlp), "--db", db, "--json"]) == 0
        with Store(db) as store:
            (info,) = store.list_runs()
            return store.export_json(info.run_id)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_a_mutated_export_is_imported_or_refused(export: str, data: st.DataObject) -> None:
    document = json.loads(export)
    places = paths_in(document)[1:]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(places))
        with contextlib.suppress(KeyError, IndexError, TypeError):
            parent = parent_of(document, path)
            if data.draw(st.booleans()) and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = data.draw(JSON_VALUES)
    refusal = ""
    with Store(":memory:") as store:
        try:
            run_id = store.import_json(json.dumps(document))
        except UsageError as exc:
            refusal = str(exc)
        else:
            store.load_run(run_id)
    assert "\n" not in refusal


def test_a_broken_export_names_the_sample_and_the_field(export: str) -> None:
    document = json.loads(export)
    del document["samples"][2]["trace"]["started_at"]
    with (
        Store(":memory:") as store,
        pytest.raises(UsageError, match=r"samples\[2\]: trace: missing"),
    ):
        store.import_json(json.dumps(document))
    del document["run"]
    with Store(":memory:") as store, pytest.raises(UsageError, match="missing 'run'"):
        store.import_json(json.dumps(document))


_DEEP = "@deep@"


"""Stands in a document for a value nested ``depth`` lists deep, spliced into its text
(building the value itself would recurse as deep)."""


DEPTHS = st.sampled_from([100_000, 5000]) | st.integers(300, 1100)


"""Past every parser's limit, and around the depth (about 1000 for JSON, with the stack
already in use) where parsing stops and what reads the parsed value (the store's
redaction, the codecs) would start to recurse too deeply."""


def _nested(text: str, depth: int) -> str:
    return text.replace(json.dumps(_DEEP), "[" * depth + "]" * depth)


def _assert_read_or_refused_as_too_deep(refusal: str, depth: int) -> None:
    assert "\n" not in refusal
    if depth >= 5000:
        assert "nested too deeply" in refusal, refusal


def _main(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    lines = err.getvalue().splitlines()
    if code != 0:
        assert code == EXIT_USAGE and len(lines) == 1 and lines[0].startswith("Error: "), lines
    return code, lines[0] if code else ""


@pytest.fixture(scope="module")
def export_lines(export: str) -> list[str]:
    """The same run as ``latdoc export --format jsonl`` writes it, a line each."""
    with tempfile.TemporaryDirectory() as directory, Store(f"{directory}/s.db") as store:
        run_id = store.import_json(export)
        out = Path(directory, "run.jsonl")
        with contextlib.redirect_stderr(io.StringIO()):
            assert main(["export", run_id, "--db", store.path, "-o", str(out)]) == 0
        return out.read_text().splitlines()


@settings(max_examples=40, deadline=None)
@given(depth=DEPTHS, data=st.data())
def test_latdoc_import_of_a_deeply_nested_line_is_one_error_line(
    export_lines: list[str], depth: int, data: st.DataObject
) -> None:
    number = data.draw(st.integers(0, len(export_lines) - 1))
    document = json.loads(export_lines[number])
    path = data.draw(st.sampled_from(paths_in(document)[1:]))
    parent_of(document, path)[path[-1]] = _DEEP
    lines = [
        *export_lines[:number],
        _nested(json.dumps(document), depth),
        *export_lines[number + 1 :],
    ]
    with tempfile.TemporaryDirectory() as directory:
        file = Path(directory, "run.jsonl")
        file.write_text("\n".join(lines) + "\n")
        _, refusal = _main(["import", str(file), "--db", f"{directory}/s.db"])
    _assert_read_or_refused_as_too_deep(refusal, depth)
    if depth >= 5000:
        assert f"run.jsonl:{number + 1}: nested too deeply" in refusal


@settings(max_examples=40, deadline=None)
@given(depth=DEPTHS, data=st.data())
def test_a_deeply_nested_export_is_imported_or_refused(
    export: str, depth: int, data: st.DataObject
) -> None:
    document = json.loads(export)
    path = data.draw(st.sampled_from(paths_in(document)[1:]))
    parent_of(document, path)[path[-1]] = _DEEP
    refusal = ""
    with Store(":memory:") as store:
        try:
            store.import_json(_nested(json.dumps(document), depth))
        except UsageError as exc:
            refusal = str(exc)
    _assert_read_or_refused_as_too_deep(refusal, depth)


_TRACES = {
    "mooncake": '{"timestamp": 31, "input_length": 17, "output_length": 16, "hash_ids": [1, 2]}',
    "sharegpt": json.dumps(
        {
            "id": "a",
            "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}],
        }
    ),
}


"""A line of each JSON trace format (a ShareGPT file is also read as one JSON array)."""


@settings(max_examples=60, deadline=None)
@given(depth=DEPTHS, data=st.data())
def test_a_deeply_nested_trace_is_replayed_or_refused(depth: int, data: st.DataObject) -> None:
    from latdoc.workload.traces import open_trace

    fmt = data.draw(st.sampled_from(sorted(_TRACES)))
    document = json.loads(_TRACES[fmt])
    path = data.draw(st.sampled_from(paths_in(document)))
    if path:
        parent_of(document, path)[path[-1]] = _DEEP
    else:
        document = _DEEP
    line = _nested(json.dumps(document), depth)
    array = fmt == "sharegpt" and data.draw(st.booleans())
    named = data.draw(st.sampled_from([fmt, None]))
    refusal = ""
    with tempfile.TemporaryDirectory() as directory:
        file = Path(directory, "trace.jsonl")
        file.write_text(f"[{_TRACES[fmt]},\n{line}]\n" if array else f"{_TRACES[fmt]}\n{line}\n")
        try:
            list(open_trace(file, named))
        except UsageError as exc:
            refusal = str(exc)
    # A ShareGPT array's element that is not an object is refused as such, deep or not.
    _assert_read_or_refused_as_too_deep(refusal, depth if path or not array else 0)
    if depth >= 5000 and not array:
        assert refusal.endswith("trace.jsonl:2: nested too deeply"), refusal


def test_load_of_a_deeply_nested_trace_is_one_error_line(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    for fmt in ("mooncake", "latdoc", "sharegpt"):
        line = _error_line(
            ["load", "http://127.0.0.1:9/v1", "-m", "x", "--trace", str(trace),
             "--trace-format", fmt, "--db", ":memory:"]
        )  # fmt: skip
        assert line.startswith(f"Error: {trace}:1: ")
    trace.write_text('{"conversations": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    line = _error_line(["load", "http://127.0.0.1:9/v1", "-m", "x", "--trace", str(trace)])
    assert line == f"Error: {trace}:1: nested too deeply"


_PLAN = """[endpoint]
url = "http://127.0.0.1:9/v1"
model = "m"
extra-body = {top_k = 1}

[[steps]]
command = "probe"
repeat = 2
"""


@settings(max_examples=40, deadline=None)
@given(
    depth=st.sampled_from([5000, 1000]) | st.integers(1, 600),
    where=st.sampled_from(["model", "extra-body", "repeat", "new"]),
    inline=st.booleans(),
)
def test_a_deeply_nested_plan_is_one_error_line(depth: int, where: str, inline: bool) -> None:
    value = "{a = " * depth + "1" + "}" * depth if inline else "[" * depth + "]" * depth
    lines = _PLAN.splitlines()
    if where == "new":
        lines.append(f"deep = {value}")
    else:
        lines = [f"{where} = {value}" if line.startswith(f"{where} =") else line for line in lines]
    with tempfile.TemporaryDirectory() as directory:
        plan = Path(directory, "plan.toml")
        plan.write_text("\n".join(lines) + "\n")
        _, refusal = _main(["run", str(plan), "--dry-run"])
    if depth >= 1000:
        assert refusal == f"Error: {plan}: nested too deeply", refusal


def test_an_export_holding_a_lone_surrogate_is_refused_and_nothing_kept(export: str) -> None:
    """JSON reads ``\\ud800`` as a lone surrogate, which no store can write: found by the
    mutated-export fuzzing as a UnicodeEncodeError out of SQLite."""
    document = json.loads(export)
    document["run"]["endpoint"] = "\ud800"
    with Store(":memory:") as store:
        with pytest.raises(UsageError, match="a lone surrogate"):
            store.import_json(json.dumps(document))
        assert store.list_runs() == []
