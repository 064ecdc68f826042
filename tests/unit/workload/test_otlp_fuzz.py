"""Every file ``latdoc diagnose --from-otlp`` reads ends in a diagnosis or in one
``Error:`` line naming the file and the place in it, exit 2: never a traceback.

The malformed files are mutations of a valid OTLP export (keys deleted, values of
other types, huge numbers, truncated bytes, bytes that are not UTF-8), drawn by
hypothesis; a few named ones pin the message for the faults users met.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.workload.otlp import read_otlp
from paths import DATA


def _valid() -> Any:
    """The openai-v2 instrumentation's spans, the first with a first-token event and the
    second with latdoc's own phase attributes, so mutations reach every field read."""
    document = json.loads((DATA / "otlp_openai_v2.json").read_text())
    first, second = document["resourceSpans"][0]["scopeSpans"][0]["spans"][:2]
    start = int(first["startTimeUnixNano"])
    first["events"] = [{"name": "gen_ai.first_token", "timeUnixNano": str(start + 250_000_000)}]
    second["attributes"] += [
        {"key": f"latdoc.{name}_ms", "value": {"doubleValue": ms}}
        for name, ms in (("queue", 0.1), ("dns", 2.0), ("connect", 11.5), ("tls", 24.0),
                         ("ttfb", 180.0), ("wait", 140.0), ("ttft", 260.0))
    ]  # fmt: skip
    second["attributes"].append({"key": "latdoc.new_connection", "value": {"boolValue": True}})
    return document


VALID = _valid()


NAME = "spans.json"


Path_ = tuple[str | int, ...]


def paths_in(value: Any, path: Path_ = ()) -> list[Path_]:
    found = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths_in(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths_in(child, (*path, index))
    return found


PATHS = paths_in(VALID)[1:]


"""Every place in the valid document but the document itself."""


def _diagnose(data: bytes, out: io.StringIO | None = None) -> tuple[int, str]:
    """``latdoc diagnose --from-otlp`` on a file holding ``data``: the exit code and stderr
    (stdout into ``out``)."""
    with tempfile.TemporaryDirectory() as directory:
        file = Path(directory, NAME)
        file.write_bytes(data)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out or io.StringIO()):
            code = main(
                ["diagnose", "--from-otlp", str(file), "--db", f"{directory}/s.db", "--json"]
            )
    return code, err.getvalue()


def _assert_one_line_error(code: int, err: str) -> None:
    assert code in (EXIT_OK, EXIT_USAGE), err
    if code == EXIT_USAGE:
        lines = err.splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("Error: ") and NAME in lines[0], err


def parent_of(document: Any, path: Path_) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["", "-", "1e400", "NaN", "Infinity", "１２", "²", "9" * 30, "\ud800"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


"""Values of every JSON type, huge and odd ones among them (lone surrogates, digits
that are not ASCII, numbers past 64 bits)."""


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    document = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        try:
            parent = parent_of(document, path)
            if draw(st.booleans()) and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    indent = draw(st.sampled_from([None, 1]))
    text = json.dumps(document, indent=indent).encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none", "truncate", "bytes"]))
    if damage == "truncate":
        text = text[: draw(st.integers(0, len(text) - 1))]
    elif damage == "bytes":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.binary(min_size=1, max_size=4)) + text[at:]
    return text


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_mutated())
def test_a_mutated_otlp_file_is_diagnosed_or_refused_in_one_line(data: bytes) -> None:
    _assert_one_line_error(*_diagnose(data))


def _set(path: Path_, value: Any) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        parent_of(document, path)[path[-1]] = value

    return change


def _delete(path: Path_) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        del parent_of(document, path)[path[-1]]

    return change


SPAN: Path_ = ("resourceSpans", 0, "scopeSpans", 0, "spans", 0)


