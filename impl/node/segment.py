"""A log segment's bytes: the record format, the segment header, reading records from a file
position, and the sparse offset index (docs/implementation.md, "The log on disk").

**Format, version 2** (written since the idempotent producer): a segment starts with an
8-byte header ``b"EPLOG" | u8 version | u16 0`` and holds records
``u32 body_len | u32 crc32(body) | body`` with
``body = i64 offset | i32 leader_epoch | i64 producer_id | i32 sequence | payload``
(``producer_id`` -1: not written by an idempotent producer).  **Version 1** segments have no
header and ``body = i64 offset | i32 leader_epoch | payload``; they are read as they are.
A segment of a newer version is refused with one line (:class:`LogFormatError`).

**The offset index** (Kafka's ``.index``): beside each segment ``<base>.log`` a file
``<base>.index`` of entries ``u32 offset - base | u32 byte position``, one for the first
record at or past each ``index_interval_bytes`` of the segment (sparse: a 1 MiB segment
with the 4 KiB default has 256).  A read finds the last entry at or below the offset it
wants and scans forward from there, so it touches a few KiB, whatever the log's size.  The
index is derived data: recovery builds it from the records it checks and rewrites the file
if it is missing or differs (torn, corrupt, stale).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from impl.node.layout import PartitionDir
from impl.node.producer_state import NO_PRODUCER

_HEAD = struct.Struct(">II")
_BODY_V1 = struct.Struct(">qi")
_BODY = struct.Struct(">qiqi")
_SEGMENT_HEADER = struct.Struct(">5sBH")
_INDEX_ENTRY = struct.Struct(">II")
SEGMENT_MAGIC = b"EPLOG"
FORMAT_VERSION = 2
HEADER_SIZE = _SEGMENT_HEADER.size
INDEX_INTERVAL_BYTES = 4096  # Kafka's log.index.interval.bytes
_CHUNK = 1 << 16  # how much a scan reads from its file at a time


class LogFormatError(RuntimeError):
    """A segment written in a format this broker does not read (one line)."""


@dataclass(frozen=True)
class Record:
    offset: int
    leader_epoch: int
    value: bytes
    producer_id: int = NO_PRODUCER  # the idempotent producer that wrote it (KIP-98), or -1
    sequence: int = -1  # its sequence number in that producer's stream for this partition


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
    """(format version, position of the first record) of a segment whose bytes begin with
    ``data``; LogFormatError for a version this code does not read.  No header: version 1
    (its first bytes are a record length, whose top byte is 0 for any record we ever allowed)."""
    if data[:len(SEGMENT_MAGIC)] != SEGMENT_MAGIC:
        return 1, 0
    if len(data) < HEADER_SIZE:
        return FORMAT_VERSION, len(data)  # a header torn at creation: an empty segment
    _, version, _ = _SEGMENT_HEADER.unpack_from(data, 0)
    if version != FORMAT_VERSION:
        raise LogFormatError(f"{path}: log format version {version} is not one this broker "
                             f"reads (1 or {FORMAT_VERSION}); move the directory away or use "
                             f"the broker that wrote it")
    return version, HEADER_SIZE


@dataclass
class Segment:
    """What the log keeps in memory of one segment: a few numbers, and the offset index's
    entries only while it is the active segment (a closed one's are read from its file)."""

    base_offset: int
    path: Path
    version: int
    start: int  # the byte position of its first record (after the header)
    size: int  # its length in bytes
    next_offset: int  # the offset after its last record
    entries: list[tuple[int, int]] | None = field(default=None, repr=False)  # (offset, position)

    @property
    def index_path(self) -> Path:
        return PartitionDir(self.path.parent).offset_index(self.base_offset)

    def indexed(self, last: tuple[int, int] | None, position: int, interval: int) -> bool:
        """Whether the record at ``position`` gets an index entry (the index's one rule)."""
        return position - (last[1] if last else self.start) >= interval


def index_bytes(base_offset: int, entries: list[tuple[int, int]]) -> bytes:
    return b"".join(_INDEX_ENTRY.pack(o - base_offset, p) for o, p in entries)


def read_index(seg: Segment) -> list[tuple[int, int]]:
    """A closed segment's index entries, from its file (an unreadable one: none, and the
    reads scan from the segment's start; the next recovery rewrites it)."""
    try:
        data = seg.index_path.read_bytes()
    except OSError:
        return []
    usable = len(data) - len(data) % _INDEX_ENTRY.size
    return [(seg.base_offset + rel, pos) for rel, pos in _INDEX_ENTRY.iter_unpack(data[:usable])]


def scan(f: BinaryIO, position: int, expected_offset: int,
         version: int = FORMAT_VERSION) -> Iterator[tuple[Record, int, int]]:
    """(record, position, size) of each record of the open segment ``f`` from ``position``
    (where the record ``expected_offset`` begins), reading a chunk at a time, up to the end
    or the first torn, corrupt or out-of-order record."""
    f.seek(position)
    buf, base, eof = bytearray(), position, False
    while True:
        i = position - base
        need = _HEAD.size
        if len(buf) - i >= _HEAD.size:
            need += _HEAD.unpack_from(buf, i)[0]
        if len(buf) - i < need:
            if eof:
                return
            del buf[:i]
            base = position
            more = f.read(max(_CHUNK, need - len(buf)))
            eof = not more
            buf += more
            continue
        parsed = _parse_at(buf, i, expected_offset, version)
        if parsed is None:
            return
        rec, size = parsed
        yield rec, position, size
        position += size
        expected_offset += 1


def read_segments(directory: Path) -> list[Record]:
    """Every record of a partition directory's segments, read-only, up to the first torn
    or corrupt one (what recovery would keep; used by harnesses to read a stopped log)."""
    out: list[Record] = []
    for seg in PartitionDir(Path(directory)).segments():
        with open(seg, "rb") as f:
            version, end = segment_version(f.read(HEADER_SIZE), seg)
            expected = out[-1].offset + 1 if out else int(seg.stem)
            for rec, pos, size in scan(f, end, expected, version):
                out.append(rec)
                end = pos + size
            if end < seg.stat().st_size:
                return out
    return out


def _parse_at(data: bytes | bytearray, pos: int, expected_offset: int,
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


def damage(data: bytes, pos: int, expected: int, version: int) -> str:
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


def skip(data: bytes, pos: int) -> int:
    """The position after the damaged record at ``pos`` if its length field can be believed
    (it fits the segment), else the end: the count of records beyond is best effort."""
    if pos + _HEAD.size > len(data):
        return len(data)
    length, _ = _HEAD.unpack_from(data, pos)
    end = pos + _HEAD.size + length
    return end if end <= len(data) else len(data)


def count_whole(data: bytes, seg: Path, pos: int | None = None, version: int | None = None) -> int:
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
