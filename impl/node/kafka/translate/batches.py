"""Record batches v2 as Epochal's own connections carry them: a fast writer and reader.

kio's batch reader and writer build a timezone-aware timestamp, a record object and a
buffer per record, which made a follower's fetch of 500 records take tens of milliseconds;
these handle just what the log keeps -- each record's offset and value, the batch's leader
epoch, producer id and base sequence, timestamps 0 -- and the CRC-32C as Kafka does.  The
reader reads any uncompressed batch v2 without record headers (Kafka's
DefaultRecordBatch); ``tests/impl/node/test_wire_kafka.py`` holds both to kio's.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

from impl.node.codes import ProtocolError

# base offset, batch length, partition leader epoch, magic, crc, attributes,
# last offset delta, base timestamp, max timestamp, producer id, producer epoch,
# base sequence, record count
_HEAD = struct.Struct(">qiibIhiqqqhii")
_CRC_FROM = 21  # the CRC covers the batch from its attributes on
_LOG_OVERHEAD = 12  # base offset and batch length precede what the length counts
MAGIC = 2
COMPRESSION_MASK = 0x07


class Batch(NamedTuple):
    leader_epoch: int
    producer_id: int
    base_sequence: int
    records: list[tuple[int, bytes | None, bytes | None]]  # (offset, key, value)


def _varint_bytes(value: int) -> bytes:
    """A zigzag varint (or varlong)."""
    raw = (value << 1) ^ (value >> 63)  # zigzag
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


# the varints of 0 .. 8191 (an offset delta, a value length, a record size), read off a table
_SMALL = tuple(_varint_bytes(v) for v in range(8192))


def write_batch(out: bytearray, leader_epoch: int, producer_id: int, producer_epoch: int,
                base_sequence: int, records: list[tuple[int, bytes]]) -> None:
    """One batch of ``(offset, value)`` records (at least one, offsets ascending), no keys."""
    base_offset = records[0][0]
    small, varint = _SMALL, _varint_bytes
    parts: list[bytes] = []
    for offset, value in records:
        delta, n = offset - base_offset, len(value)
        # attributes 0, timestamp delta 0, the offset delta, key length -1 (zigzag 1): no key
        head = b"\x00\x00" + (small[delta] if delta < 8192 else varint(delta)) + b"\x01" + \
            (small[n] if n < 8192 else varint(n))
        size = len(head) + n + 1  # and no headers
        parts += (small[size] if size < 8192 else varint(size), head, value, b"\x00")
    body = b"".join(parts)
    head = _HEAD.pack(base_offset, _HEAD.size - _LOG_OVERHEAD + len(body), leader_epoch, MAGIC, 0,
                      0, records[-1][0] - base_offset, 0, 0, producer_id, producer_epoch,
                      base_sequence, len(records))
    batch = bytearray(head) + body
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[_CRC_FROM:]))
    out += batch


def read_uvarint(data: bytes, pos: int, bits: int = 64) -> tuple[int, int]:
    """An unsigned varint of at most ``bits`` bits at ``pos``: (value, position after it)."""
    raw = shift = 0
    while True:
        if pos >= len(data) or shift >= bits:
            raise ProtocolError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return raw, pos
        shift += 7


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at ``pos``: (value, position after it)."""
    raw, pos = read_uvarint(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(data, pos)
    if n < 0:
        return None, pos
    if pos + n > len(data):
        raise ProtocolError("truncated record field")
    return data[pos:pos + n], pos + n


def read_batches(data: bytes) -> list[Batch]:
    """Every batch of a ``records`` field; ProtocolError for anything else."""
    out: list[Batch] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < _HEAD.size:
            raise ProtocolError("a truncated record batch")
        (base_offset, length, epoch, magic, crc, attributes, _, _, _, producer_id, _,
         base_sequence, count) = _HEAD.unpack_from(data, pos)
        end = pos + _LOG_OVERHEAD + length
        if magic != MAGIC or attributes & COMPRESSION_MASK or end > len(data) or \
                length < _HEAD.size - _LOG_OVERHEAD:
            raise ProtocolError("not an uncompressed record batch v2")
        if crc32c(memoryview(data)[pos + _CRC_FROM:end]) != crc:
            raise ProtocolError("record batch CRC mismatch")
        try:
            records, at = _read_records(data, pos + _HEAD.size, count, base_offset)
        except IndexError:
            raise ProtocolError("truncated or overlong varint") from None
        if at != end:
            raise ProtocolError("record batch length mismatch")
        out.append(Batch(epoch, producer_id, base_sequence, records))
        pos = end
    return out


def _read_records(data: bytes, at: int, count: int, base_offset: int
                  ) -> tuple[list[tuple[int, bytes | None, bytes | None]], int]:
    """``count`` records from ``at``: (offset, key, value) each, and where they end.  A
    varint of one byte -- nearly every one of Epochal's records' -- is read inline; an
    IndexError means the bytes ended inside a varint."""
    records: list[tuple[int, bytes | None, bytes | None]] = []
    for _ in range(count):
        b = data[at]
        if b < 0x80:
            size, at = (b >> 1) ^ -(b & 1), at + 1
        elif data[at + 1] < 0x80:  # two bytes: a record of up to 8191 bytes
            raw = (b & 0x7F) | data[at + 1] << 7
            size, at = (raw >> 1) ^ -(raw & 1), at + 2
        else:
            size, at = _varint(data, at)
        record_end = at + size
        if data[at + 1] == 0:  # attributes, then timestamp delta 0
            at += 2
        else:
            _, at = _varint(data, at + 1)
        b = data[at]
        if b < 0x80:
            delta, at = (b >> 1) ^ -(b & 1), at + 1
        else:
            delta, at = _varint(data, at)
        key, at = (None, at + 1) if data[at] == 1 else _bytes(data, at)
        b = data[at]
        if b < 0x80 and b & 1 == 0:  # a value of fewer than 64 bytes
            n, at = b >> 1, at + 1
        elif b & 0x81 == 0x80 and data[at + 1] < 0x80:  # of fewer than 8192
            n, at = (b & 0x7F | data[at + 1] << 7) >> 1, at + 2
        else:
            n = -1
        if n >= 0:
            if at + n > len(data):
                raise ProtocolError("truncated record field")
            value: bytes | None = data[at:at + n]
            at += n
        else:
            value, at = _bytes(data, at)
        headers, at = (0, at + 1) if data[at] == 0 else _varint(data, at)
        if headers or at != record_end:  # Epochal's records carry no headers
            raise ProtocolError("a record with headers, or of the wrong length")
        records.append((base_offset + delta, key, value))
    return records, at
