"""The on-disk log: append/read, CRC, torn-tail recovery, truncation, HW and epoch checkpoints."""

from __future__ import annotations

from pathlib import Path

from impl.node.log import LeaderEpochCache, PartitionLog, Record, encode_record, segment_header


def _fill(log: PartitionLog, epochs: list[int]) -> None:
    for i, e in enumerate(epochs):
        log.append(e, f"v{i}".encode())


def test_appended_records_survive_reopen_with_offsets_epochs_and_hw(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    _fill(log, [0, 0, 1, 1, 3])
    log.set_hw(3)
    log.close()
    again = PartitionLog.open(tmp_path / "t-0")
    assert [(r.offset, r.leader_epoch, r.value) for r in again.records] == [
        (0, 0, b"v0"), (1, 0, b"v1"), (2, 1, b"v2"), (3, 1, b"v3"), (4, 3, b"v4")]
    assert again.hw == 3
    assert again.epochs.entries == [(0, 0), (1, 2), (3, 4)]
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0 0\n1 2\n3 4\n"


def test_torn_tail_is_dropped_on_recovery(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    _fill(log, [0, 0, 0])
    log.close()
    seg = next((tmp_path / "t-0").glob("*.log"))
    whole = encode_record(Record(3, 0, b"v3"))
    with open(seg, "ab") as f:
        f.write(whole[: len(whole) - 2])  # kill -9 in the middle of an append
    again = PartitionLog.open(tmp_path / "t-0")
    assert again.leo == 3
    assert again.recovered_bytes_dropped == len(whole) - 2
    again.append(0, b"v3")  # the log continues cleanly at the recovered end
    assert PartitionLog.open(tmp_path / "t-0").leo == 4


def test_corrupt_record_fails_its_crc_and_cuts_the_log_there(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    _fill(log, [0, 0, 0, 0])
    log.close()
    seg = next((tmp_path / "t-0").glob("*.log"))
    data = bytearray(seg.read_bytes())
    one = len(encode_record(Record(0, 0, b"v0")))
    head = len(segment_header())
    data[head + 2 * one + 12] ^= 0xFF  # flip a byte inside record 2's body
    seg.write_bytes(bytes(data))
    again = PartitionLog.open(tmp_path / "t-0")
    assert again.leo == 2
    assert seg.stat().st_size == head + 2 * one
    assert again.recovery.offset == 2 and again.recovery.records_beyond == 1


def test_segments_roll_and_truncation_deletes_later_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", segment_bytes=64)
    _fill(log, [0] * 10)
    assert len(list((tmp_path / "t-0").glob("*.log"))) > 2
    log.set_hw(8)
    assert log.truncate_to(3) == 7
    assert log.leo == 3 and log.hw == 3
    assert len(list((tmp_path / "t-0").glob("*.log"))) <= 2
    log.append(5, b"x")
    log.close()
    again = PartitionLog.open(tmp_path / "t-0", segment_bytes=64)
    assert [r.value for r in again.records] == [b"v0", b"v1", b"v2", b"x"]
    assert again.epochs.entries == [(0, 0), (5, 3)]


def test_hw_checkpoint_is_capped_at_the_recovered_leo(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    _fill(log, [0, 0])
    log.set_hw(2)
    log.close()
    (tmp_path / "t-0" / "hw-checkpoint").write_text("7\n")
    assert PartitionLog.open(tmp_path / "t-0").hw == 2


def test_epoch_cache_end_offsets_follow_kip_101_and_279() -> None:
    cache = LeaderEpochCache()
    for epoch, start in [(0, 0), (2, 5), (4, 9)]:
        cache.assign(epoch, start)
    assert cache.end_offset_for(0, 12) == (0, 5)
    assert cache.end_offset_for(1, 12) == (0, 5)  # unknown epoch: the largest one below
    assert cache.end_offset_for(2, 12) == (2, 9)
    assert cache.end_offset_for(4, 12) == (4, 12)
    assert cache.end_offset_for(7, 12) == (4, 12)
    cache.truncate_from(9)
    assert cache.entries == [(0, 0), (2, 5)]
    assert not cache.assign(1, 10)  # epochs only grow


def test_leader_epoch_announced_without_records_is_superseded_by_an_older_fetched_one(
        tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    _fill(log, [1])
    log.assign_epoch(3)  # became leader at epoch 3, wrote nothing
    log.append_replicated(Record(1, 2, b"from-new-leader"))
    assert log.epochs.entries == [(1, 0), (2, 1)]
