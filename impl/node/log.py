"""A replica's log on disk: segments of CRC-checked records, HW checkpoint, leader-epoch cache.

Seed 000's ``Replica`` has a ``log``, an ``hw`` ("offset of the last committed message") and
an ``leo``; KIP-101 adds the leader-epoch cache (epoch -> start offset) that the ``kip320``
truncation rule consults.  Layout of one partition directory ``<log-dir>/<topic>-<partition>``::

    00000000000000000000.log    segment, named by its base offset (rolled at segment_bytes)
    hw-checkpoint               the high watermark, rewritten at each change (tmp + rename)
    leader-epoch-checkpoint     "epoch start_offset" per line, rewritten atomically
    partition.metadata          "topic_id: N": the incarnation of the topic the log belongs to
                                (KIP-516's file; absent in a log written before topic ids)

A record on disk is ``u32 body_len | u32 crc32(body) | body`` with
``body = i64 offset | i32 leader_epoch | payload``.  Recovery (:meth:`PartitionLog.open`)
reads every segment in order and stops at the first torn or corrupt record or offset gap,
truncating the file there and deleting any later segments: a ``kill -9`` mid-append loses
only the unacknowledged tail.  The epoch cache is rebuilt from the recovered records (the
records are the authority; the checkpoint is the seed's persisted form of it).
"""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

_HEAD = struct.Struct(">II")
_BODY = struct.Struct(">qi")
UNDEFINED_EPOCH = -1
METADATA_FILE = "partition.metadata"


@dataclass(frozen=True)
class Record:
    offset: int
    leader_epoch: int
    value: bytes


def encode_record(rec: Record) -> bytes:
    body = _BODY.pack(rec.offset, rec.leader_epoch) + rec.value
    return _HEAD.pack(len(body), zlib.crc32(body)) + body


