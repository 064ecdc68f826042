"""The lab is an optional extra: without its packages the core still runs, and the
built-in endpoint and ``latdoc lab`` say in one line how to install them.

Each case runs ``latdoc`` in a child process where a meta path finder makes the
named packages impossible to import, as they are when the extra is not installed.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import closed_port


def _lab_extra() -> tuple[str, ...]:
    """The packages of the ``lab`` extra, as the installed distribution declares them."""
    requires = importlib.metadata.requires("llm-latency-doctor") or []
    name = re.compile(r"[A-Za-z0-9_.-]+")
    return tuple(
        m.group(0).lower() for r in requires if 'extra == "lab"' in r and (m := name.match(r))
    )


LAB_PACKAGES = _lab_extra()

WITHOUT = """
import sys
from importlib.abc import MetaPathFinder


class NotInstalled(MetaPathFinder):
    def __init__(self, names):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


sys.meta_path.insert(0, NotInstalled(set(sys.argv[1].split(","))))
from latdoc.cli import main

sys.exit(main(sys.argv[2:]))
"""


"""``python -c WITHOUT a,b ARGS...``: ``latdoc ARGS...`` as if packages a and b were missing."""


INSTALL = "pip install 'llm-latency-doctor[lab]'"


def _latdoc_without(missing: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, missing, *args],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("missing", "command"),
    [
        ("uvicorn", ["diagnose", "--max-seconds", "5"]),
        ("starlette,uvicorn", ["diagnose", "--max-seconds", "5"]),
        (",".join(LAB_PACKAGES), ["probe", "--max-tokens", "2"]),
        ("uvicorn", ["lab", "serve", "--port", "0"]),
        ("trustme", ["lab", "serve", "--port", "0", "--help"]),
    ],
)
def test_the_built_in_endpoint_and_the_lab_say_how_to_install_it(
    missing: str, command: list[str], tmp_path: Path
) -> None:
    if command[0] != "lab":
        command = [*command, "--db", str(tmp_path / "runs.db")]
    result = _latdoc_without(missing, *command)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and INSTALL in line, line
    assert all(name in line for name in missing.split(",")), line
    assert not (tmp_path / "runs.db").exists()


def test_an_endpoint_of_ones_own_needs_no_lab(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    db = str(tmp_path / "runs.db")
    result = _latdoc_without(
        ",".join(LAB_PACKAGES), "diagnose", url, "--model", "m", "--max-seconds", "5", "--db", db
    )
    assert result.returncode in (0, 1), result.stderr
    assert "[lab]" not in result.stderr and "Traceback" not in result.stderr
    assert "Verdict: Errors" in result.stdout and (tmp_path / "runs.db").exists()


def test_help_lists_the_lab_without_it() -> None:
    result = _latdoc_without(",".join(LAB_PACKAGES), "--help")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^ +lab +the lab: endpoints with known latency$", result.stdout, re.M)
