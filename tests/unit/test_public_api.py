"""The public path: every verb and renderer used as ``latdoc.NAME`` against the lab, and
every public name with a docstring of its own and a test that reaches it that way."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import latdoc
from paths import TESTS

FACES = (
    "latdoc",
    "latdoc.advice",
    "latdoc.analysis",
    "latdoc.client",
    "latdoc.features.compare",
    "latdoc.features.diagnose",
    "latdoc.features.export",
    "latdoc.features.load",
    "latdoc.features.probe",
    "latdoc.features.run",
    "latdoc.features.system",
    "latdoc.features.vantage",
    "latdoc.features.verify",
    "latdoc.features.watch",
    "latdoc.model",
    "latdoc.pipeline",
    "latdoc.pricing",
    "latdoc.reference",
    "latdoc.report",
)


@pytest.mark.parametrize("face", FACES)
def test_every_public_class_and_function_says_what_it_is(face: str) -> None:
    module = importlib.import_module(face)
    missing = []
    for name in module.__all__:
        value = getattr(module, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        doc = value.__doc__ or ""
        # A dataclass without a docstring gets its signature as one: that says nothing.
        if not doc.strip() or (inspect.isclass(value) and doc.startswith(f"{name}(")):
            missing.append(name)
    assert not missing, f"{face}: no docstring for {', '.join(missing)}"


def test_every_root_name_is_reached_through_the_public_path_by_some_test() -> None:
    """Through ``latdoc`` itself, or ``latdoc.client``, the production half's own face."""
    uses: set[str] = set()
    for path in TESTS.rglob("test_*.py"):
        text = path.read_text()
        uses.update(re.findall(r"\blatdoc\.(?:client\.)?([A-Za-z_][A-Za-z0-9_]*)\b", text))
        for block in re.findall(
            r"^\s*from latdoc(?:\.client)? import (\([^)]*\)|[^\n]*)$", text, re.M
        ):
            uses.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", block))
    unreached = sorted(set(latdoc.__all__) - uses)
    assert not unreached, f"no test reaches latdoc.{', latdoc.'.join(unreached)}"


def test_the_exception_tree_is_the_one_its_docstring_draws() -> None:
    import latdoc.client
    import latdoc.errors

    drawn = [
        (len(m.group(1)) // 4, m.group(2))
        for m in re.finditer(r"^    ((?:[│ ]   |[├└]── )*)(\w+)", latdoc.errors.__doc__ or "", re.M)
        if m.group(2)[0].isupper()
    ]
    assert drawn[0] == (0, "LatdocError") and len(drawn) > 15
    parents: dict[int, type] = {}
    checked = 0
    for depth, name in drawn:
        source = latdoc if name in latdoc.__all__ else latdoc.client
        cls = getattr(source, name, None) or getattr(latdoc.errors, name)
        if depth:
            assert issubclass(cls, parents[depth - 1]), f"{name} under {parents[depth - 1]}"
            checked += 1
        parents[depth] = cls
    assert checked == len(drawn) - 1


def test_the_public_exceptions_are_caught_as_they_say() -> None:
    import httpx

    # An application that handles httpx's errors, or latdoc's client errors, handles them.
    assert issubclass(latdoc.TotalTimeout, latdoc.ClientTimeout)
    assert issubclass(latdoc.TotalTimeout, httpx.ReadTimeout)
    assert issubclass(latdoc.StreamTruncated, latdoc.ClientStreamError)
    assert issubclass(latdoc.StreamTruncated, httpx.RemoteProtocolError)
    assert issubclass(latdoc.ClientStreamError, latdoc.ClientError)
    assert issubclass(latdoc.CalibrationError, latdoc.LatdocError)
    error = latdoc.TraceError(latdoc.ErrorKind.CONNECT, latdoc.Phase.CONNECT, "refused")
    failed = latdoc.RequestFailed(error)
    assert failed.error is error and "refused" in str(failed)
