"""A replica's log on disk: segments of CRC-checked records, HW checkpoint, leader-epoch cache.

Seed 000's ``Replica`` has a ``log``, an ``hw`` ("offset of the last committed message") and
an ``leo``; KIP-101 adds the leader-epoch cache (epoch -> start offset) that the ``kip320``
truncation rule consults.  Layout of one partition directory ``<log-dir>/<topic>-<partition>``::

    00000000000000000000.log    segment, named by its base offset (rolled at segment_bytes)
    hw-checkpoint               the high watermark, rewritten at each change (tmp + rename)
    leader-epoch-checkpoint     "epoch start_offset" per line, rewritten atomically
    partition.metadata          "topic_id: N": the incarnation of the topic the log belongs to
                                (KIP-516's file; absent in a log written before topic ids)

**Format, version 2** (written since the idempotent producer): a segment starts with an
8-byte header ``b"EPLOG" | u8 version | u16 0`` and holds records
``u32 body_len | u32 crc32(body) | body`` with
``body = i64 offset | i32 leader_epoch | i64 producer_id | i32 sequence | payload``
(``producer_id`` -1: not written by an idempotent producer).  **Version 1** segments have no
header and ``body = i64 offset | i32 leader_epoch | payload``; they are read as they are (their
records have no producer id), and a log that holds one gets a new version-2 segment at its
next append.  A segment of a newer version is refused with one line
(:class:`LogFormatError`): this broker cannot know what its bytes mean.

**Recovery** (:meth:`PartitionLog.open`) reads every segment in order and stops at the first
torn or corrupt record (its CRC fails) or offset gap, truncating the file there and deleting
any later segments: a ``kill -9`` mid-append loses only the unacknowledged tail.  When it
drops anything it says so, on one line naming the file, the offset, the byte position, the
bytes dropped and how many whole records lay beyond the damage (:attr:`recovery`) -- a
corrupt byte early in a segment drops every record after it, committed or not, and that must
never be silent.  The replica then gets them back from its leader (docs/durability.md).  The
epoch cache is rebuilt from the recovered records (the records are the authority; the
checkpoint is the seed's persisted form of it), and so is the idempotent producers' state
(:mod:`impl.node.producer_state`).

**An append lands whole or not at all** (:meth:`PartitionLog.append`): the record's bytes are
written with unbuffered ``os.write`` calls; if one fails (ENOSPC, EIO: any ``OSError``) the
segment is cut back to where the record began, the record is not added, and the log goes
*offline*: it raises :class:`LogDirFailure` now and at every later write, so nothing is ever
appended after a fragment.  What the broker does then is :mod:`impl.node.broker.log_dir`.

**Flush policy** (Kafka's ``flush.messages`` / ``flush.ms``): ``flush_messages`` N > 0 fsyncs
the segment after every N appended records, ``flush_ms`` T > 0 once T ms have passed since
the last fsync (checked at each append and by the broker's periodic checkpoint); 0 turns
either off.  The default is both off, as in Kafka and as the design reasons about acks=all:
a record is committed once every ISR replica has it, in memory or on disk -- durability comes
from the copies on other brokers, not from fsync.  A clean close fsyncs what is unflushed.
"""

from __future__ import annotations

import errno as errno_codes
import os
import shutil
import struct
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from impl.node import faults
from impl.node.layout import PRIVATE_FILE_MODE, PartitionDir, write_atomic
from impl.node.producer_state import NO_PRODUCER, ProducerStateTable

_HEAD = struct.Struct(">II")
_BODY_V1 = struct.Struct(">qi")
_BODY = struct.Struct(">qiqi")
_SEGMENT_HEADER = struct.Struct(">5sBH")
SEGMENT_MAGIC = b"EPLOG"
FORMAT_VERSION = 2
UNDEFINED_EPOCH = -1


class LogFormatError(RuntimeError):
    """A segment written in a format this broker does not read (one line)."""


class LogDirFailure(OSError):
    """A write to the log failed (ENOSPC, EIO, ...): the log is offline from now on."""


