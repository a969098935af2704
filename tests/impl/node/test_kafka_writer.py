"""The translations' own writer is held to kio's entity writer byte for byte: every
example of the wire tests, then generated Produce, Fetch and OffsetForLeaderEpoch bodies;
the tag's shallow map to the general value encoding; the record batches to kio's."""

from __future__ import annotations

import datetime
import io
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KafkaRecord
from kio.records.writers import write_new_batch
from kio.serial import entity_writer

from impl.node.codes import ApiKey, ProtocolError
from impl.node.kafka.codec import build
from impl.node.kafka.translate import (
    EPOCHAL_TAG,
    TRANSLATIONS,
    _decode_extras,
    _encode_extras,
    _read_tags,
    _uvarint,
    _write_tags,
)
from impl.node.kafka.translate.batches import read_batches
from impl.node.kafka.translate.replication import read_records, write_produced, write_records
from impl.node.kafka.translate.writer import write_values
from impl.node.wire.values import decode_value, encode_value
from tests.impl.node.test_wire_kafka import ANSWERS, REQUESTS


def _kio(schema: type, values: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, **values))
    return buf.getvalue()


def _same_request(api: ApiKey, body: dict[str, Any]) -> None:
    t = TRANSLATIONS[api]
    values, _, _ = t.request(body)
    assert write_values(t.request_schema(), values) == _kio(t.request_schema(), values)


def _same_response(api: ApiKey, request: dict[str, Any], error: int, body: dict[str, Any]) -> None:
    t = TRANSLATIONS[api]
    values, _, _ = t.response(error, body, request)
    assert write_values(t.response_schema(), values) == _kio(t.response_schema(), values)


def test_every_wire_example_is_written_as_kio_writes_it() -> None:
    for api, body in REQUESTS:
        _same_request(api, body)
    for api, request, error, body in ANSWERS:
        _same_response(api, request, error, body)


i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
offset = st.integers(0, 2**40)
topic = st.text(min_size=1, max_size=20)
values = st.lists(st.binary(max_size=40), min_size=1, max_size=5)
errors = st.sampled_from([0, 1, 6, 74])


@settings(max_examples=150, deadline=None)
@given(topic, st.integers(0, 2**31 - 1), values, st.sampled_from([-1, 0, 1]), st.integers(0, 2**31 - 1),
       st.integers(-1, 2**40), st.integers(0, 2**31 - 1000), errors, offset)
def test_produce_is_written_as_kio_writes_it(t: str, partition: int, vs: list[bytes], acks: int, timeout: int,
                                            producer_id: int, sequence: int, error: int, base: int) -> None:
    request = {"topic": t, "partition": partition, "values": vs, "acks": acks, "timeout_ms": timeout,
               "producer_id": producer_id, "base_sequence": sequence}
    _same_request(ApiKey.PRODUCE, request)
    _same_response(ApiKey.PRODUCE, request, error, {"base_offset": base, "leader_epoch": 2})


fetch_partitions = st.lists(st.fixed_dictionaries({
    "topic": topic, "partition": st.integers(0, 2**31 - 1), "fetch_offset": offset,
    "leader_epoch": st.integers(-1, 2**31 - 1)}), max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.integers(-1, 100), i32, st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1), fetch_partitions,
       st.lists(st.tuples(errors, offset, st.integers(-1, 99), st.integers(-1, 99), offset,
                          st.lists(st.binary(max_size=20), max_size=3)), min_size=4, max_size=4))
def test_fetch_is_written_as_kio_writes_it(replica: int, epoch: int, max_bytes: int, wait: int,
                                          parts: list[dict[str, Any]], answers: list[Any]) -> None:
    request = {"replica_id": replica, "broker_epoch": epoch, "max_bytes": max_bytes, "max_wait_ms": wait,
               "partitions": parts}
    _same_request(ApiKey.FETCH, request)
    answered = [{"topic": p["topic"], "partition": p["partition"], "error": error, "hw": hw,
                 "leader": leader, "leader_epoch": leader_epoch, "log_start_offset": start,
                 "records": [[hw + i, 1, v] for i, v in enumerate(vs)] if hw >= 0 else []}
                for p, (error, hw, leader, leader_epoch, start, vs) in zip(parts, answers, strict=False)]
    _same_response(ApiKey.FETCH, request, 0, {"partitions": answered})
    single = {"topic": "t", "partition": 0, "fetch_offset": 0}
    _same_request(ApiKey.FETCH, single)
    _same_response(ApiKey.FETCH, single, 0, {"records": [[0, 1, b"a"]], "hw": answers[0][1],
                                            "leo": 1, "leader_epoch": 0, "log_start_offset": 0})


@settings(max_examples=100, deadline=None)
@given(topic, st.integers(0, 2**31 - 1), st.integers(-1, 2**31 - 1), st.integers(-1, 2**31 - 1),
       st.integers(-1, 100), errors, offset)
