"""Record batches (Kafka's message format v2) to and from the broker's stored values.

Kafka's clients send and fetch records in batches: a header (base offset, length, partition
leader epoch, magic 2, a CRC-32C of everything after it, attributes, the producer id,
epoch and base sequence of KIP-98) and varint-encoded records.  ``kio.records`` reads and
writes them, with the ``crc32c`` library for the checksum; this module maps them onto what
the broker's log stores, one value per record:

* **Produce**: a batch becomes one broker produce -- its records' values (a record with a key
  as docs/wire.md section 4.1's keyed value), its producer id and base sequence.  What the
  log cannot keep is refused rather than dropped: compressed batches
  (UNSUPPORTED_COMPRESSION_TYPE), transactional and control batches, records with headers
  or a null value (INVALID_RECORD), and message formats v0/v1.
* **Fetch**: consecutive records of one leader epoch become one batch whose partition
  leader epoch is theirs.  The log keeps no timestamps, so every record carries Kafka's
  ``NO_TIMESTAMP`` (-1), as records of message format v0 do; and no producer ids (a
  consumer reads them only for transactions, which there are none of).
"""

from __future__ import annotations

import datetime
import io
import itertools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KafkaRecord
from kio.records.writers import write_new_batch
from kio.schema.errors import ErrorCode as KafkaError

from impl.node.kafka.codec import Refused
from impl.node.wire.values import keyed_record, record_key

NO_TIMESTAMP_MS = -1
# kio's writer encodes a record's timestamp as int(timestamp() * 1000): the instant one
# millisecond before the epoch is encoded as Kafka's NO_TIMESTAMP
_NO_TIMESTAMP = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + \
    datetime.timedelta(milliseconds=NO_TIMESTAMP_MS)

# The batch header up to and including the attributes (Kafka's DefaultRecordBatch):
# base offset i64, batch length i32, partition leader epoch i32, magic i8, crc u32,
# attributes i16 -- read before kio parses the records, which it can only if uncompressed
_HEAD = struct.Struct(">qiibIh")
_BATCH_OVERHEAD = 61  # the whole batch header, through the record count (RECORD_BATCH_OVERHEAD)
MAGIC = 2
COMPRESSION_MASK = 0x07
TRANSACTIONAL = 0x10
CONTROL = 0x20


class BatchRefused(Refused):
    """A produced batch the broker does not append: ``code`` is Kafka's error."""


@dataclass(frozen=True)
class ProducedBatch:
    producer_id: int
    producer_epoch: int
    base_sequence: int
    values: tuple[bytes, ...]  # as stored: a keyed record as docs/wire.md section 4.1


def produced_batches(data: bytes) -> list[ProducedBatch]:
    """The batches of a produce request's ``records`` field, in order."""
    batches: list[ProducedBatch] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < _BATCH_OVERHEAD:
            raise BatchRefused(KafkaError.corrupt_message, "a truncated record batch")
        _, length, _, magic, _, attributes = _HEAD.unpack_from(data, pos)
        if magic != MAGIC:
            raise BatchRefused(KafkaError.unsupported_for_message_format,
                               f"message format v{magic} (this broker reads v2 batches only)")
        if attributes & COMPRESSION_MASK:
            raise BatchRefused(KafkaError.unsupported_compression_type,
                               "compressed batches are not stored (compression.type=none)")
        if attributes & (TRANSACTIONAL | CONTROL):
            raise BatchRefused(KafkaError.invalid_record,
                               "transactional and control batches are not served (no transactions)")
        try:
            batch, size = read_batch(data, pos)
        except Exception as exc:  # noqa: BLE001 - bad CRC, bad lengths, truncated varints
            raise BatchRefused(KafkaError.corrupt_message, f"record batch: {exc}") from None
        if size != length + 12:
            raise BatchRefused(KafkaError.corrupt_message, "record batch length mismatch")
        pos += size
        batches.append(ProducedBatch(batch.producer_id, batch.producer_epoch,
                                     batch.base_sequence, _values(batch.records, batch.base_offset)))
    return batches


def _values(records: Sequence[KafkaRecord], base_offset: int) -> tuple[bytes, ...]:
    if not records:
        raise BatchRefused(KafkaError.invalid_record, "an empty record batch")
    values = []
    for i, rec in enumerate(records):
        if rec.offset != base_offset + i:
            raise BatchRefused(KafkaError.invalid_record, "record offset deltas are not 0, 1, 2, ...")
        if rec.headers:
            raise BatchRefused(KafkaError.invalid_record, "record headers are not stored")
        if rec.value is None:
            raise BatchRefused(KafkaError.invalid_record, "null values (tombstones) are not stored")
        values.append(keyed_record(rec.value, rec.key))
    return tuple(values)


def fetched_batches(records: Iterable[Sequence[Any]]) -> bytes:
    """Fetched records -- ``[offset, leader_epoch, value]`` each, as the broker's consumer
    fetch answers -- as record batches, one per run of one leader epoch."""
    buf = io.BytesIO()
    for epoch, run in itertools.groupby(records, key=lambda r: int(r[1])):
        batch = tuple(_record(int(offset), stored) for offset, _, stored in run)
        write_new_batch(buf, NewRecordBatch(producer_id=-1, producer_epoch=-1,
                                            partition_leader_epoch=epoch, base_sequence=-1,
                                            records=batch, attributes=0))
    return buf.getvalue()


def _record(offset: int, stored: bytes) -> KafkaRecord:
    key, value = record_key(stored)
    return KafkaRecord(attributes=0, timestamp=_NO_TIMESTAMP, offset=offset, key=key,
                       value=value, headers=())
