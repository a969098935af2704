"""A replica's log on disk: segments of CRC-checked records with offset indexes, HW
checkpoint, leader-epoch cache, retention.

Seed 000's ``Replica`` has a ``log``, an ``hw`` ("offset of the last committed message") and
an ``leo``; KIP-101 adds the leader-epoch cache (epoch -> start offset) that the ``kip320``
truncation rule consults.  Layout of one partition directory ``<log-dir>/<topic>-<partition>``
(every name from :mod:`impl.node.layout`)::

    00000000000000000000.log    segment, named by its base offset (rolled at segment_bytes)
    00000000000000000000.index  its sparse offset index (impl.node.segment)
    hw-checkpoint               the high watermark, rewritten at each change (tmp + rename)
    leader-epoch-checkpoint     "epoch start_offset" per line, rewritten atomically
    log-start-offset-checkpoint the log start offset, once retention has moved it
    partition.metadata          "topic_id: N": the incarnation of the topic the log belongs to
                                (KIP-516's file; absent in a log written before topic ids)

The record and segment format is :mod:`impl.node.segment`'s.  **The records live on disk
only**: the log keeps a few numbers per segment, the active segment's index entries, the
epoch cache and the idempotent producers' table -- never a list of its records -- so a
broker holds more data than it has memory.  A read finds its segment by base offset, its
byte position by the segment's index, and scans forward a few KiB (the OS page cache does
the caching).  A log that was version 1 (no header) is read as it is and gets a new
version-2 segment at its next append.

**Recovery** (:meth:`PartitionLog.open`) reads every segment in order, a chunk at a time, and
stops at the first torn or corrupt record (its CRC fails) or offset gap, truncating the file
there and deleting any later segments: a ``kill -9`` mid-append loses only the unacknowledged
tail.  When it drops anything it says so, on one line naming the file, the offset, the byte
position, the bytes dropped and how many whole records lay beyond the damage
(:attr:`recovery`) -- a corrupt byte early in a segment drops every record after it,
committed or not, and that must never be silent.  The replica then gets them back from its
leader (docs/durability.md).  The epoch cache, the idempotent producers' state
(:mod:`impl.node.producer_state`) and each segment's offset index are rebuilt from the
recovered records (the records are the authority; an index file that is missing or differs
is rewritten).

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

**Retention** (Kafka's ``log.retention.bytes`` / ``log.retention.ms``, -1 = off, the
default): :meth:`PartitionLog.apply_retention` deletes whole old segments -- never the
active one, and only segments wholly below the high watermark -- while the log is larger
than ``retention_bytes`` or the segment was last written more than ``retention_ms`` ago.
The **log start offset** follows (persisted); a read below it is OFFSET_OUT_OF_RANGE.  The
model knows no retention: a record it deleted is not lost, and judged runs keep it off
(docs/conformance.md).
"""

from __future__ import annotations

import bisect
import contextlib
import errno as errno_codes
import os
import shutil
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from impl.node import faults
from impl.node.layout import PRIVATE_FILE_MODE, PartitionDir, write_atomic
from impl.node.producer_state import NO_PRODUCER, ProducerStateTable
from impl.node.segment import (
    FORMAT_VERSION,
    HEADER_SIZE,
    INDEX_INTERVAL_BYTES,
    LogFormatError,
    Record,
    Segment,
    count_whole,
    damage,
    encode_record,
    encode_record_v1,
    index_bytes,
    read_index,
    read_segments,
    scan,
    segment_header,
    segment_version,
    skip,
)

__all__ = ["LeaderEpochCache", "LogDirFailure", "LogFormatError", "PartitionLog", "Record",
           "RecoveryReport", "UNDEFINED_EPOCH", "encode_record", "encode_record_v1",
           "read_segments", "segment_header"]

UNDEFINED_EPOCH = -1
RETENTION_OFF = -1
_INDEXES_CACHED = 8  # closed segments whose index entries a log keeps loaded


class LogDirFailure(OSError):
    """A write to the log failed (ENOSPC, EIO, ...): the log is offline from now on."""


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


    def truncate_from_start(self, offset: int) -> None:
        """The log now starts at ``offset`` (retention): the epoch in force there starts
        there, the epochs wholly before it are gone (Kafka's ``truncateFromStart``)."""
        before = [e for e, s in self.entries if s <= offset]
        later = [(e, s) for e, s in self.entries if s > offset]
        self.entries = ([(before[-1], offset)] if before else []) + later