WHERE = "resourceSpans[0].scopeSpans[0].spans[0]"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_delete((*SPAN, "startTimeUnixNano")), f"{WHERE}.startTimeUnixNano: missing"),
        (_set(("resourceSpans", 0), "x"), 'resourceSpans[0]: expected an object, got "x"'),
        (
            _set((*SPAN, "attributes", 4, "value"), {"intValue": "443x"}),
            f'{WHERE}.attributes[4].value.intValue: expected a whole number, got "443x"',
        ),
        (
            _set((*SPAN, "endTimeUnixNano"), "1"),
            f"{WHERE}.endTimeUnixNano: 1 is out of range",
        ),
        (
            _set((*SPAN, "startTimeUnixNano"), 10**30),
            f"{WHERE}.startTimeUnixNano: {10**30} is out of range",
        ),
        (_set(("resourceSpans",), {}), "resourceSpans: expected a list, got {}"),
    ],
    ids=["no-start", "entry-not-object", "bad-intValue", "ends-before-start", "huge", "not-list"],
)
def test_a_malformed_span_names_the_file_and_the_place(
    change: Callable[[Any], None], message: str
) -> None:
    document = copy.deepcopy(VALID)
    change(document)
    code, err = _diagnose(json.dumps(document).encode())
    assert code == EXIT_USAGE
    assert err.startswith("Error: ") and f"{NAME}: {message}" in err, err
    assert len(err.splitlines()) == 1


def test_a_file_that_is_not_utf8_names_the_byte() -> None:
    text = json.dumps(VALID).encode()
    code, err = _diagnose(text[:100] + b"\xff\xfe" + text[100:])
    assert (code, err.strip()) == (EXIT_USAGE, f"Error: {_name_in(err)}: not UTF-8 text (byte 100)")


def _name_in(err: str) -> str:
    return err.removeprefix("Error: ").split(": ", 1)[0]


def test_truncated_and_deeply_nested_files_are_not_json() -> None:
    text = json.dumps(VALID).encode()
    for data in (text[: len(text) // 2], b"[" * 100_000, b""):
        code, err = _diagnose(data)
        _assert_one_line_error(code, err)
        assert code == EXIT_USAGE


def test_one_document_a_line_names_the_line() -> None:
    line = json.dumps(VALID).encode()
    out = io.StringIO()
    assert _diagnose(line + b"\n" + line + b"\n", out)[0] == EXIT_OK
    assert json.loads(out.getvalue())["findings"]
    code, err = _diagnose(line + b"\n" + line[:-1] + b"\n")
    assert code == EXIT_USAGE and f"{NAME}:2: not JSON" in err and len(err.splitlines()) == 1
    broken = copy.deepcopy(VALID)
    _delete((*SPAN, "endTimeUnixNano"))(broken)
    code, err = _diagnose(line + b"\n" + json.dumps(broken).encode())
    assert f"{NAME}:2: {WHERE}.endTimeUnixNano: missing" in err


def test_the_valid_file_still_diagnoses() -> None:
    out = io.StringIO()
    code, err = _diagnose(json.dumps(VALID).encode(), out)
    assert code == EXIT_OK and "Error" not in err
    report = json.loads(out.getvalue())
    assert report["findings"] and "carry no time to first chunk" in json.dumps(report["notes"])
    traffic = read_otlp(json.dumps(VALID))
    by_start = {t.t0_ns: t for t in traffic.traces}
    spans = VALID["resourceSpans"][0]["scopeSpans"][0]["spans"]
    first, second = (by_start[int(span["startTimeUnixNano"])] for span in spans[:2])
    assert first.ttft_ms == 250.0 and first.dns_ms is None
    assert (second.ttft_ms, second.dns_ms, second.tls_ms) == (260.0, 2.0, 24.0)
    assert second.new_connection is True


_DEEP = "@deep@"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(PATHS),
    depth=st.sampled_from([100_000, 5000]) | st.integers(300, 1100),
    lines=st.booleans(),
)
def test_a_deeply_nested_value_anywhere_is_diagnosed_or_refused_in_one_line(
    path: Path_, depth: int, lines: bool
) -> None:
    """Nested past Python's parser (or nearly so, for what reads the parsed spans): one
    line saying so, naming the file (and the line of a file with a document a line)."""
    document = copy.deepcopy(VALID)
    _set(path, _DEEP)(document)
    deep = json.dumps(document).replace(json.dumps(_DEEP), "[" * depth + "]" * depth)
    data = f"{json.dumps(VALID)}\n{deep}\n" if lines else deep
    code, err = _diagnose(data.encode())
    _assert_one_line_error(code, err)
    if depth >= 5000:
        assert err.strip().endswith(f"/{NAME}{':2' if lines else ''}: nested too deeply"), err
