"""How the code is built, measured from its own text: the figures the house is held to.

Printed, from ``src/latdoc`` and ``tests`` as they stand:

- the command line's size (lines of ``latdoc.cli``, goal ≤ 1,500);
- modules over 450 lines and functions over 80 (goal: none);
- imports of another package's private module (``latdoc.a._x`` from outside
  ``latdoc.a``; goal: none), from the source and from the tests (a unit test under
  ``tests/unit/a/`` tests ``latdoc.a`` and may read its private modules);
- modules below ``latdoc.cli`` that import ``argparse`` (goal: none; the lab, which
  starts processes of its own with their own command lines, stands apart);
- import circles: the sets of two or more modules that each reach every other by
  imports (goal: none), counted as grimp and import-linter read imports: every import
  in a module's text (``if TYPE_CHECKING:`` ones and those in a function too), a
  package's ``__init__`` a module of its own, ``from a import b`` an import of the
  module ``a.b`` when there is one and of ``a`` otherwise;
- test functions in each tier (``tests/unit``, ``tests/integration``, the rest), with
  the unit tier's share (goal ≥ half).

Nothing is run or imported: the files are parsed (:mod:`ast`). ``--json FILE`` writes
the figures too. Run: ``.venv/bin/python bench/house.py``.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "latdoc"
TESTS = ROOT / "tests"
CLI_GOAL = 1500
MODULE_GOAL = 450
FUNCTION_GOAL = 80
TIERS = ("unit", "integration")


@dataclass
class Figures:
    cli_lines: int = 0
    long_modules: dict[str, int] = field(default_factory=dict)
    long_functions: dict[str, int] = field(default_factory=dict)
    private_doors: list[str] = field(default_factory=list)
    test_private_doors: list[str] = field(default_factory=list)
    argparse_below_cli: list[str] = field(default_factory=list)
    import_circles: list[list[str]] = field(default_factory=list)
    tests_by_tier: dict[str, int] = field(default_factory=dict)

    @property
    def unit_share(self) -> float:
        total = sum(self.tests_by_tier.values())
        return self.tests_by_tier.get("unit", 0) / total if total else 0.0


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stem(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    """The module ``from … import`` names, a relative one resolved against ``here``."""
    if not node.level:
        return node.module or ""
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imported(tree: ast.Module, here: str, is_package: bool) -> list[str]:
    """Every module name ``tree`` imports, relative imports resolved against ``here``."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = stem(node, here, is_package)
            names.append(base)
            names += [f"{base}.{a.name}" for a in node.names]
    return names


