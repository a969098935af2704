"""The pinned counts, read from the one table that holds them: docs/pinned-counts.md.

A test asks for a count by the row's own words -- ``pinned("kip320", "three brokers,
reduced", "states")`` -- so the docs and the tests cannot disagree: there is one value, in
the table, and the test that checks it is named in the same row.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

TABLE = Path(__file__).resolve().parents[1] / "docs" / "pinned-counts.md"
HEADER = ("Configuration", "Bounds", "What", "Value", "Checked by")


class Row(NamedTuple):
    config: str
    bounds: str
    what: str
    value: int
    checked_by: tuple[str, ...]  # "tests/<file>.py::<test function>"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


@functools.cache
def rows() -> tuple[Row, ...]:
    """The table's rows, in order (the first markdown table whose header is ``HEADER``)."""
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and tuple(_cells(line)) == HEADER)
    out = []
    for line in lines[start + 2:]:  # past the header and its |---| line
        if not line.startswith("|"):
            break
        config, bounds, what, value, checked_by = _cells(line)
        out.append(Row(config, bounds, what, int(value.replace(",", "")), tuple(t.strip() for t in checked_by.split(","))))
    return tuple(out)


def pinned(config: str, bounds: str, what: str) -> int:
    """The value of the one row for (configuration, bounds, what); a KeyError names the row
    asked for when the table has none, so a renamed row fails loudly, not silently."""
    found = [r.value for r in rows() if (r.config, r.bounds, r.what) == (config, bounds, what)]
    if len(found) != 1:
        raise KeyError(f"{TABLE.name} has {len(found)} rows for ({config!r}, {bounds!r}, {what!r})")
    return found[0]
