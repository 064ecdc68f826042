"""The public namespace: everything in ``__all__`` exists, is sorted, and nothing is missing."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import latdoc

FACES = (
    "latdoc",
    "latdoc.client",
    "latdoc.model",
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


def test_python_dash_m_latdoc_is_the_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "latdoc", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"latdoc {latdoc.__version__}"


def test_every_public_name_is_exported() -> None:
    public = {
        name
        for name, value in vars(latdoc).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("latdoc")
    }
    assert public <= set(latdoc.__all__)


def test_import_has_no_side_effects() -> None:
    code = (
        "import sys, threading; import latdoc; "
        "assert threading.active_count() == 1; "
        "assert not [m for m in sys.modules if m.startswith('latdoc.lab')]; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    assert out.stderr == ""