def test_offset_for_leader_epoch_is_written_as_kio_writes_it(t: str, partition: int, epoch: int, current: int,
                                                            replica: int, error: int, end: int) -> None:
    request = {"topic": t, "partition": partition, "leader_epoch": epoch, "current_leader_epoch": current,
               "replica_id": replica}
    _same_request(ApiKey.OFFSETS_FOR_LEADER_EPOCH, request)
    _same_response(ApiKey.OFFSETS_FOR_LEADER_EPOCH, request, error, {"leader_epoch": epoch, "end_offset": end})


partition_extras = st.lists(st.dictionaries(st.sampled_from(["hw", "leo", "topic_id", "note"]),
                                            st.one_of(i64, st.text(max_size=5), st.booleans(), st.none()),
                                            max_size=3), max_size=3)
tag_values = st.one_of(i64, st.booleans(), st.text(max_size=5), st.none(), st.binary(max_size=3),
                       partition_extras, st.lists(i64, max_size=2))


@given(st.dictionaries(st.sampled_from(["clock", "message", "broker_epoch", "partition_extras"]),
                       tag_values, max_size=4))
def test_the_tag_is_the_value_encoding_of_its_map(extras: dict[str, Any]) -> None:
    raw = _encode_extras(extras)
    assert raw == encode_value(extras)
    assert _decode_extras(raw) == extras


@given(st.dictionaries(st.sampled_from(["clock", "partition_extras"]), tag_values, max_size=2),
       st.data())
def test_a_damaged_tag_is_read_as_the_value_encoding_reads_it(extras: dict[str, Any], data: st.DataObject) -> None:
    raw = bytearray(encode_value(extras))
    if data.draw(st.booleans()):
        del raw[data.draw(st.integers(0, len(raw) - 1)):]
    else:
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 0xFF))
    try:
        expected: Any = decode_value(bytes(raw))
    except ProtocolError as exc:
        with pytest.raises(ProtocolError, match=re.escape(str(exc))):
            _decode_extras(bytes(raw))
    else:
        assert _decode_extras(bytes(raw)) == expected


# -- record batches: the hand-written writer and reader against kio's, over generated records

@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**40), st.lists(st.tuples(st.integers(0, 9000), st.integers(0, 3), st.binary(max_size=300)),
                                       min_size=1, max_size=80), st.integers(8192, 8300))
def test_generated_batches_read_as_kio_reads_them(base: int, runs: list[tuple[int, int, bytes]], big: int) -> None:
    records, offset = [], base
    for gap, epoch, value in runs:  # offsets ascending, gaps past one varint byte, epochs in runs
        records.append([offset, epoch, value])
        offset += 1 + gap % 3 * 40
    records.append([offset + 9000, runs[-1][1], bytes([big % 256]) * big])  # an offset delta and a value past 8191
    data = write_records(records)
    pos, seen = 0, []
    while pos < len(data):
        batch, size = read_batch(data, pos)
        seen += [[r.offset, batch.partition_leader_epoch, r.value] for r in batch.records]
        pos += size
    assert seen == records
    assert read_records(data) == (records, [])
    buf = io.BytesIO()
    write_new_batch(buf, NewRecordBatch(producer_id=-1, producer_epoch=-1, partition_leader_epoch=1,
                                        base_sequence=-1, attributes=0, records=tuple(
        KafkaRecord(attributes=0, timestamp=datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
                    offset=base + i, key=v[:3] or None, value=v, headers=())
        for i, (_, _, v) in enumerate(runs))))
    (batch,) = read_batches(buf.getvalue())
    assert batch.records == [(base + i, v[:3] or None, v) for i, (_, _, v) in enumerate(runs)]


@given(st.lists(st.binary(max_size=100), max_size=5), st.integers(-1, 2**40), st.integers(-1, 2**31 - 10))
def test_a_produces_batch_is_write_records_batch_for_its_values(vs: list[bytes], pid: int, seq: int) -> None:
    producers = [[i, pid, seq + i] for i in range(len(vs))] if pid != -1 else []
    assert write_produced(vs, pid, seq if pid != -1 else -1) == \
        write_records([[i, 0, v] for i, v in enumerate(vs)], producers)


@given(st.dictionaries(st.sampled_from(["clock", "broker_epoch"]), i64, min_size=1, max_size=2),
       st.lists(st.tuples(st.integers(0, 100), st.binary(max_size=4)), max_size=2), st.booleans())
def test_a_tag_section_is_read_alike_however_a_peer_lays_it_out(extras: dict[str, Any],
                                                                 others: list[tuple[int, bytes]],
                                                                 overlong: bool) -> None:
    as_written = bytearray()
    _write_tags(as_written, extras)
    assert _read_tags(bytes(as_written) + b"rest", 0) == (extras, len(as_written))
    raw = _encode_extras(extras)
    fields = sorted([*others, (EPOCHAL_TAG, raw)])  # a Kafka peer's: other tags, any varints
    section = bytes([len(fields) | 0x80, 0]) if overlong else bytes([len(fields)])
    for tag, value in fields:
        section += _uvarint(tag) + _uvarint(len(value)) + value
    assert _read_tags(section + b"rest", 0) == (extras, len(section))
