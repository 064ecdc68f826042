"""The public namespace: everything in ``__all__`` exists, is sorted, and nothing is missing."""

from __future__ import annotations

import subprocess
import sys

import latdoc


def test_all_is_sorted_and_resolvable() -> None:
    assert latdoc.__all__ == sorted(latdoc.__all__)
    for name in latdoc.__all__:
        assert hasattr(latdoc, name), name


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
        "assert 'latdoc.lab' not in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    assert out.stderr == ""
