"""Each event's row written in C (``properties/checkers/native/rows/rows.c``) is the row the
Python side writes (``CompiledSearch.event_row`` and ``add``, after ``TraceJudge._row``'s checks),
and the broker-id map and registrations it reads are ``broker_ids``' and ``registration_epochs``'.

The C writes the rows of a stretch of events from the decoded events and stops at the first
whose row is the Python side's.  Its rows must be the Python's int for int -- the value ids
too, which both take from the judge's one value map -- or ``judge.c`` matches another event
than the one recorded.  So every group's rows (the packed ints, each event's offset, the
value map) are built both ways and compared: on the benchmark's corpus and its mutants, on
the recorded traces, and on events whose fields are of every odd type or size a row may
meet, where the C must either write the Python's row or leave the event to it.  The same
for a group's broker-id map -- key for key, in order -- and for the verdicts of a judge that
finds no C rows at all (an interpreter without headers); and for the valid events it
recognises among a file's decoded lines, before any of that.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import conformance.judge.compiled_batch as compiled_batch
import conformance.judge.replay as replay
from bench.bench_conformance import fresh_shape
from conformance.judge.observation import LIST_IDS, SCALAR_IDS, broker_ids, registration_epochs
from conformance.mutations import MUTATIONS
from tests.conformance.native_built import skip_unless_rows_written
from tests.conformance.test_compiled_judge import groups_by_partition
from traces import schema
from traces.reader import iter_file, read_traces
from traces.schema import SCHEMA_ID
from traces.synthetic import generate_run
from traces.vocabulary import KINDS

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


@pytest.fixture(scope="module", autouse=True)
def _built() -> None:
    skip_unless_rows_written("every row is written in Python")


def _rows(group: list[dict[str, Any]], in_c: bool) -> tuple[bytes, list[int], list[Any], int]:
    """Every event's row of a judgement of ``group``, as ``_verdict_in_runs`` builds them
    (in C first where ``in_c``, the broker-id map too): the packed ints, the offsets, the value
    map, the rows the C wrote.  (A group the C does not judge at all has none.)"""
    with mock.patch.object(replay, "group_ids", replay.group_ids if in_c else lambda events: None):
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


def _corpus_and_mutants(runs: int, seed: int) -> list:
    """The groups of ``runs`` fresh bench runs, and of each mutation of the first."""
    made = [generate_run(f"bench-{i:07d}", **fresh_shape(i)) for i in range(runs)]
    groups = [g for run in made for g in groups_by_partition(run)]
    for _, mutate in sorted(MUTATIONS.items()):
        mutant = mutate(made[0], random.Random(seed))
        if mutant is not None:
            groups += groups_by_partition(mutant)
    return groups


def test_rows_written_in_c_are_the_python_sides_on_the_benchmark_corpus_and_its_mutants() -> None:
    rows, written = _same_rows(_corpus_and_mutants(8, seed=0))
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
    reads them: a ``*`` stays in its directory) takes ``rows.c``, the file reader ``lines.c``
    and their header: an installed epochal builds them from what it was shipped (without
    them every row is written, and every file read, in Python, slower)."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["properties"]
    shipped = {p for pattern in patterns for p in (root / "properties").glob(pattern)}
    units = sorted(p for p in compiled_batch.ROWS_SOURCE.iterdir() if p.suffix in (".c", ".h"))
    assert [p.name for p in units] == ["lines.c", "rows.c", "rows.h"]
    assert {p.resolve() for p in units} <= {p.resolve() for p in shipped}


def _same_ids(groups: list[list[dict[str, Any]]]) -> int:
    """Assert the C reads each group's broker-id map (its keys in order) and registrations as
    the Python side does, or leaves them to it (None), which must then be where the Python
    side raises or reads a type JSON does not give; how many groups the C read."""
    read = 0
    for group in groups:
        try:
            python: Any = (list(broker_ids(group).items()), registration_epochs(group))
        except (KeyError, TypeError, AttributeError) as e:
            python = repr(e)
        c = compiled_batch.group_ids(group)
        if c is not None:
            assert (list(c[0].items()), c[1]) == python, group
            read += 1
    return read


def test_the_broker_id_map_read_in_c_is_the_python_sides_on_the_corpus_its_mutants_and_recorded_traces() -> None:
    runs = [generate_run(f"bench-{i:07d}", **fresh_shape(i)) for i in range(8)]
    groups = [g for run in runs for g in groups_by_partition(run)]
    assert _same_ids(groups) == len(groups), "the C leaves groups of the benchmark's own events to Python"
    for _, mutate in sorted(MUTATIONS.items()):
        mutant = mutate(runs[1], random.Random(0))
        if mutant is not None:
            groups += groups_by_partition(mutant)
    recorded = sorted(p for p in (DATA / "recorded").iterdir() if p.is_dir())
    groups += groups_by_partition(read_traces([*recorded, DATA / "nonconforming"]).events)
    assert _same_ids(groups) > 0.9 * len(groups)


class _Int(int):
    """An int of another type (JSON never gives one): the Python side's to read."""