def _atomic_write(path: Path, text: str) -> None:
    """Write-then-rename: a reader (or a restart after kill -9) sees the old or the new file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


class LeaderEpochCache:
    """Ordered (leader_epoch, start_offset) entries: where each epoch's records begin."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int]] = []

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (only if it is a newer epoch)."""
        if self.entries and self.entries[-1][0] >= epoch:
            return False
        self.entries.append((epoch, start_offset))
        return True

    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def start_offset(self, epoch: int) -> int | None:
        for e, start in self.entries:
            if e == epoch:
                return start
        return None

    def end_offset_for(self, epoch: int, leo: int) -> tuple[int, int]:
        """KIP-101/279 OffsetsForLeaderEpoch: (largest epoch <= ``epoch``, its end offset).

        The end offset is the start of the first later epoch, or the LEO if there is none.
        If no epoch <= ``epoch`` is known, the answer is (UNDEFINED_EPOCH, start of the log's
        first epoch) -- nothing before it can be shared.
        """
        found = UNDEFINED_EPOCH
        for i, (e, _start) in enumerate(self.entries):
            if e <= epoch:
                found = e
            else:
                return (found, self.entries[i][1] if found != UNDEFINED_EPOCH else self.entries[0][1])
        return (found, leo) if found != UNDEFINED_EPOCH else (UNDEFINED_EPOCH, leo if not self.entries else self.entries[0][1])

    def truncate_from(self, offset: int) -> None:
        """Drop epochs that start at or after ``offset`` (the log was truncated to it)."""
        self.entries = [(e, s) for e, s in self.entries if s < offset]


class PartitionLog:
    """The local log of one replica; not thread-safe (the broker's event loop owns it)."""

    def __init__(self, directory: Path, segment_bytes: int = 1 << 20) -> None:
        self.dir = directory
        self.segment_bytes = segment_bytes
        self.records: list[Record] = []
        self._positions: list[tuple[Path, int]] = []  # (segment, byte position) per record
        self.epochs = LeaderEpochCache()
        self.hw = 0
        self.topic_id: int | None = None  # see impl.node.topic_identity; None: not recorded
        self._hw_dirty = False
        self.recovered_bytes_dropped = 0
        self._active: Path | None = None
        self._fh = None

    # -- opening and recovery -------------------------------------------------------------
    @classmethod
    def open(cls, directory: str | os.PathLike[str], segment_bytes: int = 1 << 20) -> PartitionLog:
        log = cls(Path(directory), segment_bytes)
        log.dir.mkdir(parents=True, exist_ok=True)
        log._recover()
        return log

    def _segments(self) -> list[Path]:
        return sorted(self.dir.glob("*.log"))

    def _recover(self) -> None:
        segments = self._segments()
        expected = 0
        torn = False
        for seg in segments:
            if torn:
                self.recovered_bytes_dropped += seg.stat().st_size
                seg.unlink()
                continue
            data = seg.read_bytes()
            pos = 0
            while pos < len(data):
                rec = _parse_at(data, pos, expected)
                if rec is None:
                    torn = True
                    break
                record, size = rec
                self.records.append(record)
                self._positions.append((seg, pos))
                self.epochs.assign(record.leader_epoch, record.offset)
                expected += 1
                pos += size
            if torn:
                self.recovered_bytes_dropped += len(data) - pos
                with open(seg, "r+b") as f:
                    f.truncate(pos)
        hw_file = self.dir / "hw-checkpoint"
        if hw_file.exists():
            try:
                self.hw = min(int(hw_file.read_text().strip() or 0), self.leo)
            except ValueError:
                self.hw = 0
        self.topic_id = _read_topic_id(self.dir / METADATA_FILE)
        self._write_epochs()
        existing = self._segments()
        self._active = existing[-1] if existing else None

    # -- reading --------------------------------------------------------------------------
    @property
    def leo(self) -> int:
        return len(self.records)

    def log_end_epoch(self) -> int:
        return self.records[-1].leader_epoch if self.records else UNDEFINED_EPOCH

    def read(self, offset: int, max_records: int, upto: int | None = None) -> list[Record]:
        end = self.leo if upto is None else min(upto, self.leo)
        if offset >= end or offset < 0:
            return []
        return self.records[offset:min(end, offset + max_records)]

    # -- writing --------------------------------------------------------------------------
    def append(self, leader_epoch: int, value: bytes) -> Record:
        rec = Record(self.leo, leader_epoch, value)
        self._write(rec)
        return rec

    def append_replicated(self, rec: Record) -> None:
        """A follower appends a record fetched from its leader, at exactly its LEO."""
        if rec.offset != self.leo:
            raise ValueError(f"record offset {rec.offset} is not the LEO {self.leo}")
        self._write(rec)

    def _write(self, rec: Record) -> None:
        if self._active is None or self._active.stat().st_size >= self.segment_bytes:
            self._close_fh()
            self._active = self.dir / f"{rec.offset:020d}.log"
            self._active.touch()
        if self._fh is None:
            self._fh = open(self._active, "ab")
        pos = self._fh.tell()
        self._fh.write(encode_record(rec))
        self._fh.flush()
        self.records.append(rec)
        self._positions.append((self._active, pos))
        changed = False
        while self.epochs.entries and self.epochs.entries[-1][0] > rec.leader_epoch:
            self.epochs.entries.pop()  # an epoch announced but never written is superseded
            changed = True
        if self.epochs.assign(rec.leader_epoch, rec.offset) or changed:
            self._write_epochs()

    def truncate_to(self, offset: int) -> int:
        """Drop every record at or after ``offset``; returns how many were dropped."""
        offset = max(0, offset)
        if offset >= self.leo:
            return 0
        dropped = self.leo - offset
        self._close_fh()
        seg, pos = self._positions[offset]
        for later in self._segments():
            if later > seg:
                later.unlink()
        with open(seg, "r+b") as f:
            f.truncate(pos)
        del self.records[offset:]
        del self._positions[offset:]
        self._active = seg
        self.epochs.truncate_from(offset)
        self._write_epochs()
        if self.hw > offset:
            self.set_hw(offset)
            self.checkpoint_hw()  # never leave a checkpoint above the log end
        return dropped

    def forget_epochs_from(self, offset: int) -> None:
        """Drop the epochs that start at or after ``offset`` even if the log holds no record
        there (Kafka's ``truncateFromEnd``): a follower truncating in rounds asks next with
        the latest epoch it keeps."""
        before = list(self.epochs.entries)
        self.epochs.truncate_from(offset)
        if self.epochs.entries != before:
            self._write_epochs()

    def set_hw(self, hw: int) -> None:
        """Move the HW and checkpoint it at once (write + rename, no fsync: a killed process
        loses nothing the kernel has; the model treats the HW as durable, and so do we)."""
        self.hw = hw
        self._hw_dirty = True
        self.checkpoint_hw()

    def checkpoint_hw(self) -> None:
        if self._hw_dirty and self.dir.exists():
            _atomic_write(self.dir / "hw-checkpoint", f"{self.hw}\n")
            self._hw_dirty = False

    def set_topic_id(self, topic_id: int) -> None:
        """Record which incarnation of the topic this log belongs to (written atomically)."""
        _atomic_write(self.dir / METADATA_FILE, f"topic_id: {topic_id}\n")
        self.topic_id = topic_id

    def assign_epoch(self, epoch: int) -> None:
        """A new leader records the start offset of its epoch (KIP-101)."""
        if self.epochs.assign(epoch, self.leo):
            self._write_epochs()

    def _write_epochs(self) -> None:
        _atomic_write(self.dir / "leader-epoch-checkpoint",
                      "".join(f"{e} {s}\n" for e, s in self.epochs.entries))

    def _close_fh(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def close(self) -> None:
        self.checkpoint_hw()
        self._close_fh()

    def delete(self) -> None:
        self._close_fh()
        shutil.rmtree(self.dir, ignore_errors=True)


def _read_topic_id(path: Path) -> int | None:
    """The ``topic_id`` of a ``partition.metadata`` file; None if there is none (or it is
    unreadable, which :mod:`impl.node.topic_identity` treats as a log from before ids)."""
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "topic_id":
                return int(value.strip())
    except (OSError, ValueError):
        return None
    return None


def _parse_at(data: bytes, pos: int, expected_offset: int) -> tuple[Record, int] | None:
    if pos + _HEAD.size > len(data):
        return None
    length, crc = _HEAD.unpack_from(data, pos)
    start = pos + _HEAD.size
    if length < _BODY.size or start + length > len(data):
        return None
    body = data[start:start + length]
    if zlib.crc32(body) != crc:
        return None
    offset, epoch = _BODY.unpack_from(body, 0)
    if offset != expected_offset:
        return None
    return Record(offset, epoch, bytes(body[_BODY.size:])), _HEAD.size + length
