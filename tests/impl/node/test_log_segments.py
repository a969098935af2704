"""The log on disk with bounded memory: reads through the sparse offset index across
segments, the index rebuilt when missing or corrupt, retention by size and by time with the
log start offset it moves (persisted; reads below it refused), a follower starting at its
leader's log start, and memory that does not grow with the records written."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

from impl.node.broker.clients import consumer_fetch_range
from impl.node.log import PartitionLog

SMALL = {"segment_bytes": 2048, "index_interval_bytes": 256}


def _values(n: int, start: int = 0) -> list[bytes]:
    return [f"value-{i:05d}-".encode() + b"x" * 60 for i in range(start, start + n)]


def _filled(directory: Path, n: int, **settings: int) -> PartitionLog:
    log = PartitionLog.open(directory, **{**SMALL, **settings})
    for i, v in enumerate(_values(n)):
        log.append(i // 50, v)
    return log


def test_reads_cross_segment_boundaries_through_the_index(tmp_path: Path) -> None:
    log = _filled(tmp_path / "t-0", 300)
    assert len(log.segments) > 5
    assert all(seg.entries is None for seg in log.segments[:-1])  # closed: on disk only
    values = _values(300)
    for offset in (0, 1, 27, 28, 29, 150, 251, 299):
        got = log.read(offset, 40)
        assert [r.offset for r in got] == list(range(offset, min(300, offset + 40)))
        assert [r.value for r in got] == values[offset:offset + 40]
    assert [r.value for r in log.read(100, 1000, upto=130)] == values[100:130]
    middle = log.segments[2]
    offset, position = log._lookup(middle, middle.next_offset - 1)
    assert middle.base_offset < offset < middle.next_offset and position > middle.start
    assert log.read(300, 10) == [] and log.read(-1, 10) == []


def test_an_index_missing_or_corrupt_is_rebuilt_at_open(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    _filled(d, 300).close()
    indexes = sorted(d.glob("*.index"))
    assert len(indexes) == len(list(d.glob("*.log"))) and all(i.stat().st_size for i in indexes[:-1])
    good = {i.name: i.read_bytes() for i in indexes}
    indexes[1].unlink()
    indexes[2].write_bytes(b"\xff" * 13)  # garbage, and not a whole number of entries
    indexes[3].write_bytes(good[indexes[3].name][:-8])  # an entry short
    again = PartitionLog.open(d, **SMALL)
    assert {i.name: i.read_bytes() for i in sorted(d.glob("*.index"))} == good
    assert [r.value for r in again.read(0, 1000)] == _values(300)


def test_truncation_inside_a_closed_segment_keeps_its_index_true(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _filled(d, 300)
    cut = log.segments[3].base_offset + 7
    assert log.truncate_to(cut) == 300 - cut
    log.append(9, b"after")
    assert [r.offset for r in log.read(cut - 3, 10)] == [cut - 3, cut - 2, cut - 1, cut]
    log.close()
    index = sorted(d.glob("*.index"))[-1].read_bytes()
    again = PartitionLog.open(d, **SMALL)
    assert sorted(d.glob("*.index"))[-1].read_bytes() == index  # the recovered one agrees
    assert again.log_end_epoch() == 9 and again.read(cut, 1)[0].value == b"after"


def test_retention_by_size_deletes_old_segments_and_moves_the_log_start(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _filled(d, 300, retention_bytes=5000)
    before = len(log.segments)
    assert log.apply_retention() == 0  # nothing is below the HW yet
    log.set_hw(log.leo)
    deleted = log.apply_retention()
    assert deleted == before - len(log.segments) > 0
    assert log.size_bytes - log.segments[0].size < 5000 <= log.size_bytes + 2048
    start = log.log_start_offset
    assert start == log.segments[0].base_offset > 0
    assert not (d / f"{0:020d}.log").exists() and not (d / f"{0:020d}.index").exists()
    assert log.read(start - 1, 5) == [] and log.read(start, 1)[0].offset == start
    assert consumer_fetch_range(start - 1, 5, log.hw, log.leo, start) is None  # OFFSET_OUT_OF_RANGE
    assert consumer_fetch_range(start, 5, log.hw, log.leo, start) == range(start, start + 5)
    assert log.epochs.entries[0] == ((start // 50), start)  # the epoch in force at the start
    log.close()
    again = PartitionLog.open(d, **SMALL)
    assert again.log_start_offset == start and again.leo == 300
    assert [r.offset for r in again.records] == list(range(start, 300))
    assert (d / "log-start-offset-checkpoint").read_text() == f"{start}\n"


def test_retention_by_time_deletes_segments_last_written_too_long_ago(tmp_path: Path) -> None:
    log = _filled(tmp_path / "t-0", 300, retention_ms=60_000)
    log.set_hw(200)
    now = time.time()
    assert log.apply_retention(now) == 0
    old = now - 3600
    for seg in log.segments:  # every segment, the active one too, an hour old
        os.utime(seg.path, (old, old))
    deleted = log.apply_retention(now)
    assert deleted > 0 and log.segments[0].base_offset <= 200  # only below the HW
    assert log.log_start_offset == log.segments[0].base_offset
    log.set_hw(300)
    log.apply_retention(now)
    assert len(log.segments) == 1 and log.leo == 300  # never the active segment


def test_retention_off_deletes_nothing(tmp_path: Path) -> None:
    log = _filled(tmp_path / "t-0", 300)
    log.set_hw(300)
    assert log.apply_retention(time.time() + 10 ** 9) == 0 and log.log_start_offset == 0


def test_a_follower_below_its_leaders_log_start_starts_there(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _filled(d, 20)
    log.truncate_fully_and_start_at(120)
    assert (log.log_start_offset, log.leo, log.hw, log.records) == (120, 120, 120, [])
    assert not list(d.glob("*.log"))
    log.append(4, b"fetched")
    log.close()
    again = PartitionLog.open(d, **SMALL)
    assert (again.log_start_offset, again.leo) == (120, 121)
    assert [(r.offset, r.value) for r in again.records] == [(120, b"fetched")]
    assert again.epochs.entries == [(4, 120)]
    assert again.truncate_to(50) == 1 and (again.log_start_offset, again.leo) == (50, 50)


def test_memory_stays_bounded_however_much_is_written(tmp_path: Path) -> None:
    """20,000 records of 1 KiB (20 MiB) grow the traced memory by less than 5 MB: no list
    of records (a log that kept them grew by ~25 MB)."""
    log = PartitionLog.open(tmp_path / "t-0")
    filler = b"v" * 1020
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for i in range(20_000):
            log.append(0, i.to_bytes(4, "big") + filler)  # a new value each, as producers send
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert log.leo == 20_000
    assert after - before < 5 * 1024 * 1024, f"grew by {(after - before) / 2**20:.1f} MiB"
