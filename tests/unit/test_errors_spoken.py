"""Every error latdoc raises on purpose is said in the language spoken: its message is
marked for the catalogue where it is written (``Message("…", …)`` with values,
``N_("…")`` without), never a plain string or an f-string the ``Error:`` line can only
print in English; and a few real mistakes come out in Chinese under ``--lang zh``.

The :class:`~latdoc.errors.ProbeFault` family is left out: its message becomes a failed
request's :class:`~latdoc.errors.TraceError`, data stored as it is, not an ``Error:``
line."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

import latdoc.errors
from latdoc.cli import EXIT_USAGE, main

SOURCE = Path(latdoc.errors.__file__).parent

PACKAGES = (
    "advice",
    "analysis",
    "cli",
    "client",
    "errors.py",
    "features",
    "lab",
    "model",
    "pipeline",
    "pricing",
    "probe",
    "records",
    "report",
    "store",
    "workload",
)
"""What is scanned, under ``src/latdoc``: a package (every module in it) or a module."""


@pytest.fixture(scope="module")
def error_names() -> frozenset[str]:
    """The names of :class:`~latdoc.errors.LatdocError` and its subclasses: those of
    ``latdoc.errors``, and every class of latdoc's source whose base is one of them (the
    client's timeouts derive from them there), to a fixed point. Read once for the
    module's tests."""
    names = {
        name
        for name, value in inspect.getmembers(latdoc.errors, inspect.isclass)
        if issubclass(value, latdoc.errors.LatdocError)
    }
    classes = [
        node
        for path in SOURCE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    ]
    return _subtree(names, classes) - _subtree({"ProbeFault"}, classes)


def _subtree(names: set[str], classes: list[ast.ClassDef]) -> frozenset[str]:
    """``names`` and every class of ``classes`` derived from one of them, to a fixed
    point."""
    names = set(names)
    while True:
        more = {node.name for node in classes if any(_name(base) in names for base in node.bases)}
        if more <= names:
            return frozenset(names)
        names |= more


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _unspoken(node: ast.expr) -> bool:
    """A message made as English text where it is raised: a string, an f-string, or
    one built from strings by ``+``, ``%`` or ``.format``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _unspoken(node.left) or _unspoken(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "format" and _unspoken(node.func.value)
    return False


def _modules() -> Iterator[Path]:
    for name in PACKAGES:
        path = SOURCE / name
        yield from [path] if path.is_file() else sorted(path.rglob("*.py"))


def _unspoken_raises(source: str, errors: frozenset[str]) -> list[int]:
    """The lines of ``source`` that raise one of ``errors`` with an unmarked message."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and _name(node.exc.func) in errors
        and node.exc.args
        and _unspoken(node.exc.args[0])
    ]


def test_the_scan_finds_each_way_of_raising_english() -> None:
    source = (
        "raise UsageError('a constant')\n"
        "raise errors.UsageError(f'an {f}-string')\n"
        "raise StreamStalled('joined ' + text)\n"
        "raise UsageError('%s formatted' % text)\n"
        "raise UsageError('{} formatted'.format(text))\n"
        "raise UsageError(N_('marked'))\n"
        "raise UsageError(Message('marked {x}', x=x))\n"
        "raise UsageError(message)\n"
        "raise ValueError('not latdoc')\n"
    )
    errors = frozenset({"UsageError", "StreamStalled"})
    assert _unspoken_raises(source, errors) == [1, 2, 3, 4, 5]


def test_the_error_tree_is_known_by_name(error_names: frozenset[str]) -> None:
    assert {"UsageError", "RequestFailed", "PolicyError", "StreamStalled"} <= error_names
    assert "ValueError" not in error_names
    assert "SSEError" not in error_names, "a probe fault is a failed request's data"


def test_every_error_raised_is_marked_for_the_catalogue(error_names: frozenset[str]) -> None:
    unspoken = [
        f"{path.relative_to(SOURCE)}:{line}"
        for path in _modules()
        for line in _unspoken_raises(path.read_text(encoding="utf-8"), error_names)
    ]
    assert unspoken == [], "mark each message: Message('…', name=value) or N_('…')"


@pytest.fixture(autouse=True)
def _no_language(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LATDOC_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)


def _said(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``argv`` prints, in Chinese (``LATDOC_LANG``: not every command takes
    ``--lang``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LATDOC_LANG", "zh")
        assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    return err


def test_a_bad_plan_is_said_in_chinese(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text("[endpont]\n", encoding="utf-8")
    said = _said(["run", str(plan)], capsys)
    assert said == f"错误：{plan}：未知的表或键 endpont：计划文件只有 [endpoint] 和 [[steps]]"


def test_a_step_of_a_plan_is_said_in_chinese_to_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[endpoint]\nurl = "http://127.0.0.1:9/v1"\n\n[[steps]]\ncommand = "probe"\nrequestz = 3\n',
        encoding="utf-8",
    )
    said = _said(["run", str(plan), "--db", str(tmp_path / "s.db")], capsys)
    assert said.startswith(f"错误：{plan}：第 1 步（probe）：没有名为 requestz 的选项（")
    assert said.endswith("？）")


def test_priorities_leaving_a_corner_out_keep_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    said = _said(["diagnose", "--priorities", "latency"], capsys)
    assert said.startswith("错误：--priorities 漏掉了 cost 和 quality：请按顺序给出三个角")


def test_a_flag_s_value_is_said_in_chinese_with_argparse_s_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = _said(["diagnose", "--max-cost", "abc"], capsys)
    assert said == "错误：参数 --max-cost：不是数字：'abc'"


def test_an_import_of_what_is_not_json_is_said_in_chinese(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "requests.jsonl"
    export.write_text("not json\n", encoding="utf-8")
    said = _said(["import", str(export), "--db", str(tmp_path / "s.db")], capsys)
    assert said.startswith(f"错误：{export}:1：JSON 无效（")
