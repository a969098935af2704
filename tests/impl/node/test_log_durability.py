"""The log's durability rules, on files: a failed append leaves no fragment and takes the log
offline; recovery validates every record, cuts at the first bad one and says what it
dropped; version-1 logs are read and unknown versions refused; the flush policy's fsyncs;
the idempotent producers' state is rebuilt from the records (docs/durability.md)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from impl.node import faults
from impl.node.log import (
    LogDirFailure,
    LogFormatError,
    PartitionLog,
    Record,
    encode_record,
    encode_record_v1,
    read_segments,
    segment_header,
)
from impl.node.producer_state import ProducerStateTable, Verdict, classify, next_block


@pytest.fixture
def disk_faults(tmp_path: Path):
    """A broker-like process with disk faults installed for broker 0 of ``tmp_path``."""
    faults.install_disk_faults(tmp_path, 0)
    (tmp_path / "broker-0").mkdir(exist_ok=True)
    yield lambda **kw: faults.arm_disk_fault(tmp_path, 0, **kw)
    faults._disk_fault = None


def _segment(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def test_enospc_mid_append_leaves_no_fragment_and_the_log_refuses_every_later_write(
        tmp_path: Path, disk_faults) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    for i in range(3):
        log.append(0, f"v{i}".encode())
    size = _segment(tmp_path / "t-0").stat().st_size
    disk_faults(error=errno.ENOSPC, after_bytes=20)  # 20 bytes of the record, then a full disk
    with pytest.raises(LogDirFailure) as failed:
        log.append(0, b"x" * 1000)
    assert failed.value.errno == errno.ENOSPC
    assert _segment(tmp_path / "t-0").stat().st_size == size  # cut back to the last whole record
    assert log.leo == 3 and log.offline is not None
    with pytest.raises(LogDirFailure):  # the fault is gone, but the log stays offline
        log.append(0, b"after")
    assert _segment(tmp_path / "t-0").stat().st_size == size
    again = PartitionLog.open(tmp_path / "t-0")
    assert [r.value for r in again.records] == [b"v0", b"v1", b"v2"]
    assert again.recovery.dropped_bytes == 0


def test_a_failed_append_on_a_follower_is_refused_the_same_way(tmp_path: Path, disk_faults) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    disk_faults(error=errno.EIO, after_bytes=3)
    with pytest.raises(LogDirFailure):
        log.append_replicated(Record(0, 4, b"fetched", 7, 0))
    assert log.leo == 0
    assert read_segments(tmp_path / "t-0") == []


def test_recovery_names_the_file_offset_and_what_it_dropped(tmp_path: Path, capsys) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    for i in range(9):
        log.append(0, f"value-{i}".encode())
    log.close()
    seg = _segment(tmp_path / "t-0")
    data = bytearray(seg.read_bytes())
    one = len(encode_record(Record(0, 0, b"value-0")))
    data[len(segment_header()) + one + 20] ^= 0x01  # one bit, in record 1's body
    seg.write_bytes(bytes(data))
    again = PartitionLog.open(tmp_path / "t-0")
    assert again.leo == 1
    line = capsys.readouterr().err.strip()
    assert str(seg) in line and "at offset 1" in line and "CRC" in line
    assert f"dropping {8 * one} bytes" in line and "7 whole record(s) beyond" in line


def test_version_1_logs_are_read_and_continued_in_a_version_2_segment(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    d.mkdir()
    (d / f"{0:020d}.log").write_bytes(b"".join(encode_record_v1(Record(i, 0, f"old{i}".encode()))
                                               for i in range(2)))
    log = PartitionLog.open(d)
    assert [(r.offset, r.value, r.producer_id) for r in log.records] == [(0, b"old0", -1), (1, b"old1", -1)]
    log.append(1, b"new", producer_id=5, sequence=0)
    log.close()
    segments = sorted(d.glob("*.log"))
    assert [s.name for s in segments] == [f"{0:020d}.log", f"{2:020d}.log"]
    assert segments[1].read_bytes().startswith(segment_header())
    again = PartitionLog.open(d)
    assert [(r.value, r.producer_id, r.sequence) for r in again.records] == [
        (b"old0", -1, -1), (b"old1", -1, -1), (b"new", 5, 0)]


def test_a_segment_of_an_unknown_version_is_refused_with_one_line(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    d.mkdir()
    (d / f"{0:020d}.log").write_bytes(segment_header(9) + encode_record(Record(0, 0, b"?")))
    with pytest.raises(LogFormatError) as refused:
        PartitionLog.open(d)
    assert "version 9" in str(refused.value) and "\n" not in str(refused.value)


def test_flush_messages_fsyncs_after_every_n_records(tmp_path: Path, monkeypatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    log = PartitionLog.open(tmp_path / "t-0", flush_messages=3)
    for i in range(7):
        log.append(0, f"v{i}".encode())
    assert log.fsyncs == 2 and len(synced) == 2
    log.close()  # a clean close flushes the seventh
    assert log.fsyncs == 3


def test_the_default_policy_never_fsyncs_an_append(tmp_path: Path, monkeypatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    log = PartitionLog.open(tmp_path / "t-0")
    for i in range(50):
        log.append(0, f"v{i}".encode())
    assert synced == [] and log.fsyncs == 0


def test_flush_ms_fsyncs_once_the_interval_has_passed(tmp_path: Path, monkeypatch) -> None:
    log = PartitionLog.open(tmp_path / "t-0", flush_ms=50)
    log.append(0, b"a")
    assert log.fsyncs == 0
    log._last_flush -= 0.06  # 60 ms later
    assert log.maybe_flush() and log.fsyncs == 1


def test_producer_state_is_rebuilt_from_the_log_on_open_and_after_truncation(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    for seq in range(3):
        log.append(0, f"p7-{seq}".encode(), producer_id=7, sequence=seq)
    log.append(0, b"plain")
    log.append(1, b"p7-3", producer_id=7, sequence=3)
    log.close()
    again = PartitionLog.open(tmp_path / "t-0")
    assert again.producers.check(7, 1, 2).verdict is Verdict.DUPLICATE
    assert again.producers.check(7, 1, 2).base_offset == 1
    assert again.producers.check(7, 3, 1).base_offset == 4  # after the plain record
    assert again.producers.check(7, 4, 1).verdict is Verdict.APPEND
    again.truncate_to(2)
    assert again.producers.last_sequence(7) == 1
    assert again.producers.check(7, 2, 1).verdict is Verdict.APPEND


def test_the_sequence_rule() -> None:
    assert classify(-1, 0, 3, None).verdict is Verdict.APPEND
    assert classify(-1, 1, 1, None).verdict is Verdict.OUT_OF_ORDER  # an unknown producer starts at 0
    assert classify(4, 5, 2, None).verdict is Verdict.APPEND
    assert classify(4, 3, 2, 10).verdict is Verdict.DUPLICATE
    tail = classify(4, 3, 4, 9)  # the batch's first two records are in the log already
    assert (tail.verdict, tail.skip, tail.base_offset) == (Verdict.APPEND, 2, 9)
    assert classify(4, 7, 1, None).verdict is Verdict.OUT_OF_ORDER  # a gap
    table = ProducerStateTable()
    for off, seq in enumerate(range(10)):
        table.record(1, seq, off * 2)  # interleaved with another producer: one run per record
    assert table.check(1, 9, 1).base_offset == 18
    assert table.check(1, 0, 1).verdict is Verdict.DUPLICATE and table.check(1, 0, 1).base_offset is None


def test_producer_id_blocks_follow_each_other() -> None:
    start, end, data = next_block(None, 2)
    assert (start, end) == (0, 999)
    assert next_block(data, 1)[:2] == (1000, 1999)
    with pytest.raises(ValueError):
        next_block(b"garbage", 0)


def test_a_broker_opens_its_logs_with_the_configured_flush_policy(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from impl.node.broker.core import BrokerCore
    from impl.node.config import BrokerConfig

    argv = BrokerConfig(0, 9092, "zk:2181", tmp_path, flush_messages=1, flush_ms=250).to_argv()
    config = BrokerConfig.from_argv(argv)
    assert (config.flush_messages, config.flush_ms) == (1, 250)
    assert (BrokerConfig(0, 9092, "zk:2181", tmp_path).flush_messages,
            BrokerConfig(0, 9092, "zk:2181", tmp_path).flush_ms) == (0, 0)  # the default: off
    log = BrokerCore.open_log(SimpleNamespace(config=config), tmp_path / "t-0")  # type: ignore[arg-type]
    log.append(0, b"a")
    log.append(0, b"b")
    assert log.fsyncs == 2  # flush_messages=1: every record


def test_a_failed_batch_leaves_none_of_its_records(tmp_path: Path, disk_faults) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append(0, b"first")
    disk_faults(error=errno.ENOSPC, after_bytes=60)  # the batch's first record and a bit
    with pytest.raises(LogDirFailure):
        log.append_batch(0, [b"a" * 20, b"b" * 20, b"c" * 20], producer_id=3, base_sequence=0)
    assert [r.value for r in read_segments(tmp_path / "t-0")] == [b"first"]
    assert log.leo == 1 and log.producers.last_sequence(3) == -1
