"""The table of pinned counts (docs/pinned-counts.md) is the only place they are written:
every row is one (configuration, bounds, what), names tests that exist and read the table,
and no test file keeps a count of its own beside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.pinned import rows

ROOT = Path(__file__).resolve().parents[1]


def test_each_row_is_one_configuration_bounds_and_what():
    keys = [(r.config, r.bounds, r.what) for r in rows()]
    assert len(rows()) >= 20
    assert len(keys) == len(set(keys))
    assert {r.what for r in rows()} <= {"states", "depth", "counterexample steps"}


def test_every_row_names_tests_that_exist_and_read_the_table():
    for r in rows():
        for name in r.checked_by:
            path, _, function = name.partition("::")
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            assert function in defs, f"{name} (row {r.config} / {r.bounds} / {r.what}) does not exist"
            assert "pinned" in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}, f"{path} does not read the table"


def _spellings(value: int) -> list[str]:
    """How a count is written in Python or in printed output: 1234567, 1_234_567, 1,234,567."""
    grouped = f"{value:,}"
    return [str(value), grouped.replace(",", "_"), grouped]


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.py")))
def test_no_test_file_writes_a_pinned_count_of_its_own(path):
    """Counts of three digits or more are distinctive enough to look for (the small ones --
    depths and step counts -- are read through ``pinned`` too, but cannot be told from any
    other small number)."""
    text = (ROOT / path).read_text(encoding="utf-8")
    for r in rows():
        if r.value < 100:
            continue
        for spelled in _spellings(r.value):
            found = re.search(rf"(?<![\w.])(?<!\d,){re.escape(spelled)}(?!\w|,\d)", text)
            assert found is None, f"{path} writes {spelled} ({r.config} / {r.bounds} / {r.what}): use pinned(...)"
