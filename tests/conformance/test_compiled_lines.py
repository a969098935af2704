"""A JSON Lines file read in C (``properties/checkers/native/rows/lines.c``, through
``compiled_batch.read_lines`` and the job's ``read_group``) gives the Python reader's records.

The C decodes each line itself and keeps the lines it finds valid events (``rows.c``'s
recognition); every other line -- one it does not decode exactly as ``json.loads`` does, or
decodes to no valid event -- goes back to ``traces.reader.line_record`` by its bytes.  So on
any input its valid events must be the dicts ``iter_file`` gives, key for key and in key
order, tagged alike, and its other lines the same quarantine records (line, reason, raw):
here on lines of every odd kind (bad UTF-8, duplicate keys, numbers of every JSON form,
nested junk, escapes, missing fields, blank lines, CRLF, a truncated last line), on the
recorded data files, and as a whole job's task on a generated corpus, to the same verdicts.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import conformance.judge.compiled_batch as compiled_batch
import conformance.spark.read as read
from bench.bench_conformance import fresh_shape
from conformance.spark.tasks import _judged_rows
from conformance.spark.verdict import load_judge
from tests.conformance.native_built import skip_unless_rows_written
from traces.reader import iter_file, read_traces
from traces.synthetic import generate_run

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


@pytest.fixture(scope="module", autouse=True)
def _built() -> None:
    skip_unless_rows_written("every file is read in Python")


def _events() -> list[dict[str, Any]]:
    """Recorded events of every kind, without the reader's tags."""
    return [{k: v for k, v in e.items() if not k.startswith("_")} for e in read_traces([DATA / "recorded"]).events]


def _with(event: dict[str, Any], where: str, key: str, literal: str, compact: bool = True) -> bytes:
    """The event's JSON line with ``event[where][key]`` (``where`` "": the top level) written
    as ``literal``, JSON text or not."""
    e = json.loads(json.dumps(event))
    (e if not where else e.setdefault(where, {}))[key] = "@@"
    text = json.dumps(e, separators=(",", ":") if compact else (", ", ": "))
    return text.replace('"@@"', literal, 1).encode()