def imported_modules(tree: ast.Module, here: str, is_package: bool) -> set[str]:
    """The modules of the source ``tree`` imports, one per imported name, as grimp
    reads them: ``from a import b`` imports ``a.b`` when it is a module, else ``a``."""
    found: list[str | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [source_module(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = stem(node, here, is_package)
            for a in node.names:
                whole = f"{base}.{a.name}"
                found.append(whole if is_module(whole.split(".")) else source_module(base))
    return {module for module in found if module is not None}


def is_module(parts: list[str]) -> bool:
    """Whether ``latdoc.a.b`` names a module or package of the source (not a name in one)."""
    path = SOURCE.parent.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def source_module(name: str) -> str | None:
    """The module of the source that ``name`` is or lies in, or None outside the source."""
    parts = name.split(".")
    while parts and not is_module(parts):
        parts.pop()
    return ".".join(parts) or None


def circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``imports`` (a module's, the modules it imports): each set
    of two or more modules that reach one another, sorted."""
    reach = {module: reachable(imports, module) for module in imports}
    found = {
        tuple(sorted({m for m in reach[module] if module in reach[m]} | {module}))
        for module in imports
    }
    return sorted(list(circle) for circle in found if len(circle) > 1)


def reachable(imports: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for module in imports.get(todo.pop(), ()):
            if module not in seen:
                seen.add(module)
                todo.append(module)
    return seen


def private_door(importer: str, name: str) -> str | None:
    """The private module of ``name`` when it lies in a package ``importer`` is not
    inside; None otherwise."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        private = part.startswith("_") and not part.startswith("__")
        if private and i > 0 and is_module(parts[: i + 1]):
            owner = ".".join(parts[:i])
            inside = importer == owner or importer.startswith(owner + ".")
            return None if inside else ".".join(parts[: i + 1])
    return None


def functions(tree: ast.Module) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((node.name, (node.end_lineno or node.lineno) - node.lineno + 1))
    return out


def test_home(path: Path) -> str:
    """The package a test file tests: ``latdoc.analysis`` for ``tests/unit/analysis/...``
    (whose private modules it may read), ``tests`` for any other test (which may read
    none)."""
    parts = path.relative_to(TESTS).parts
    if parts[0] != "unit" or len(parts) < 3:
        return "tests"
    return ".".join(("latdoc", *parts[1:-1]))


def measure() -> Figures:
    f = Figures()
    imports: dict[str, set[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        name = module_name(path)
        rel = str(path.relative_to(ROOT))
        if name == "latdoc.cli" or name.startswith("latdoc.cli."):
            f.cli_lines += lines
        if lines > MODULE_GOAL:
            f.long_modules[rel] = lines
        tree = ast.parse(text)
        for fn, length in functions(tree):
            if length > FUNCTION_GOAL:
                f.long_functions[f"{rel}:{fn}"] = length
        names = imported(tree, name, path.name == "__init__.py")
        imports[name] = imported_modules(tree, name, path.name == "__init__.py")
        doors = {d for n in names if n.startswith("latdoc.") and (d := private_door(name, n))}
        f.private_doors += sorted(f"{name} -> {d}" for d in doors)
        if "argparse" in names and not name.startswith(("latdoc.cli", "latdoc.lab")):
            f.argparse_below_cli.append(name)
    f.import_circles = circles(imports)
    tiers: Counter[str] = Counter()
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tier = next((t for t in TIERS if t in path.relative_to(TESTS).parts[:1]), "other")
        tiers[tier] += sum(
            1
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")
        )
        names = imported(tree, "tests", False)
        home = test_home(path)
        doors = {d for n in names if n.startswith("latdoc.") and (d := private_door(home, n))}
        f.test_private_doors += sorted(f"{path.relative_to(ROOT)} -> {d}" for d in doors)
    f.tests_by_tier = {t: tiers.get(t, 0) for t in (*TIERS, "other")}
    return f


def show(f: Figures) -> None:
    print(f"cli: {f.cli_lines:,} lines (goal ≤ {CLI_GOAL:,})")
    print(f"modules over {MODULE_GOAL} lines: {len(f.long_modules)}")
    for k, v in sorted(f.long_modules.items(), key=lambda kv: -kv[1]):
        print(f"  {v:5d}  {k}")
    print(f"functions over {FUNCTION_GOAL} lines: {len(f.long_functions)}")
    for k, v in sorted(f.long_functions.items(), key=lambda kv: -kv[1]):
        print(f"  {v:5d}  {k}")
    print(f"private doors in src: {len(f.private_doors)}")
    for door in f.private_doors:
        print(f"  {door}")
    reaching = {d.split(" ")[0] for d in f.test_private_doors}
    print(f"test files reaching a private module: {len(reaching)}")
    print(f"argparse below cli: {len(f.argparse_below_cli)} {f.argparse_below_cli}")
    print(f"import circles: {len(f.import_circles)}")
    for circle in f.import_circles:
        print(f"  {len(circle):5d}  {', '.join(circle)}")
    total = sum(f.tests_by_tier.values())
    tiers = ", ".join(f"{k} {v}" for k, v in f.tests_by_tier.items())
    print(f"test functions: {total} ({tiers}); unit share {f.unit_share:.0%} (goal ≥ 50%)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    figures = measure()
    show(figures)
    if args.json:
        args.json.write_text(json.dumps(asdict(figures), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
