"""No module of ``conformance`` reaches into another module's private names.

A name with a leading underscore is its module's own business: what another module needs
is part of that module's public interface, under a public name.  The rule is read off the
source (an AST scan, no import), so it costs nothing in the default suite: a ``from m
import _x``, or ``m._x`` on a module bound by ``import``, fails here with the line it is on.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _absolute(node: ast.ImportFrom, here: str) -> str:
    """The module a ``from ... import`` names, relative imports resolved against ``here``."""
    if not node.level:
        return node.module or ""
    base = here.split(".")[: -node.level]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports(path: Path, here: str) -> list[str]:
    """``file:line: what`` for each private name of another module that ``path`` (module
    ``here``) imports or reads off an imported module."""
    tree = ast.parse(path.read_text(), str(path))
    modules: set[str] = set()  # local names bound to project modules
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_module(alias.name):
                    modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, here)
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}: from {source} import {alias.name}")
                elif _is_module(f"{source}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name) \
                and node.value.id in modules:
            found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in private_imports(path, ".".join(path.relative_to(ROOT).with_suffix("").parts))]
    assert found == [], "private names used across modules:\n" + "\n".join(found)


def test_the_scan_sees_both_forms(tmp_path: Path) -> None:
    # the scan must be able to fail: both ways of reaching a private name are reported
    probe = tmp_path / "probe.py"
    probe.write_text("from conformance.judge import memo\nfrom conformance.judge.search import _silent\n"
                     "from . import replay as r\nx = memo._PLAIN, r._holds\n")
    found = private_imports(probe, "conformance.judge.probe")
    assert [hit.split(": ", 1)[1] for hit in found] == [
        "from conformance.judge.search import _silent", "memo._PLAIN", "r._holds"]