@dataclass(frozen=True)
class Record:
    offset: int
    leader_epoch: int
    value: bytes
    producer_id: int = NO_PRODUCER  # the idempotent producer that wrote it (KIP-98), or -1
    sequence: int = -1  # its sequence number in that producer's stream for this partition


@dataclass
class RecoveryReport:
    """What recovery dropped from one log (nothing if ``dropped_bytes`` is 0)."""

    segment: Path | None = None
    offset: int = 0  # the offset of the first record dropped
    position: int = 0  # its byte position in ``segment``
    reason: str = ""
    dropped_bytes: int = 0
    records_beyond: int = 0  # whole, CRC-valid records found past the damage, dropped too
    segments_deleted: list[str] = field(default_factory=list)

    def line(self, directory: Path) -> str:
        later = f", and {len(self.segments_deleted)} later segment(s)" if self.segments_deleted else ""
        return (f"log recovery: {self.segment}: {self.reason} at offset {self.offset} (byte "
                f"{self.position}); truncated there, dropping {self.dropped_bytes} bytes "
                f"({self.records_beyond} whole record(s) beyond the damage{later}) from "
                f"{directory.name}; they must come back from the partition's leader")


def encode_record(rec: Record) -> bytes:
    body = _BODY.pack(rec.offset, rec.leader_epoch, rec.producer_id, rec.sequence) + rec.value
    return _HEAD.pack(len(body), zlib.crc32(body)) + body


def encode_record_v1(rec: Record) -> bytes:
    """A record as version 1 wrote it (tests of reading old logs)."""
    body = _BODY_V1.pack(rec.offset, rec.leader_epoch) + rec.value
    return _HEAD.pack(len(body), zlib.crc32(body)) + body


def segment_header(version: int = FORMAT_VERSION) -> bytes:
    return _SEGMENT_HEADER.pack(SEGMENT_MAGIC, version, 0)


def segment_version(data: bytes, path: Path) -> tuple[int, int]:
    """(format version, position of the first record) of a segment's bytes; LogFormatError
    for a version this code does not read.  No header: version 1 (its first bytes are a
    record length, whose top byte is 0 for any record we ever allowed)."""
    if data[:len(SEGMENT_MAGIC)] != SEGMENT_MAGIC:
        return 1, 0
    if len(data) < _SEGMENT_HEADER.size:
        return FORMAT_VERSION, len(data)  # a header torn at creation: an empty segment
    _, version, _ = _SEGMENT_HEADER.unpack_from(data, 0)
    if version != FORMAT_VERSION:
        raise LogFormatError(f"{path}: log format version {version} is not one this broker "
                             f"reads (1 or {FORMAT_VERSION}); move the directory away or use "
                             f"the broker that wrote it")
    return version, _SEGMENT_HEADER.size


