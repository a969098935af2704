"""The Kafka codec glue (impl.node.kafka): requests and responses through kio, the versions
served, and record batches v2 held to Kafka's format by other implementations of it
(kafka-python's record classes and its own CRC-32C, where installed)."""

from __future__ import annotations

import struct

import crc32c
import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KafkaError
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.request_header.v2 import RequestHeader
from kio.serial import entity_reader, entity_writer

from impl.node.kafka import (
    SERVED,
    BatchRefused,
    KafkaApi,
    MalformedRequest,
    UnsupportedRequest,
    build,
    decode_request,
    encode_response,
    fetched_batches,
    produced_batches,
)
from impl.node.kafka.records import COMPRESSION_MASK, TRANSACTIONAL
from impl.node.wire import keyed_record


# A record batch v2 as Kafka's Java client writes it (DefaultRecordBatch): base offset 0,
# producer id 1000, epoch 0, base sequence 0, two records (key b"k0"/value b"v0", then
# no key/value b"v1") at timestamps 1700000000000 and +1.  Laid out field by field from
# Kafka's documented format, with its CRC-32C over attributes..end, so a broken field order
# or checksum in the code under test cannot pass by agreeing with itself.
def _java_batch() -> bytes:
    def varint(n: int) -> bytes:
        z = (n << 1) ^ (n >> 63)
        out = bytearray()
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
        return bytes(out)

    def record(delta: int, key: bytes | None, value: bytes) -> bytes:
        body = (b"\x00" + varint(delta) + varint(delta)
                + (varint(-1) if key is None else varint(len(key)) + key)
                + varint(len(value)) + value + varint(0))
        return varint(len(body)) + body

    records = record(0, b"k0", b"v0") + record(1, None, b"v1")
    after_crc = struct.pack(">hiqqqhii", 0, 1, 1700000000000, 1700000000001, 1000, 0, 0, 2) + records
    head = struct.pack(">qiib", 0, len(after_crc) + 9, -1, 2)
    return head + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc


def _request(api: int, version: int, body: object, cid: int = 7) -> bytes:
    import io

    schema = load_request_schema(api, version)
    buf = io.BytesIO()
    if schema.__flexible__:
        entity_writer(RequestHeader)(buf, RequestHeader(request_api_key=api, request_api_version=version,
                                                        correlation_id=cid, client_id="t"))
    else:
        from kio.schema.request_header.v1 import RequestHeader as V1
        entity_writer(V1)(buf, V1(request_api_key=api, request_api_version=version,
                                  correlation_id=cid, client_id="t"))
    entity_writer(schema)(buf, body)
    return buf.getvalue()


def test_a_produced_batch_is_read_as_kafka_writes_it_keys_as_keyed_values() -> None:
    (batch,) = produced_batches(_java_batch())
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1000, 0, 0)
    assert batch.values == (keyed_record(b"v0", b"k0"), b"v1")


def test_a_batch_whose_crc_does_not_match_is_corrupt() -> None:
    data = bytearray(_java_batch())
    data[-1] ^= 1  # the last value byte: covered by the CRC
    with pytest.raises(BatchRefused) as refused:
        produced_batches(bytes(data))
    assert refused.value.code == KafkaError.corrupt_message


@pytest.mark.parametrize("bit,code", [(1, KafkaError.unsupported_compression_type),
                                      (TRANSACTIONAL, KafkaError.invalid_record)])
def test_compressed_and_transactional_batches_are_refused_not_dropped(bit: int, code: KafkaError) -> None:
    data = bytearray(_java_batch())
    struct.pack_into(">h", data, 21, bit & (COMPRESSION_MASK | TRANSACTIONAL))
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    with pytest.raises(BatchRefused) as refused:
        produced_batches(bytes(data))
    assert refused.value.code == code


def test_fetched_batches_are_one_per_leader_epoch_with_kafkas_crc() -> None:
    stored = [[5, 3, b"a"], [6, 3, keyed_record(b"b", b"kb")], [7, 4, b"c"]]
    data = fetched_batches(stored)
    first_length = struct.unpack_from(">i", data, 8)[0] + 12
    for start, end in ((0, first_length), (first_length, len(data))):
        (crc,) = struct.unpack_from(">I", data, start + 17)
        assert crc == crc32c.crc32c(data[start + 21:end])
    assert struct.unpack_from(">qiib", data, 0)[::2] == (5, 3)  # base offset, leader epoch
    assert struct.unpack_from(">qiib", data, first_length)[::2] == (7, 4)
    # record counts, and no producer (-1) on records read back for consumers
    assert struct.unpack_from(">qhi", data, 43) == (-1, -1, -1)
    assert struct.unpack_from(">i", data, 57) == (2,)
    assert struct.unpack_from(">i", data, first_length + 57) == (1,)