class PartitionLog:
    """The local log of one replica; not thread-safe (the broker's event loop owns it)."""

    def __init__(self, directory: Path, segment_bytes: int = 1 << 20, flush_messages: int = 0,
                 flush_ms: int = 0, retention_bytes: int = RETENTION_OFF,
                 retention_ms: int = RETENTION_OFF,
                 index_interval_bytes: int = INDEX_INTERVAL_BYTES) -> None:
        self.dir = directory
        self.files = PartitionDir(directory)
        self.segment_bytes = segment_bytes
        self.flush_messages, self.flush_ms = flush_messages, flush_ms
        self.retention_bytes, self.retention_ms = retention_bytes, retention_ms
        self.index_interval_bytes = index_interval_bytes
        self.segments: list[Segment] = []  # in offset order; the last is the active one
        self._bases: list[int] = []  # their base offsets (bisected by reads)
        self._indexes: OrderedDict[int, list[tuple[int, int]]] = OrderedDict()  # closed ones'
        self.log_start_offset = 0
        self._leo = 0
        self._last_epoch = UNDEFINED_EPOCH
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
        self._active: Segment | None = None  # the segment appends go to (None: roll first)
        self._fd: int | None = None

    # -- opening and recovery -------------------------------------------------------------
    @classmethod
    def open(cls, directory: str | os.PathLike[str], segment_bytes: int = 1 << 20,
             flush_messages: int = 0, flush_ms: int = 0, retention_bytes: int = RETENTION_OFF,
             retention_ms: int = RETENTION_OFF,
             index_interval_bytes: int = INDEX_INTERVAL_BYTES) -> PartitionLog:
        log = cls(Path(directory), segment_bytes, flush_messages, flush_ms, retention_bytes,
                  retention_ms, index_interval_bytes)
        log.dir.mkdir(parents=True, exist_ok=True)
        log._recover()
        return log

    def _recover(self) -> None:
        paths = self.files.segments()
        self.log_start_offset = _read_int(self.files.log_start_offset_checkpoint)
        expected = max(self.log_start_offset, int(paths[0].stem)) if paths else self.log_start_offset
        self.log_start_offset = expected
        report = self.recovery
        for path in paths:
            if report.dropped_bytes or report.segment is not None:
                data = path.read_bytes()
                report.dropped_bytes += len(data)
                report.records_beyond += count_whole(data, path)
                report.segments_deleted.append(path.name)
                self._unlink(path, int(path.stem))
                continue
            seg = self._recover_segment(path, expected)
            expected = seg.next_offset
        self._leo = expected
        self.recovered_bytes_dropped = report.dropped_bytes
        self.hw = min(_read_int(self.files.hw_checkpoint), self._leo)
        if report.dropped_bytes:
            print(report.line(self.dir), file=sys.stderr, flush=True)
        self.topic_id = _read_topic_id(self.files.metadata)
        self._write_epochs()
        last = self.segments[-1] if self.segments else None
        # appends continue in the last segment only if it is of the current format
        self._active = last if last is not None and last.version == FORMAT_VERSION else None
        for seg in self.segments[:-1]:
            seg.entries = None  # a closed segment's entries are read from its index file

    def _recover_segment(self, path: Path, expected: int) -> Segment:
        """Check one segment's records from ``expected`` on, cut it at the first bad one
        (noting it in :attr:`recovery`), rebuild the state derived from its records and
        its index; the segment as the log keeps it."""
        report = self.recovery
        with open(path, "rb") as f:
            version, start = segment_version(f.read(HEADER_SIZE), path)
            seg = Segment(int(path.stem), path, version, start, start, expected, [])
            self._add_segment(seg)
            assert seg.entries is not None
            for rec, pos, size in scan(f, start, expected, version):
                if seg.indexed(seg.entries[-1] if seg.entries else None, pos, self.index_interval_bytes):
                    seg.entries.append((rec.offset, pos))
                self.epochs.assign(rec.leader_epoch, rec.offset)
                self.producers.record(rec.producer_id, rec.sequence, rec.offset)
                self._last_epoch = rec.leader_epoch
                seg.size, seg.next_offset = pos + size, rec.offset + 1
            f.seek(seg.size)
            rest = f.read()
        if rest:
            report.segment, report.offset, report.position = path, seg.next_offset, seg.size
            report.reason = damage(rest, 0, seg.next_offset, version)
            report.records_beyond += count_whole(rest, path, skip(rest, 0), version)
            report.dropped_bytes += len(rest)
            with open(path, "r+b") as f:
                f.truncate(seg.size)
        self._write_index(seg, seg.entries)
        return seg

    def _add_segment(self, seg: Segment) -> None:
        self.segments.append(seg)
        self._bases.append(seg.base_offset)

    def _write_index(self, seg: Segment, entries: list[tuple[int, int]]) -> None:
        """Write ``seg``'s index file unless it already holds exactly ``entries``."""
        data = index_bytes(seg.base_offset, entries)
        try:
            if seg.index_path.read_bytes() == data:
                return
        except OSError:
            pass
        seg.index_path.write_bytes(data)

    def _unlink(self, path: Path, base_offset: int) -> None:
        path.unlink(missing_ok=True)
        self.files.offset_index(base_offset).unlink(missing_ok=True)
        self._indexes.pop(base_offset, None)

    # -- reading --------------------------------------------------------------------------
    @property
    def leo(self) -> int:
        return self._leo

    @property
    def size_bytes(self) -> int:
        return sum(seg.size for seg in self.segments)

    def log_end_epoch(self) -> int:
        return self._last_epoch

    @property
    def records(self) -> list[Record]:
        """Every record of the log, read from disk (tests and tools: the broker reads with
        :meth:`read`, a bounded window at a time)."""
        return list(self._iter_from(self.log_start_offset, self.leo))

    def read(self, offset: int, max_records: int, upto: int | None = None) -> list[Record]:
        """Up to ``max_records`` records from ``offset``, below ``upto`` (the LEO if None);
        none below the log start offset (the caller answers OFFSET_OUT_OF_RANGE)."""
        end = self.leo if upto is None else min(upto, self.leo)
        if offset >= end or offset < self.log_start_offset:
            return []
        return list(self._iter_from(offset, min(end, offset + max_records)))

    def _iter_from(self, offset: int, end: int) -> Iterator[Record]:
        """The records ``offset`` .. ``end`` - 1, read from the segments via their indexes."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if offset >= end or i < 0:
            return
        for k, seg in enumerate(self.segments[i:]):
            at_offset, pos = self._lookup(seg, offset) if k == 0 else (seg.base_offset, seg.start)
            with open(seg.path, "rb") as f:
                for rec, _pos, _size in scan(f, pos, at_offset, seg.version):
                    if rec.offset >= end:
                        return
                    if rec.offset >= offset:
                        yield rec
            if seg.next_offset >= end:
                return

    def _lookup(self, seg: Segment, offset: int) -> tuple[int, int]:
        """(offset, byte position) of the last index entry of ``seg`` at or below ``offset``
        (the segment's first record if none)."""
        entries = seg.entries if seg.entries is not None else self._closed_index(seg)
        k = bisect.bisect_right(entries, (offset, 1 << 62)) - 1
        return entries[k] if k >= 0 else (seg.base_offset, seg.start)

    def _closed_index(self, seg: Segment) -> list[tuple[int, int]]:
        entries = self._indexes.get(seg.base_offset)
        if entries is None:
            entries = self._indexes[seg.base_offset] = read_index(seg)
            while len(self._indexes) > _INDEXES_CACHED:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end(seg.base_offset)
        return entries

    def _position_of(self, offset: int) -> tuple[Segment, int]:
        """The segment holding ``offset`` (log_start <= offset < LEO) and its byte position."""
        seg = self.segments[bisect.bisect_right(self._bases, offset) - 1]
        at_offset, pos = self._lookup(seg, offset)
        with open(seg.path, "rb") as f:
            for rec, p, _size in scan(f, pos, at_offset, seg.version):
                if rec.offset == offset:
                    return seg, p
        raise LogFormatError(f"{seg.path}: offset {offset} not found where its index says")

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
        seg = self._active
        start = seg.size if seg is not None else 0
        try:
            if seg is None or seg.size >= self.segment_bytes:
                seg = self._roll(recs[0].offset)
                start = seg.size
            if self._fd is None:
                self._fd = os.open(seg.path, os.O_WRONLY | os.O_APPEND)
            _write_all(self._fd, b"".join(encoded))
        except OSError as exc:
            self._go_offline(start, exc)
            raise LogDirFailure(exc.errno or errno_codes.EIO,
                                f"append to {self.dir.name} at offset {recs[0].offset} failed "
                                f"({exc.strerror or exc}); the log is offline") from exc
        assert seg.entries is not None
        pos = start
        changed = False
        for rec, data in zip(recs, encoded, strict=True):
            if seg.indexed(seg.entries[-1] if seg.entries else None, pos, self.index_interval_bytes):
                seg.entries.append((rec.offset, pos))
            pos += len(data)
            self.producers.record(rec.producer_id, rec.sequence, rec.offset)
            while self.epochs.entries and self.epochs.entries[-1][0] > rec.leader_epoch:
                self.epochs.entries.pop()  # an epoch announced but never written is superseded
                changed = True
            changed = self.epochs.assign(rec.leader_epoch, rec.offset) or changed
        seg.size, seg.next_offset = pos, recs[-1].offset + 1
        self._leo, self._last_epoch = seg.next_offset, recs[-1].leader_epoch
        if changed:
            self._write_epochs()
        self._unflushed += len(recs)
        self.maybe_flush()

    def _roll(self, base_offset: int) -> Segment:
        """Start a new segment at ``base_offset`` (with the format's header), closing the
        active one (its index file written whole)."""
        self._close_active()
        if self.segments and self.segments[-1].base_offset == base_offset:
            self.segments.pop()  # an empty (version-1) segment the new one replaces
            self._bases.pop()
        path = self.files.segment(base_offset)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
        try:
            _write_all(fd, segment_header())
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        seg = Segment(base_offset, path, FORMAT_VERSION, HEADER_SIZE, HEADER_SIZE, base_offset, [])
        self._add_segment(seg)
        self._active, self._fd = seg, fd
        return seg

    def _close_active(self) -> None:
        """The active segment is done with: its index file holds its entries, which the log
        no longer keeps in memory."""
        self._close_fd()
        seg = self._active
        if seg is not None and seg.entries is not None:
            self._write_index(seg, seg.entries)
            seg.entries = None
        self._active = None

    def _go_offline(self, start: int, exc: OSError) -> None:
        """A write failed: cut the segment back to ``start`` (the end of the last whole
        record) so no fragment stays behind, and refuse every later write."""
        self.offline = exc
        try:
            if self._fd is not None:
                os.ftruncate(self._fd, start)
            elif self._active is not None and self._active.path.exists():
                os.truncate(self._active.path, start)
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

    # -- truncation and retention ---------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Drop every record at or after ``offset``; returns how many were dropped."""
        offset = max(0, offset)
        if offset >= self.leo:
            return 0
        if offset < self.log_start_offset:
            dropped = self.leo - self.log_start_offset
            self.truncate_fully_and_start_at(offset)
            return dropped
        dropped = self.leo - offset
        seg, pos = self._position_of(offset)
        self._close_active()
        k = self.segments.index(seg)
        for later in self.segments[k + 1:]:
            self._unlink(later.path, later.base_offset)
        del self.segments[k + 1:], self._bases[k + 1:]
        with open(seg.path, "r+b") as f:
            f.truncate(pos)
        seg.entries = [e for e in (seg.entries or read_index(seg)) if e[0] < offset]
        self._indexes.pop(seg.base_offset, None)
        self._write_index(seg, seg.entries)
        seg.size, seg.next_offset = pos, offset
        # a version-1 segment is not appended to (the next append rolls a new one)
        self._active = seg if seg.version == FORMAT_VERSION else None
        self._leo = offset
        self._last_epoch = next((r.leader_epoch for r in self._iter_from(offset - 1, offset)),
                                UNDEFINED_EPOCH)
        self.producers.rebuild(self._iter_from(self.log_start_offset, offset))
        self.epochs.truncate_from(offset)
        self._write_epochs()
        if self.hw > offset:
            self.set_hw(offset)
            self.checkpoint_hw()  # never leave a checkpoint above the log end
        return dropped

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start the log, empty, at ``offset`` (Kafka's
        ``truncateFullyAndStartAt``: a follower whose log ends below its leader's log start
        offset fetches from there)."""
        self._close_active()
        for seg in self.segments:
            self._unlink(seg.path, seg.base_offset)
        self.segments, self._bases = [], []
        self._leo, self._last_epoch = offset, UNDEFINED_EPOCH
        self._set_log_start(offset)
        self.epochs.entries = []
        self._write_epochs()
        self.producers.rebuild(())
        self.set_hw(offset)

    def apply_retention(self, now: float | None = None) -> int:
        """Delete the oldest segments while the log is over ``retention_bytes`` or they were
        last written over ``retention_ms`` ago (wall clock ``now``) -- whole segments, never
        the active one, only those wholly below the HW; the log start offset follows.
        Returns how many segments it deleted."""
        if self.retention_bytes < 0 and self.retention_ms < 0:
            return 0
        now = time.time() if now is None else now
        size, deleted = self.size_bytes, 0
        while len(self.segments) > 1 and self.segments[1].base_offset <= self.hw:
            seg = self.segments[0]
            over_size = 0 <= self.retention_bytes <= size - seg.size
            too_old = self.retention_ms >= 0 and \
                (now - seg.path.stat().st_mtime) * 1000 > self.retention_ms
            if not (over_size or too_old):
                break
            self._unlink(seg.path, seg.base_offset)
            del self.segments[0], self._bases[0]
            size, deleted = size - seg.size, deleted + 1
        if deleted:
            self._set_log_start(self.segments[0].base_offset)
            self.epochs.truncate_from_start(self.log_start_offset)
            self._write_epochs()
        return deleted

    def _set_log_start(self, offset: int) -> None:
        self.log_start_offset = offset
        write_atomic(self.files.log_start_offset_checkpoint, f"{offset}\n")

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
        if self._active is not None and self._active.entries is not None:
            with contextlib.suppress(OSError):
                self._write_index(self._active, self._active.entries)

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


def _read_int(path: Path) -> int:
    """A checkpoint's number (the HW, the log start offset); 0 if absent or unreadable."""
    try:
        return int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0