def read_segments(directory: Path) -> list[Record]:
    """Every record of a partition directory's segments, read-only, up to the first torn
    or corrupt one (what recovery would keep; used by harnesses to read a stopped log)."""
    out: list[Record] = []
    for seg in PartitionDir(Path(directory)).segments():
        data = seg.read_bytes()
        version, pos = segment_version(data, seg)
        while pos < len(data):
            parsed = _parse_at(data, pos, len(out), version)
            if parsed is None:
                return out
            rec, size = parsed
            out.append(rec)
            pos += size
    return out


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

    def __init__(self, directory: Path, segment_bytes: int = 1 << 20, flush_messages: int = 0,
                 flush_ms: int = 0) -> None:
        self.dir = directory
        self.files = PartitionDir(directory)
        self.segment_bytes = segment_bytes
        self.flush_messages, self.flush_ms = flush_messages, flush_ms
        self.records: list[Record] = []
        self._positions: list[tuple[Path, int]] = []  # (segment, byte position) per record
        self.epochs = LeaderEpochCache()
        self.producers = ProducerStateTable()
        self.hw = 0
        self.topic_id: int | None = None  # see impl.node.topic_identity; None: not recorded
        self._hw_dirty = False
        self.recovered_bytes_dropped = 0
        self.recovery = RecoveryReport()
        self.offline: OSError | None = None  # the write failure that took the log offline
        self.fsyncs = 0  # how many times the segment was fsynced (the flush policy's effect)
        self._unflushed = 0
        self._last_flush = time.monotonic()
        self._active: Path | None = None
        self._active_size = 0
        self._fd: int | None = None

    # -- opening and recovery -------------------------------------------------------------
    @classmethod
    def open(cls, directory: str | os.PathLike[str], segment_bytes: int = 1 << 20,
             flush_messages: int = 0, flush_ms: int = 0) -> PartitionLog:
        log = cls(Path(directory), segment_bytes, flush_messages, flush_ms)
        log.dir.mkdir(parents=True, exist_ok=True)
        log._recover()
        return log

    def _segments(self) -> list[Path]:
        return self.files.segments()

    def _recover(self) -> None:
        segments = self._segments()
        expected = 0
        torn = False
        report = self.recovery
        version = FORMAT_VERSION
        for seg in segments:
            data = seg.read_bytes()
            if torn:
                report.dropped_bytes += len(data)
                report.records_beyond += _count_whole(data, seg)
                report.segments_deleted.append(seg.name)
                seg.unlink()
                continue
            version, pos = segment_version(data, seg)
            while pos < len(data):
                rec = _parse_at(data, pos, expected, version)
                if rec is None:
                    torn = True
                    report.segment, report.offset, report.position = seg, expected, pos
                    report.reason = _damage(data, pos, expected, version)
                    report.records_beyond += _count_whole(data, seg, _skip(data, pos), version)
                    break
                record, size = rec
                self.records.append(record)
                self._positions.append((seg, pos))
                self.epochs.assign(record.leader_epoch, record.offset)
                self.producers.record(record.producer_id, record.sequence, record.offset)
                expected += 1
                pos += size
            if torn:
                report.dropped_bytes += len(data) - pos
                with open(seg, "r+b") as f:
                    f.truncate(pos)
        self.recovered_bytes_dropped = report.dropped_bytes
        hw_file = self.files.hw_checkpoint
        if hw_file.exists():
            try:
                self.hw = min(int(hw_file.read_text().strip() or 0), self.leo)
            except ValueError:
                self.hw = 0
        if report.dropped_bytes:
            print(report.line(self.dir), file=sys.stderr, flush=True)
        self.topic_id = _read_topic_id(self.files.metadata)
        self._write_epochs()
        existing = self._segments()
        # appends continue in the last segment only if it is of the current format
        self._active = existing[-1] if existing and version == FORMAT_VERSION else None
        self._active_size = self._active.stat().st_size if self._active is not None else 0

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
    def append(self, leader_epoch: int, value: bytes, producer_id: int = NO_PRODUCER,
               sequence: int = -1) -> Record:
        """Append one record at the LEO; :class:`LogDirFailure` if it cannot be written whole
        (then nothing of it remains, and the log is offline)."""
        return self.append_batch(leader_epoch, [value], producer_id, sequence)[0]

    def append_batch(self, leader_epoch: int, values: list[bytes], producer_id: int = NO_PRODUCER,
                     base_sequence: int = -1) -> list[Record]:
        """Append ``values`` at the LEO in one write -- every record or none
        (:class:`LogDirFailure`); an idempotent producer's are numbered from ``base_sequence``."""
        recs = [Record(self.leo + i, leader_epoch, v, producer_id,
                       base_sequence + i if producer_id != NO_PRODUCER else -1)
                for i, v in enumerate(values)]
        self._write(recs)
        return recs

    def append_replicated(self, rec: Record) -> None:
        """A follower appends a record fetched from its leader, at exactly its LEO."""
        if rec.offset != self.leo:
            raise ValueError(f"record offset {rec.offset} is not the LEO {self.leo}")
        self._write([rec])

    def _write(self, recs: list[Record]) -> None:
        if self.offline is not None:
            raise LogDirFailure(self.offline.errno, f"log {self.dir.name} is offline after "
                                f"a failed write ({self.offline.strerror})")
        if not recs:
            return
        encoded = [encode_record(rec) for rec in recs]
        start = self._active_size
        try:
            if self._active is None or self._active_size >= self.segment_bytes:
                self._roll(recs[0].offset)
                start = self._active_size
            assert self._active is not None
            if self._fd is None:
                self._fd = os.open(self._active, os.O_WRONLY | os.O_APPEND)
            _write_all(self._fd, b"".join(encoded))
        except OSError as exc:
            self._go_offline(start, exc)
            raise LogDirFailure(exc.errno or errno_codes.EIO,
                                f"append to {self.dir.name} at offset {recs[0].offset} failed "
                                f"({exc.strerror or exc}); the log is offline") from exc
        pos = start
        changed = False
        for rec, data in zip(recs, encoded, strict=True):
            self.records.append(rec)
            self._positions.append((self._active, pos))
            pos += len(data)
            self.producers.record(rec.producer_id, rec.sequence, rec.offset)
            while self.epochs.entries and self.epochs.entries[-1][0] > rec.leader_epoch:
                self.epochs.entries.pop()  # an epoch announced but never written is superseded
                changed = True
            changed = self.epochs.assign(rec.leader_epoch, rec.offset) or changed
        self._active_size = pos
        if changed:
            self._write_epochs()
        self._unflushed += len(recs)
        self.maybe_flush()

    def _roll(self, base_offset: int) -> None:
        """Start a new segment at ``base_offset`` (with the format's header)."""
        self._close_fd()
        seg = self.files.segment(base_offset)
        fd = os.open(seg, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
        try:
            _write_all(fd, segment_header())
        except OSError:
            os.close(fd)
            seg.unlink(missing_ok=True)
            raise
        self._active, self._fd, self._active_size = seg, fd, _SEGMENT_HEADER.size

    def _go_offline(self, start: int, exc: OSError) -> None:
        """A write failed: cut the segment back to ``start`` (the end of the last whole
        record) so no fragment stays behind, and refuse every later write."""
        self.offline = exc
        try:
            if self._fd is not None:
                os.ftruncate(self._fd, start)
            elif self._active is not None and self._active.exists():
                os.truncate(self._active, start)
        except OSError as again:  # the disk refuses even that: recovery will cut it (CRC)
            print(f"log {self.dir}: could not cut a failed append back to byte {start}: "
                  f"{again}", file=sys.stderr, flush=True)
        self._close_fd()

    # -- the flush policy -----------------------------------------------------------------
    def maybe_flush(self) -> bool:
        """fsync if the policy says it is due (``flush_messages`` records or ``flush_ms``
        milliseconds since the last one); True if it did."""
        if not self._unflushed or self._fd is None:
            return False
        due = (self.flush_messages > 0 and self._unflushed >= self.flush_messages) or \
            (self.flush_ms > 0 and (time.monotonic() - self._last_flush) * 1000 >= self.flush_ms)
        if due:
            self.flush()
        return due

    def flush(self) -> None:
        if self._fd is not None and self._unflushed:
            os.fsync(self._fd)
            self.fsyncs += 1
        self._unflushed = 0
        self._last_flush = time.monotonic()

    def truncate_to(self, offset: int) -> int:
        """Drop every record at or after ``offset``; returns how many were dropped."""
        offset = max(0, offset)
        if offset >= self.leo:
            return 0
        dropped = self.leo - offset
        self._close_fd()
        seg, pos = self._positions[offset]
        for later in self._segments():
            if later > seg:
                later.unlink()
        with open(seg, "r+b") as f:
            f.truncate(pos)
        del self.records[offset:]
        del self._positions[offset:]
        # a version-1 segment is not appended to (the next append rolls a new one)
        with open(seg, "rb") as f:
            self._active = seg if f.read(len(SEGMENT_MAGIC)) == SEGMENT_MAGIC else None
        self._active_size = pos
        self.producers.rebuild(self.records)
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
            write_atomic(self.files.hw_checkpoint, f"{self.hw}\n")
            self._hw_dirty = False

    def set_topic_id(self, topic_id: int) -> None:
        """Record which incarnation of the topic this log belongs to (written atomically)."""
        write_atomic(self.files.metadata, f"topic_id: {topic_id}\n")
        self.topic_id = topic_id

    def assign_epoch(self, epoch: int) -> None:
        """A new leader records the start offset of its epoch (KIP-101)."""
        if self.epochs.assign(epoch, self.leo):
            self._write_epochs()

    def _write_epochs(self) -> None:
        write_atomic(self.files.leader_epoch_checkpoint,
                      "".join(f"{e} {s}\n" for e, s in self.epochs.entries))

    def _close_fd(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def close(self) -> None:
        self.checkpoint_hw()
        if self.offline is None:
            try:
                self.flush()  # a clean stop leaves nothing unflushed
            except OSError:
                pass
        self._close_fd()

    def delete(self) -> None:
        self._close_fd()
        shutil.rmtree(self.dir, ignore_errors=True)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte or raise: ``os.write`` may write part of a buffer (a disk filling
    up), and the next call then fails.  A harness may inject that failure
    (:func:`impl.node.faults.disk_fault`): the first ``after_bytes`` bytes are written, then
    the error is raised, as a full disk would."""
    view = memoryview(data)
    fault = faults.disk_fault()
    if fault is not None:
        code, after = fault
        if after < len(view):
            while after > 0:
                n = os.write(fd, view[:after])
                view, after = view[n:], after - n
            raise OSError(code, os.strerror(code))
    while view:
        n = os.write(fd, view)
        view = view[n:]


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


def _parse_at(data: bytes, pos: int, expected_offset: int,
              version: int = FORMAT_VERSION) -> tuple[Record, int] | None:
    """The record at ``pos`` and its size, or None if it is torn, corrupt or out of order."""
    if pos + _HEAD.size > len(data):
        return None
    length, crc = _HEAD.unpack_from(data, pos)
    start = pos + _HEAD.size
    fixed = _BODY if version >= 2 else _BODY_V1
    if length < fixed.size or start + length > len(data):
        return None
    body = data[start:start + length]
    if zlib.crc32(body) != crc:
        return None
    if version >= 2:
        offset, epoch, producer_id, sequence = _BODY.unpack_from(body, 0)
    else:
        (offset, epoch), producer_id, sequence = _BODY_V1.unpack_from(body, 0), NO_PRODUCER, -1
    if offset != expected_offset:
        return None
    return Record(offset, epoch, bytes(body[fixed.size:]), producer_id, sequence), _HEAD.size + length


def _damage(data: bytes, pos: int, expected: int, version: int) -> str:
    """Why the record at ``pos`` is not accepted, in words (the recovery line)."""
    if pos + _HEAD.size > len(data):
        return "a torn record header"
    length, crc = _HEAD.unpack_from(data, pos)
    fixed = _BODY if version >= 2 else _BODY_V1
    if length < fixed.size or pos + _HEAD.size + length > len(data):
        return "a torn record (or a corrupt length)"
    body = data[pos + _HEAD.size:pos + _HEAD.size + length]
    if zlib.crc32(body) != crc:
        return "a record whose CRC does not match"
    return f"an offset gap (found {fixed.unpack_from(body, 0)[0]})"


def _skip(data: bytes, pos: int) -> int:
    """The position after the damaged record at ``pos`` if its length field can be believed
    (it fits the segment), else the end: the count of records beyond is best effort."""
    if pos + _HEAD.size > len(data):
        return len(data)
    length, _ = _HEAD.unpack_from(data, pos)
    end = pos + _HEAD.size + length
    return end if end <= len(data) else len(data)


def _count_whole(data: bytes, seg: Path, pos: int | None = None, version: int | None = None) -> int:
    """How many CRC-valid records follow each other from ``pos`` (a segment's start if
    None): the records recovery drops along with the damage."""
    if pos is None or version is None:
        try:
            version, pos = segment_version(data, seg)
        except LogFormatError:
            return 0
    n = 0
    while pos < len(data):
        if pos + _HEAD.size > len(data):
            break
        length, crc = _HEAD.unpack_from(data, pos)
        end = pos + _HEAD.size + length
        if end > len(data) or zlib.crc32(data[pos + _HEAD.size:end]) != crc:
            break
        n += 1
        pos = end
    return n
