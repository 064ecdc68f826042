"""The public namespace: everything in ``__all__`` exists, is sorted, and nothing is missing;
importing it is cheap and loads no heavy library."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

import latdoc


def test_python_dash_m_latdoc_is_the_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "latdoc", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"latdoc {latdoc.__version__}"


def test_import_has_no_side_effects() -> None:
    code = (
        "import sys, threading; import latdoc; "
        "assert threading.active_count() == 1; "
        "assert not [m for m in sys.modules if m.startswith('latdoc.lab')]; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    assert out.stderr == ""


HEAVY = (
    "dnslib",
    "httpcore",
    "httpx",
    "hypercorn",
    "jinja2",
    "matplotlib",
    "numpy",
    "rich",
    "scipy",
    "starlette",
    "trustme",
    "uvicorn",
)


"""Libraries that load when a command or a public name first needs them, never before."""


def _modules_after(code: str) -> tuple[str, set[str]]:
    """What ``code`` printed, and the top-level packages loaded when it was done."""
    code = f"import sys\n{code}\nprint(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *printed, modules = out.stdout.splitlines()
    return "\n".join(printed), {name.partition(".")[0] for name in ast.literal_eval(modules)}


def test_import_latdoc_loads_no_heavy_library() -> None:
    _, loaded = _modules_after("import latdoc")
    assert not loaded & set(HEAVY)


@pytest.mark.parametrize(("flag", "says"), [("--version", "latdoc "), ("--help", "usage: latdoc")])
def test_version_and_help_load_no_heavy_library(flag: str, says: str) -> None:
    printed, loaded = _modules_after(
        f"from latdoc.cli import main\ntry:\n    main([{flag!r}])\nexcept SystemExit:\n    pass"
    )
    assert printed.startswith(says)
    assert not loaded & set(HEAVY)
