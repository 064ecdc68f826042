"""The command line starts light: a command's module is imported only when it runs.

``latdoc --help`` shows every command from the table in ``latdoc.cli``; the table
must say what the modules themselves register, in the same order.
"""

from __future__ import annotations

import ast
import subprocess
import sys


def test_a_command_imports_its_own_module_only() -> None:
    code = (
        "import sys\n"
        "from latdoc.cli import main\n"
        "main(['system', '--json'])\n"
        "print([m for m in sys.modules if m.startswith('latdoc.cli.')], file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ast.literal_eval(out.stderr.splitlines()[-1])
    assert [m for m in loaded if not m.startswith("latdoc.cli._")] == ["latdoc.cli.system"]
