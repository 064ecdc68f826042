"""Every kind of run the store keeps has one entry in the registry of run kinds, and no
module names a kind by a string of its own.

The store accepts a run's ``kind`` only from :data:`latdoc.store.RUN_KINDS`, where each
name is written once; the registry (:data:`latdoc.features.report.RUN_KINDS`) pairs each
with the document its runs keep and how ``latdoc report`` and a page show one again. A
kind passed as ``kind="load"`` or compared as ``info.kind == "load"`` elsewhere would be
a second spelling of the stored name, which this test finds in the source.
"""

from __future__ import annotations

import ast
from pathlib import Path

import latdoc
from latdoc.features.report import RUN_KINDS, run_kind
from latdoc.store import RUN_KINDS as STORED_KINDS

SRC = Path(latdoc.__file__).parent
HOME = SRC / "store" / "run.py"


def test_each_stored_kind_has_one_entry() -> None:
    names = [kind.name for kind in RUN_KINDS]
    assert len(names) == len(set(names))
    assert set(names) == STORED_KINDS
    for name in names:
        assert run_kind(name).name == name


def test_a_kind_document_is_a_latdoc_schema() -> None:
    for kind in RUN_KINDS:
        assert kind.document is None or kind.document.startswith("latdoc.")


def _kind_literals(tree: ast.AST) -> list[int]:
    """Lines where a string of a stored kind is passed or taken as ``kind``, or compared
    with a ``.kind``."""
    lines: list[int] = []

    def stored(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in STORED_KINDS

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "kind" and stored(node.value):
            lines.append(node.value.lineno)
        elif isinstance(node, ast.arguments):
            named = [*node.posonlyargs, *node.args]
            defaulted = named[len(named) - len(node.defaults) :]
            for arg, default in zip(defaulted, node.defaults, strict=True):
                if arg.arg == "kind" and stored(default):
                    lines.append(default.lineno)
            for arg, kw_default in zip(node.kwonlyargs, node.kw_defaults, strict=True):
                if arg.arg == "kind" and stored(kw_default):
                    lines.append(arg.lineno)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides) and any(
                stored(s) for s in sides
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.AnnAssign | ast.Assign) and stored(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.endswith("KIND") for t in targets):
                lines.append(node.lineno)
    return lines


def test_no_module_but_the_store_spells_a_kind() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if path != HOME
        for line in _kind_literals(ast.parse(path.read_text(), str(path)))
    ]
    assert found == []


def test_the_store_spells_each_kind_once() -> None:
    text = HOME.read_text()
    for name in STORED_KINDS:
        assert text.count(f'"{name}"') == 1, name
