"""The public namespace: everything in ``__all__`` exists, is sorted, and nothing is missing;
importing it is cheap and loads no heavy library."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

import latdoc

FACES = (
    "latdoc",
    "latdoc.client",
    "latdoc.model",
    "latdoc.pricing",
    "latdoc.probe",
    "latdoc.workload",
    "latdoc.store",
    "latdoc.cli",
)


"""Packages whose ``__init__`` is the public face of private modules behind it."""


@pytest.mark.parametrize("name", FACES)
def test_all_is_sorted_and_resolvable(name: str) -> None:
    package = importlib.import_module(name)
    assert package.__all__ == sorted(package.__all__, key=_isort_order)
    for member in package.__all__:
        assert hasattr(package, member), f"{name}.{member}"


def _isort_order(name: str) -> tuple[int, str]:
    """Constants, then classes, then the rest, each alphabetically (as ruff sorts)."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_every_public_name_is_exported() -> None:
    public = {
        name
        for name, value in vars(latdoc).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("latdoc")
    }
    assert public <= set(latdoc.__all__)


def test_each_name_is_imported_lazily_from_the_module_type_checkers_see() -> None:
    """``_EXPORTS`` (what runs) and the ``TYPE_CHECKING`` imports (what mypy reads) agree."""
    tree = ast.parse(inspect.getsource(latdoc))
    checked = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    seen = {
        (node.module, alias.name)
        for node in checked.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    lazy = {(module, name) for module, names in latdoc._EXPORTS.items() for name in names}
    assert seen == lazy
    assert {name for _, name in lazy} | {"__version__"} == set(latdoc.__all__)
    assert set(latdoc.__all__) <= set(dir(latdoc))
    for module, name in lazy:
        assert getattr(latdoc, name) is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = latdoc.not_a_name  # type: ignore[attr-defined]