class _List(list):  # type: ignore[type-arg]
    """A list of another type."""


class _Str(str):
    """A string of another type."""


ODD_IDS: list[Any] = [None, True, False, 0, 3, -1, 7, 1.0, "2", 2**63, -(2**63) - 1, 2**70, _Int(2), [], [3, 0],
                      [True], [1, 2.0, "x", None], [2**64], [-5, 9], _List([1]), {"a": 1}, [_Int(4)]]
"""Values an id-naming field may hold: plain ids, "none", every other JSON type, ints past
64 bits, bools, an int and a list of other types."""


def test_an_event_of_any_id_field_value_gets_the_python_sides_broker_id_map() -> None:
    """Every id param, the node, the kind (an unknown one), the params themselves and a
    registration's broker epoch of an odd value, and preferred-replica elections over
    assignments in and out of id order, with duplicates and ids no event names: the C's map
    is the Python's, or it leaves the group to Python."""
    group = next(g for g in groups_by_partition(generate_run("bench-0000005", **fresh_shape(5))) if len(g) > 30)[:30]
    rng = random.Random(2)
    groups = []
    for at in sorted(rng.sample(range(len(group)), 6)):
        e = group[at]
        odd = [{**e, "params": {**(e.get("params") or {}), name: value}}
               for name in (*SCALAR_IDS, *LIST_IDS, "broker_epoch", "reason") for value in ODD_IDS]
        odd += [{**e, "node": value} for value in ODD_IDS]
        odd += [{**e, "kind": kind} for kind in ("no such kind", 5, None, "broker_restart", "broker_reregister",
                                                 "elect_leader", _Str("elect_leader"))]
        odd += [{**e, "params": value} for value in (None, {}, [], [1], 0, "x")]
        odd += [{k: v for k, v in e.items() if k != gone} for gone in ("node", "kind", "params")]
        groups += [[*group[:at], x, *group[at + 1:]] for x in odd]
    for _ in range(300):  # preferred elections: the first one's assignment names the model's ids
        odd = list(group)
        for _ in range(rng.randint(1, 3)):
            replicas = [rng.choice([-1, 0, 1, 2, 3, 4, 9]) for _ in range(rng.randint(0, 4))]
            reason = rng.choice(["preferred", "preferred", "preferred", "init", None, 1, ["preferred"],
                                 _Str("preferred")])
            odd.insert(rng.randint(0, len(odd)), {
                "kind": "elect_leader", "node": rng.choice([0, 3]),
                "params": {"reason": reason, "replicas": rng.choice([replicas, replicas, replicas, _List(replicas)])}})
        groups.append(odd)
    read = _same_ids(groups)
    assert read > 0.6 * len(groups), f"the C read {read} of {len(groups)} groups: it leaves most to Python"


def test_the_verdicts_are_the_same_where_every_row_and_id_is_read_in_python() -> None:
    """An interpreter without C headers gets no rows in C (``rows_written`` is False): the
    judge reads every row and broker-id map in Python, to the same verdicts."""
    groups = _corpus_and_mutants(3, seed=3)
    in_c = [replay.judge_default(g, "kip320") for g in groups]
    with mock.patch.object(compiled_batch, "_rows_built", lambda: None):
        assert not compiled_batch.rows_written()
        in_python = [replay.judge_default(g, "kip320") for g in groups]
    assert in_python == in_c
    assert any(not v["conforms"] for v in in_c), "no failing verdict among them: the test shows too little"