def test_fetched_batches_read_back_with_kafka_python_s_own_format_code() -> None:
    memory_records = pytest.importorskip("kafka.record.memory_records",
                                         reason="kafka-python (the dev extra) is not installed")
    records = memory_records.MemoryRecords(fetched_batches([[0, 1, b"x"], [1, 1, keyed_record(b"y", b"k")]]))
    batch = records.next_batch()
    assert batch.validate_crc()
    assert [(r.offset, r.key, r.value, r.timestamp) for r in batch] == [(0, None, b"x", -1),
                                                                        (1, b"k", b"y", -1)]


def test_a_request_round_trips_through_kio_with_the_flexible_header() -> None:
    schema = load_request_schema(KafkaApi.METADATA, 12)
    body = build(schema, topics=[{"topic_id": None, "name": "t"}], allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
    request = decode_request(_request(KafkaApi.METADATA, 12, body))
    assert (request.api, request.version, request.correlation_id, request.client_id) == \
        (KafkaApi.METADATA, 12, 7, "t")
    assert request.body == body


def test_a_response_is_framed_and_reads_back_as_the_version_it_was_built_for() -> None:
    response = build(MetadataResponse, throttle_time=0, cluster_id=None, controller_id=1,
                     brokers=[{"node_id": 1, "host": "h", "port": 9, "rack": None}],
                     topics=[{"error_code": 3, "name": "t", "topic_id": None, "is_internal": False,
                              "partitions": []}],
                     field_of_another_version=1)
    frame = encode_response(KafkaApi.METADATA, 42, response)
    assert struct.unpack_from(">ii", frame) == (len(frame) - 4, 42)
    assert frame[8] == 0  # response header v1: no tagged fields
    decoded, size = entity_reader(MetadataResponse)(frame, 9)
    assert 9 + size == len(frame)
    assert decoded == response and decoded.topics[0].error_code == KafkaError.unknown_topic_or_partition


def test_api_versions_answers_with_header_v0_even_at_a_flexible_version() -> None:
    from kio.schema.api_versions.v3.response import ApiVersionsResponse

    response = build(ApiVersionsResponse, error_code=0, throttle_time=0, api_keys=[
        {"api_key": int(k), "min_version": lo, "max_version": hi} for k, (lo, hi) in SERVED.items()])
    frame = encode_response(KafkaApi.API_VERSIONS, 5, response)
    decoded, size = entity_reader(ApiVersionsResponse)(frame, 8)  # no tagged-field byte
    assert 8 + size == len(frame) and decoded == response


def test_an_unserved_version_and_unparseable_bytes_are_told_apart() -> None:
    low, _ = SERVED[KafkaApi.PRODUCE]
    with pytest.raises(UnsupportedRequest) as unsupported:
        decode_request(struct.pack(">hhi", KafkaApi.PRODUCE, low - 1, 3) + b"\x00\x00")
    assert (unsupported.value.api_key, unsupported.value.correlation_id) == (KafkaApi.PRODUCE, 3)
    with pytest.raises(UnsupportedRequest):
        decode_request(struct.pack(">hhi", 24, 0, 3))  # AddPartitionsToTxn: no transactions
    with pytest.raises(MalformedRequest):
        decode_request(struct.pack(">hhi", KafkaApi.METADATA, 1, 3) + b"\x00")


def test_the_pinned_codec_carries_the_zookeeper_era_inter_broker_messages() -> None:
    """The pin in pyproject.toml stops below the kio release that dropped them: the relay
    between real Kafka brokers, and Kafka's protocol between Epochal's own, need them."""
    import importlib

    for message in ("leader_and_isr", "stop_replica", "update_metadata", "controlled_shutdown"):
        importlib.import_module(f"kio.schema.{message}")
    importlib.import_module("kio.schema.fetch.v17")
