"""Each event's row written in C (``properties/checkers/native/rows/rows.c``) is the row the
Python side writes (``CompiledSearch.event_row`` and ``add``, after ``TraceJudge._row``'s checks).

The C writes the rows of a stretch of events from the decoded events and stops at the first
whose row is the Python side's.  Its rows must be the Python's int for int -- the value ids
too, which both take from the judge's one value map -- or ``judge.c`` matches another event
than the one recorded.  So every group's rows (the packed ints, each event's offset, the
value map) are built both ways and compared: on the benchmark's corpus and its mutants, on
the recorded traces, and on events whose fields are of every odd type or size a row may
meet, where the C must either write the Python's row or leave the event to it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import conformance.judge.compiled_batch as compiled_batch
import conformance.judge.replay as replay
from bench.bench_conformance import fresh_shape
from conformance.mutations import MUTATIONS
from properties.checkers.native import NoCompiler
from tests.conformance.test_compiled_judge import groups_by_partition
from traces.reader import read_traces
from traces.synthetic import generate_run

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


@pytest.fixture(scope="module", autouse=True)
def _built() -> None:
    """Skip only where there is no C compiler or no interpreter headers (the rows are then
    the Python side's alone); a library that fails to build fails the test."""
    try:
        compiled_batch._entry()
    except NoCompiler as e:
        pytest.skip(f"no C compiler: the compiled judge is the Python one ({e})")
    if not compiled_batch.rows_written():
        pytest.skip("no C headers for this interpreter: every row is written in Python")


def _rows(group: list[dict[str, Any]], in_c: bool) -> tuple[bytes, list[int], list[Any], int]:
    """Every event's row of a judgement of ``group``, as ``_verdict_in_runs`` builds them
    (in C first where ``in_c``): the packed ints, the offsets, the value map, the rows the C
    wrote.  (A group the C does not judge at all has none.)"""
    judge = replay.TraceJudge(group, "kip320", replay.DEFAULT_BOUND, replay.MAX_STATES, True, False, None,
                              None, None)
    batch = judge.batch
    if batch is None:
        return b"", [], [], 0
    tables = compiled_batch.rows_tables(replay._ROWS_IN_C, judge.ids)
    in_c_rows = 0
    while len(batch.at) < len(group):
        i = len(batch.at)
        if in_c:
            batch.write_rows(group, i, tables)
            in_c_rows += len(batch.at) - i
        if len(batch.at) == i:
            batch.add(judge._row(i, group[i], batch))
    return bytes(batch.flat), batch.at, batch.keys, in_c_rows


def _rows_or_error(group: list[dict[str, Any]], in_c: bool) -> tuple[Any, ...]:
    """``_rows``, or the error the Python side raised (an event no schema lets through, whose
    row the C leaves to it: the same error either way)."""
    try:
        return _rows(group, in_c)
    except (KeyError, TypeError) as e:
        return repr(e), [], None, 0


def _same_rows(groups: list[list[dict[str, Any]]]) -> tuple[int, int]:
    """Assert both ways give the same rows: how many rows there were, how many the C wrote."""
    rows = written = 0
    for group in groups:
        *python, _ = _rows_or_error(group, in_c=False)
        *c, in_c = _rows_or_error(group, in_c=True)
        assert c == python, (group[0]["run"], group[0].get("topic"), group[0].get("partition"))
        rows += sum(1 for at in python[1] if at >= 0)
        written += in_c
    return rows, written


def test_rows_written_in_c_are_the_python_sides_on_the_benchmark_corpus_and_its_mutants() -> None:
    runs = [generate_run(f"bench-{i:07d}", **fresh_shape(i)) for i in range(8)]
    groups = [g for run in runs for g in groups_by_partition(run)]
    for _, mutate in sorted(MUTATIONS.items()):
        mutant = mutate(runs[0], random.Random(0))
        if mutant is not None:
            groups += groups_by_partition(mutant)
    rows, written = _same_rows(groups)
    assert written > 0.9 * rows, f"the C wrote {written} of {rows} rows: it leaves most to Python"


def test_rows_written_in_c_are_the_python_sides_on_the_recorded_traces() -> None:
    runs = sorted(p for p in (DATA / "recorded").iterdir() if p.is_dir())
    rows, written = _same_rows(groups_by_partition(read_traces(runs).events) + groups_by_partition(read_traces([DATA / "nonconforming"]).events))
    assert written > 0.5 * rows, f"the C wrote {written} of {rows} rows"


ODD_VALUES: list[Any] = [None, True, 1.0, 2**31, -(2**31) - 1, 2**31 - 1, -(2**31), "fenced", "a string", [], [1, 2],
                         [2**40], [True], [0, "x"], {"a": 1}, [[0, 1, "v"]], [[0, 1, ["unhashable"]]],
                         [[0, 1]], [[True, 1, "v"]], [[0, 2**31, "v"]], [[0, 1, 2.5]], [[0, 1, None]], 7, -1, 999]
"""Values a field of a row may meet: of every type, at and past a C int's limits, broker
ids no broker has, records of odd parts and values (an unhashable one among them)."""


def test_an_event_of_any_field_value_gets_the_python_sides_row() -> None:
    group = next(g for g in groups_by_partition(generate_run("bench-0000003", **fresh_shape(3))) if len(g) > 40)[:40]
    groups = []
    for e_at in sorted(random.Random(1).sample(range(len(group)), 5)):
        e = group[e_at]
        odd_events = [{**e, where: {**e[where], name: value}} for where in ("params", "post")
                      for name in sorted(e.get(where) or {}) for value in ODD_VALUES]
        odd_events += [{**e, where: value} for where, value in (("params", None), ("post", None), ("params", {}),
                                                                ("post", []), ("node", -1), ("kind", "no such"))]
        groups += [[*group[:e_at], odd, *group[e_at + 1:]] for odd in odd_events]
    rows, written = _same_rows(groups)
    assert written > 0.5 * rows


def test_the_row_writer_is_shipped_with_the_package() -> None:
    """The package data (pyproject.toml, globs in the package's directory, as setuptools
    reads them: a ``*`` stays in its directory) takes ``rows.c``: an installed epochal
    builds it from what it was shipped (without it every row is written in Python, slower)."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["properties"]
    shipped = {p for pattern in patterns for p in (root / "properties").glob(pattern)}
    units = [p for p in compiled_batch.ROWS_SOURCE.iterdir() if p.suffix == ".c"]
    assert [p.name for p in units] == ["rows.c"]
    assert {p.resolve() for p in units} <= {p.resolve() for p in shipped}