def test_the_events_recognised_in_c_are_exactly_those_validate_accepts_normalized_alike() -> None:
    """Recorded events of every kind, mutated at random (fields dropped, null, of another
    JSON type, negative, past 64 bits, an unknown kind or schema, params or post of another
    type): ``rows.c`` finds an object valid exactly when ``validate`` does, and normalizes it
    as ``normalize`` does; objects of types JSON does not give it leaves to ``validate``."""
    events = [{k: v for k, v in e.items() if not k.startswith("_")} for e in read_traces([DATA / "recorded"]).events]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_kind.setdefault(e["kind"], []).append(e)
    values: list[Any] = [None, 0, 7, -1, True, 1.5, "x", [], [1, 2], [1, True], [[0, 1, "a"]], [[0, 1]],
                        [[0, True, "a"]], [[0, 1, [1]]], [[0, 1, None]], {}, {"a": 1}, 2**70, -(2**70), SCHEMA_ID]
    rng = random.Random(12)
    objs: list[Any] = []
    for _ in range(12000):
        e = copy.deepcopy(rng.choice(rng.choice(list(by_kind.values()))))
        for _ in range(rng.choice([0, 1, 1, 2])):
            d = e if (where := rng.choice(["top", "params", "post"])) == "top" else e.get(where)
            if not isinstance(d, dict):
                continue
            key = rng.choice([*d, "extra", "post", "zxid"]) if d else "extra"
            if where == "top" and rng.random() < 0.1:
                d["kind"] = rng.choice([*KINDS, "nope", 3])
            elif rng.random() < 0.2:
                d.pop(key, None)
            else:
                d[key] = rng.choice(values)
        objs.append(e)
    objs += [None, 3, "x", [{}], {}, *[{**e, "seq": _Int(1)} for e in events[:20]],
             *[{**e, "schema": _Str(SCHEMA_ID)} for e in events[:20]]]
    expected = [schema.validate(copy.deepcopy(obj)) is None for obj in objs]
    normalized = [schema.normalize(copy.deepcopy(obj)) if ok else None for obj, ok in zip(objs, expected, strict=True)]
    flags = compiled_batch.valid_events(objs)
    of_json = len(objs) - 40
    assert [bool(f) for f in flags[:of_json]] == expected[:of_json]
    assert not any(flags[of_json:]), "an int or str of another type: the Python side's"
    assert [obj for obj, f in zip(objs, flags, strict=True) if f] == [n for n in normalized[:of_json] if n is not None]
    assert 2000 < sum(flags) < len(objs) - 2000


def test_a_file_read_with_the_valid_events_recognised_in_c_gives_the_same_records() -> None:
    """Every record of the data files (recorded, malformed, failing) and of a file of odd
    lines -- bad JSON, NaN, blank lines, JSON that is no object, null, a torn last line --
    is the same (line, event, reason, raw) through ``iter_file`` with ``recognise`` as without."""
    files = sorted(p for d in ("recorded", "malformed", "nonconforming") for p in (DATA / d).rglob("*")
                   if p.is_file() and p.name != "README.md")
    valid = next(line for f in files if f.suffix == ".jsonl" and "recorded" in f.parts
                 for line in f.read_text().splitlines() if line.strip())
    odd = "\n".join([valid, "", "{not json", "NaN", "[1, 2]", "null", '{"a": 1}', valid.replace('"seq"', '"sq"'),
                     "  ", valid.replace("{", '{"post": null, ', 1), valid[:40]]).encode()
    datas = [(str(f), f.read_bytes()) for f in files] + [("odd.jsonl", odd)]
    recognised = compiled_batch.recognise()
    assert recognised is not None
    for name, data in datas:
        assert list(iter_file(name, data, recognised)) == list(iter_file(name, data)), name
    assert sum(1 for name, data in datas for _, e, _, _ in iter_file(name, data, recognised) if e) > 100