def _odd_lines() -> list[bytes]:
    """Lines of every odd kind, among valid ones."""
    events = _events()
    seen: dict[str, dict[str, Any]] = {}
    for e in events:
        seen.setdefault(e["kind"], e)
    kinds = list(seen.values())
    e = next(x for x in kinds if x["params"])
    param = next(iter(e["params"]))
    valid = json.dumps(e, separators=(",", ":")).encode()
    lines = [json.dumps(x, separators=(",", ":")).encode() for x in kinds]
    lines += [json.dumps(x).encode() for x in kinds[:5]]  # spaces after , and :
    numbers = ["0", "-0", "7", "-1", "0.0", "1.5", "-0.0", "1e2", "1E+2", "2e-3", "1e400", "-1e400", "1.5e-400",
               "NaN", "Infinity", "-Infinity", "true", "false", "null", str(2**63), str(2**64 + 1), str(-(2**70)),
               "9" * 19, "9" * 18, "1" + "0" * 5000, "01", "1.", ".5", "-", "1e", "+1", "0x1", '"7"', "[7]", "{}",
               "[]", "1 2", "1,"]
    for literal in numbers:
        lines += [_with(e, "", "seq", literal), _with(e, "", "clock", literal), _with(e, "params", param, literal),
                  _with(e, "", "ts", literal), _with(e, "", "zxid", literal)]
    strings = ['"r\\u00e9n"', '"\\ud834\\udd1e"', '"\\ud800"', '"\\udc00x"', '"\\ud800\\u0041"', '"a\\/b\\n\\t\\"\\\\"',
               '"\\x"', '"\\u12"', '"\\u12g4"', '"\\U0041"', '"tab\there"', '"ctl\x01"', '"del\x7f"', '"é𝄞"',
               '"unterminated', '""', '"' + "x" * 300 + '"', '"' + "é" * 300 + '"', '"\\u0000"']
    for literal in strings:
        lines += [_with(e, "", "run", literal), _with(e, "", "kind", literal), _with(e, "params", param, literal)]
    bad_utf8 = [b"\xff", b"\xc3\x28", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"]
    for raw in bad_utf8:
        lines += [valid.replace(b'"run":"', b'"run":"' + raw, 1), valid + raw, raw + valid]
    nested = "[" * 40 + "]" * 40
    lines += [_with(e, "", "extra", nested), _with(e, "", "extra", "[" * 20 + "]" * 20),
              _with(e, "", "extra", '{"a":{"b":[1,{"c":null,"d":[true,false,1.5,"s"]}]}}'),
              _with(e, "", "extra", "[1,]"), _with(e, "", "extra", '{"a":1,}'), _with(e, "", "extra", '{"a" 1}'),
              _with(e, "", "extra", "{1:2}"), _with(e, "", "extra", "[1 2]"), _with(e, "", "params", "null"),
              _with(e, "", "params", "[]"), _with(e, "", "post", "null"), _with(e, "", "post", "7")]
    lines += [valid.replace(b'"seq":', b'"seq":"x","seq":', 1), valid.replace(b'"kind":', b'"kind":3,"kind":', 1),
              valid.replace(b"{", b'{"seq":"x",', 1), valid[:-1] + b',"seq":-1}', valid[:-1] + b',"run":"other"}']
    for key in ("kind", "seq", "run", "schema", "node", "params", "clock"):
        x = dict(e)
        del x[key]
        lines.append(json.dumps(x).encode())
    lines += [b"", b"   ", b"\t", b"\x0b\x0c", b"\r", b" \r ", valid + b"\r", valid + b"\r\r", b"\r" + valid,
              b"  " + valid + b"\t ", b"\x0c" + valid, b"\xef\xbb\xbf" + valid, valid + b" x", valid + valid,
              valid + b" " + valid, b"[1, 2]", b"null", b"3", b'"s"', b"{not json", b"{}", b"[]", b"true",
              b"nul", b"{\"a\":1}\x00", valid.replace(b":", b" : ")]
    return lines


def _in_c(name: str, data: bytes) -> list[tuple[Any, ...]]:
    """The file's records as the job's reader takes them from the C: (line, event, reason, raw
    of a quarantined line)."""
    got = compiled_batch.read_lines(data, name)
    assert got is not None
    out = []
    for line, e, reason, raw in read._merged(got[0], got[1]):
        if e is not None:  # (an event the Python side decoded: read_group tags it)
            e["_file"], e["_line"], raw = name, line, ""
        out.append((line, e, reason, raw))
    return out


def _in_python(name: str, data: bytes) -> list[tuple[Any, ...]]:
    out = []
    for line, e, reason, raw in iter_file(name, data):
        if e is not None:
            e["_file"], e["_line"], raw = name, line, ""
        out.append((line, e, reason, raw))
    return out


def _same(name: str, data: bytes) -> tuple[int, int]:
    """Assert the C's records are the Python reader's, each event's keys in the same order and
    each value of the same type (compared by ``repr``: a NaN too): how many valid events and
    how many other records."""
    c, python = _in_c(name, data), _in_python(name, data)
    assert repr(c) == repr(python), name
    return sum(1 for r in c if r[1] is not None), sum(1 for r in c if r[1] is None)


def test_a_file_of_odd_lines_read_in_c_gives_the_python_readers_events_and_quarantined_lines() -> None:
    lines = _odd_lines()
    events, quarantined = _same("odd.jsonl", b"\n".join(lines))
    assert events > 100 and quarantined > 200, (events, quarantined)
    read_in_c = compiled_batch.read_lines(b"\n".join(lines), "odd.jsonl")
    assert read_in_c is not None and len(read_in_c[0]) >= events - 10, "the C leaves valid events to Python"
    for ending in (b"\n", b"\r\n"):  # every line alone, with each ending and with none (a truncated last line)
        for line in lines:
            _same("one.jsonl", line + ending)
            _same("one.jsonl", line)
            _same("cut.jsonl", line + ending + line[: len(line) // 2])
    _same("crlf.jsonl", b"\r\n".join(lines) + b"\r\n")
    _same("empty.jsonl", b"")


def test_the_data_files_read_in_c_give_the_python_readers_records() -> None:
    files = [p for d in ("recorded", "malformed", "nonconforming") for p in (DATA / d).rglob("*.jsonl")]
    events = sum(_same(str(f), f.read_bytes())[0] for f in files)
    assert events > 100


def _write_corpus(directory: Path, runs: int) -> list[str]:
    """Files of ``runs`` fresh bench runs, one a node, as the benchmark writes them, with a
    run's file of odd lines, a gzip'd one and a Parquet name among them: their URIs."""
    for i in range(runs):
        by_node: dict[int, list[str]] = {}
        for e in generate_run(f"bench-{i:07d}", **fresh_shape(i)):
            by_node.setdefault(e["node"], []).append(json.dumps(e, separators=(",", ":")))
        for node, lines in by_node.items():
            (directory / f"bench-{i:07d}.{node}.jsonl").write_text("\n".join(lines) + "\n")
    first = sorted(directory.glob("bench-0000000.*.jsonl"))
    text = first[0].read_bytes()
    (directory / "zz-odd.jsonl").write_bytes(text.replace(b"\n", b"\r\n", 3) + b"\n".join(_odd_lines()))
    (directory / "zz-gz.jsonl.gz").write_bytes(gzip.compress(first[1].read_bytes()))
    (directory / "zz-two-runs.jsonl").write_bytes(first[-1].read_bytes() + text)
    return [p.as_uri() for p in sorted(directory.iterdir())]


def _task(members: list[str], only: frozenset[str] | None, judge: Any) -> tuple[Any, ...]:
    out: list[dict[str, Any]] = []
    runs = read.read_group(members, 7, only, out)
    verdicts = [{k: v for k, v in row.items() if k != "judge_seconds"}
                for run in sorted(runs) for row in _judged_rows(run, runs[run], judge, "kip320")]
    return runs, out, verdicts


def test_the_jobs_task_reads_and_judges_alike_with_files_read_in_c_and_in_python(tmp_path: Path) -> None:
    """The job's task on a generated corpus (with odd, gzip'd and two-run files) and on the
    recorded traces: the same runs, events, quarantine and "seen" rows and verdicts whether
    its files are read in C or in Python -- the corpus on both passes (``only``)."""
    judge = load_judge(None)
    corpus = _write_corpus(tmp_path, 4)
    recorded = [p.as_uri() for d in ("recorded", "nonconforming", "malformed") for p in sorted((DATA / d).rglob("*"))
                if p.is_file() and p.name != "README.md"]
    for members in (corpus, recorded):
        in_c = _task(members, None, judge)
        with mock.patch.object(read, "_read_in_c", lambda path, data: None):
            in_python = _task(members, None, judge)
        assert in_c == in_python
        assert len(in_c[0]) > 2 and in_c[2]
    assert any(v.get("conforms") is False for v in in_python[2]), "no failing verdict: the test shows too little"
    only = frozenset(sorted(_task(corpus, None, judge)[0])[::2])
    in_c = _task(corpus, only, judge)
    with mock.patch.object(read, "_read_in_c", lambda path, data: None):
        assert in_c == _task(corpus, only, judge)
    assert set(in_c[0]) == only and not in_c[1]


def test_without_c_rows_every_file_is_read_in_python() -> None:
    """An interpreter without C headers has no C reader: ``read_lines`` says so, and the
    job's reader takes every file through ``iter_file``."""
    with mock.patch.object(compiled_batch, "_rows_built", lambda: None):
        assert compiled_batch.read_lines(b"{}\n", "x.jsonl") is None
        f = next((DATA / "recorded").rglob("*.jsonl"))
        assert read._read_in_c(str(f), f.read_bytes()) is None
