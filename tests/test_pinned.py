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


# -- the README's table of outcomes quotes the table, never a count of its own -----------------

_COUNT = re.compile(r"(?<![\w-])(\d{1,3}(?:,\d{3})+|\d+)(?=-step| steps?\b| states\b)|(?<![\w-])(\d{1,3}(?:,\d{3})+)(?![\d,])")


def quoted_counts(readme: str) -> list[tuple[str, int]]:
    """(configuration, count) for every count the README's "Configurations and outcomes"
    table states in its outcome columns: a state count (a number with thousands separators,
    or one followed by "states") or a step count (followed by "steps" or "-step").  The
    configuration is the first word of the row's name (``kip320 --deletions 1`` is kip320's)."""
    lines = readme.split("## Configurations and outcomes", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| name |"))
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        config = cells[0].strip("`").split()[0]
        for cell in cells[2:]:
            for m in _COUNT.finditer(cell):
                out.append((config, int((m.group(1) or m.group(2)).replace(",", ""))))
    return out


def test_every_count_in_the_readmes_table_of_outcomes_is_a_pinned_count_of_its_configuration():
    pinned_values = {(r.config, r.value) for r in rows()}
    quoted = quoted_counts((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(quoted) >= 12, quoted
    assert [q for q in quoted if q not in pinned_values] == []


def test_the_readme_check_reads_state_and_step_counts_and_skips_issue_numbers():
    readme = ("## Configurations and outcomes\n\n| name | protocol | at 2 | at 3 |\n|---|---|---|---|\n"
              "| `design` | seed 000 | lost (KAFKA-1211), 11-step counterexample, 12,345 states | -- |\n"
              "| `kip320 --deletions 1` | KIP-516 | holds, 222,222 states (3 brokers: 3,333,333) | 17 steps |\n"
              "\nafter the table: 999 states\n")
    assert quoted_counts(readme) == [("design", 11), ("design", 12345), ("kip320", 222222),
                                     ("kip320", 3333333), ("kip320", 17)]
