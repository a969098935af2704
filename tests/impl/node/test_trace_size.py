"""Trace size: a node's trace rotates at a size and keeps a bounded number of files, the
pieces read back as one stream, and a record's value is traced as a digest, never its bytes."""

from __future__ import annotations

from pathlib import Path

from impl.node.log import PartitionLog
from impl.node.replica import Replica
from impl.node.tracing import open_recorder, trace_path, value_digest
from traces import events
from traces.reader import read_traces
from traces.recorder import rotated_files


def _emit(rec, n: int) -> None:
    for i in range(n):
        rec.emit(events.note(informational={"text": f"event {i} " + "x" * 100}))


def test_a_trace_rotates_at_its_size_and_keeps_at_most_its_file_count(tmp_path: Path) -> None:
    rec = open_recorder(tmp_path, "run1", 0, max_file_bytes=2000, keep_files=3)
    _emit(rec, 200)  # about 60 kB of events: many rotations
    rec.close()
    path = trace_path(tmp_path, 0)
    pieces = rotated_files(path)
    assert len(pieces) == 2  # two rotated pieces and the active file: three in all
    assert all(p.stat().st_size < 2000 + 400 for p in [*pieces, path])
    numbers = [int(p.name.split(".")[1]) for p in pieces]
    assert numbers == sorted(numbers) and numbers[-1] > 2  # the oldest were deleted


def test_rotated_pieces_read_back_in_order_and_a_reopened_recorder_continues_the_sequence(
        tmp_path: Path) -> None:
    rec = open_recorder(tmp_path, "run1", 0, max_file_bytes=1500, keep_files=100)
    _emit(rec, 40)
    rec.close()
    again = open_recorder(tmp_path, "run1", 0, max_file_bytes=1500, keep_files=100)
    _emit(again, 5)
    again.close()
    events = read_traces([tmp_path / "traces"]).events
    assert [e["seq"] for e in events if e["node"] == 0] == list(range(45))


def test_produce_events_carry_a_digest_of_the_value_not_the_value(tmp_path: Path) -> None:
    rec = open_recorder(tmp_path, "run1", 0)
    r = Replica("t", 0, 0, PartitionLog.open(tmp_path / "t-0"), rec)
    big = b"payload-" * 100_000
    r.append_batch([big, b"small"])
    rec.close()
    text = trace_path(tmp_path, 0).read_text()
    assert "payload-" not in text and "small" not in text
    assert value_digest(big) in text and len(text) < 2000
