"""The documentation lists every JSON schema latdoc writes, and only those.

A schema is a constant holding ``latdoc.NAME/VERSION``, in the module of the document it
names; the table on ``docs/commands/export.md`` lists them all.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from paths import ROOT

SRC = ROOT / "src" / "latdoc"
PAGE = ROOT / "docs" / "commands" / "export.md"
SCHEMA = re.compile(r"latdoc\.[a-z_]+/\d+")


def _defined() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and SCHEMA.fullmatch(node.value.value)
            ):
                found[node.value.value] += 1
    return found


def test_the_documentation_lists_every_schema() -> None:
    rows = set(re.findall(r"^\| `(latdoc\.[a-z_]+/\d+)` \|", PAGE.read_text(), re.M))
    assert rows == set(_defined())
