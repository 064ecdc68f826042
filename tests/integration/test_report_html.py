"""The HTML report: self-contained, escaped, with plots that match the numbers."""

from __future__ import annotations

import subprocess
import sys

from paths import TESTS


def test_importing_latdoc_and_the_terminal_path_never_load_matplotlib() -> None:
    code = (
        "import sys, latdoc, latdoc.report, latdoc.cli, latdoc.cli.diagnose\n"
        "from report_samples import make_diagnosis\n"
        "from latdoc.report import render_diagnosis, render_text\n"
        "render_text(render_diagnosis(make_diagnosis()))\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib loaded'\n"
        "assert 'jinja2' not in sys.modules, 'jinja2 loaded'\n"
    )
    tests_dir = str(TESTS)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tests_dir, check=False
    )
    assert result.returncode == 0, result.stderr
