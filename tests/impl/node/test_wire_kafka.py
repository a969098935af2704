"""The APIs that travel as Kafka's messages: every body Epochal sends and answers comes
back as it was sent, in Kafka's frames (request header v2, response header v1, kio's
entities), the clock and the fields Kafka lacks in the header's one tagged field; a Kafka
reader that knows nothing of that tag reads the same frames."""

from __future__ import annotations

import dataclasses
import datetime
import io
from typing import Any

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KafkaRecord
from kio.records.writers import write_new_batch
from kio.serial import entity_reader, entity_writer

from impl.node.codes import KAFKA_VERSIONS
from impl.node.kafka.translate import EPOCHAL_TAG, TRANSLATIONS
from impl.node.kafka.translate.batches import Batch, read_batches
from impl.node.kafka.translate.replication import read_records, write_records
from impl.node.wire import (
    API_VERSIONS,
    ApiKey,
    ErrorCode,
    ProtocolError,
    decode_encoded_body,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    encoded_body,
)

_FENCE = {"controller_id": 1, "controller_epoch": 3}
_STATE = {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 2, "isr": [1, 2],
          "replicas": [1, 2, 3], "zk_version": 5}

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while data[pos] & 0x80:
        value, shift, pos = value | (data[pos] & 0x7F) << shift, shift + 7, pos + 1
    return value | data[pos] << shift, pos + 1


def _skip_tags(data: bytes, pos: int) -> tuple[list[int], int]:
    """A tagged-field section read as any Kafka reader does: each tag skipped by its size."""
    count, pos = _varint(data, pos)
    tags = []
    for _ in range(count):
        tag, pos = _varint(data, pos)
        size, pos = _varint(data, pos)
        tags.append(tag)
        pos += size
    return tags, pos


REQUESTS: list[tuple[ApiKey, dict[str, Any]]] = [
    (ApiKey.LEADER_AND_ISR, {**_FENCE, "max_broker_epoch": 77, "init": True, "leaders": {"1": ["h", 9]},
                             "partitions": [{**_STATE, "topic_id": 9}, {**_STATE, "topic": "u"}]}),
    (ApiKey.LEADER_AND_ISR, {**_FENCE, "broker_epoch": 12, "partitions": [_STATE], "leaders": {}}),
    (ApiKey.LEADER_AND_ISR, {**_FENCE, "broker_epoch": -1, "partitions": [], "leaders": {}}),
    (ApiKey.STOP_REPLICA, {**_FENCE, "broker_epoch": 7, "delete": True, "partitions": [["t", 0, 4], ["u", 1]]}),
    (ApiKey.STOP_REPLICA, {**_FENCE, "max_broker_epoch": 7, "delete": False, "partitions": []}),
    (ApiKey.UPDATE_METADATA, {**_FENCE, "max_broker_epoch": 5, "partial": True, "brokers": {"1": ["h", 1]},
                              "topics": {"t": {"0": {"leader": 1, "leader_epoch": 0, "isr": [1],
                                                     "replicas": [1]}}, "gone": {}}}),
    (ApiKey.CONTROLLED_SHUTDOWN, {"broker_id": 2, "broker_epoch": 99}),
    (ApiKey.FETCH, {"topic": "t", "partition": 0, "fetch_offset": 5, "max_records": 10, "max_wait_ms": 100}),
    (ApiKey.FETCH, {"replica_id": 2, "broker_epoch": 99, "max_records": 1000, "max_bytes": 100000,
                    "partition_max_bytes": 5000, "max_wait_ms": 500, "partitions": [
                        {"topic": "t", "partition": 0, "fetch_offset": 3, "hw": 2, "leader_epoch": 1,
                         "topic_id": 7}, {"topic": "u", "partition": 1, "fetch_offset": 0}]}),
    (ApiKey.OFFSETS_FOR_LEADER_EPOCH, {"topic": "t", "partition": 0, "leader_epoch": 3,
                                       "current_leader_epoch": 4, "replica_id": 1, "topic_id": 3}),
    (ApiKey.PRODUCE, {"topic": "t", "partition": 1, "values": [b"a", b"\xffK\x06b"], "acks": -1,
                      "timeout_ms": 5000, "producer_id": 7, "base_sequence": 10}),
    (ApiKey.PRODUCE, {"topic": "t", "partition": 0, "values": [b"x"], "acks": 1, "timeout_ms": 100}),
    (ApiKey.METADATA, {}),
    (ApiKey.INIT_PRODUCER_ID, {"client_id": "c"}),
    (ApiKey.SASL_HANDSHAKE, {"mechanism": "SCRAM-SHA-256"}),
    (ApiKey.SASL_AUTHENTICATE, {"auth_bytes": b"n,,n=alice,r=abc"}),
    (ApiKey.CREATE_TOPICS, {"user": "alice", "client_id": "c", "validate_only": True, "topics": [
        {"topic": "t", "partitions": 3, "replication_factor": 2},
        {"topic": "u", "assignment": {"0": [1, 2], "1": [2, 0]}}]}),
    (ApiKey.CREATE_TOPICS, {"topic": "t", "partitions": 1, "replication_factor": 1, "user": "bob",
                            "client_id": "old", "forward_id": "f1", "original_version": 0}),
    (ApiKey.DELETE_TOPICS, {"topics": ["t", "u"], "user": "alice"}),
    (ApiKey.DELETE_TOPICS, {"topic": "t"}),
    (ApiKey.CREATE_PARTITIONS, {"validate_only": True, "topics": [
        {"topic": "t", "count": 4}, {"topic": "u", "count": 3, "assignments": [[1, 2], [2, 0]]}]}),
    (ApiKey.CREATE_PARTITIONS, {"topic": "t", "count": 2, "client_id": "old"}),
    (ApiKey.ELECT_PREFERRED, {"topic": "t", "partition": 3, "user": "alice", "client_id": "c"}),
    (ApiKey.REASSIGN_PARTITIONS, {"topic": "t", "partition": 1, "replicas": [2, 0, 1], "user": "bob",
                                  "forward_id": "f2", "original_version": 0}),
    (ApiKey.DESCRIBE_CLIENT_QUOTAS, {"user": "alice"}),
    (ApiKey.DESCRIBE_CLIENT_QUOTAS, {}),
    (ApiKey.ALTER_CLIENT_QUOTAS, {"validate_only": True, "entries": [
        {"user": "alice", "client_id": None, "rate": 2.5}, {"user": "<default>", "client_id": "c", "rate": None},
        {"user": None, "client_id": "<default>", "rate": 1.0}]}),
    (ApiKey.ALTER_CLIENT_QUOTAS, {"user": "admin", "entries": [{"user": "u", "client_id": "c", "rate": 10.0}]}),
    (ApiKey.ENVELOPE, {"request_data": b"\x00\x13\x00\x06inner", "request_principal": b"\x00\x00\x05User\x04bob\x00\x00",
                       "client_host_address": b"\x7f\x00\x00\x01", "forwarded_by": 2}),
]

ANSWERS: list[tuple[ApiKey, dict[str, Any], int, dict[str, Any]]] = [
    (ApiKey.LEADER_AND_ISR, {}, 0, {"partitions": [["t", 0, int(ErrorCode.FENCED_LEADER_EPOCH)]]}),
    (ApiKey.LEADER_AND_ISR, {}, ErrorCode.STALE_CONTROLLER_EPOCH, {"message": "stale"}),
    (ApiKey.STOP_REPLICA, {}, 0, {}),
    (ApiKey.UPDATE_METADATA, {}, ErrorCode.STALE_BROKER_EPOCH, {"message": "older"}),
    (ApiKey.CONTROLLED_SHUTDOWN, {}, 0, {"remaining_leaderships": [["t", 1]], "remaining_isr": [["u", 0]]}),
    (ApiKey.FETCH, {"topic": "t", "partition": 0, "fetch_offset": 0}, 0,
     {"records": [[0, 1, b"a"], [1, 1, b"\xffKb"], [2, 2, b"c"]], "hw": 3, "leo": 3, "leader_epoch": 2,
      "log_start_offset": 0}),
    (ApiKey.FETCH, {"topic": "t", "partition": 0, "fetch_offset": 9}, ErrorCode.OFFSET_OUT_OF_RANGE,
     {"message": "beyond", "leo": 3, "hw": 3, "log_start_offset": 0}),
    (ApiKey.FETCH, {"replica_id": 1}, 0, {"partitions": [
        {"topic": "t", "partition": 0, "error": 0, "hw": 3, "leo": 4, "leader_epoch": 2, "topic_id": 7,
         "records": [[0, 1, b"a"], [1, 1, b"b"], [2, 1, b"c"], [3, 2, b"d"]],
         "producers": [[0, 5, 0], [1, 5, 1], [3, 5, 2]]},
        {"topic": "t", "partition": 1, "error": int(ErrorCode.NOT_LEADER), "leader": 2}]}),
    (ApiKey.OFFSETS_FOR_LEADER_EPOCH, {"topic": "t", "partition": 0}, 0, {"leader_epoch": 3, "end_offset": 10}),
    (ApiKey.OFFSETS_FOR_LEADER_EPOCH, {"topic": "t", "partition": 0}, ErrorCode.FENCED_LEADER_EPOCH,
     {"message": "x", "leader_epoch": 5}),
    (ApiKey.PRODUCE, {"topic": "t", "partition": 0}, 0, {"base_offset": 4, "leader_epoch": 2, "duplicate": True}),
    (ApiKey.PRODUCE, {"topic": "t", "partition": 0}, ErrorCode.NOT_LEADER, {"message": "no", "leader": 2}),
    (ApiKey.METADATA, {}, 0, {"brokers": {"0": ["h", 1], "1": ["h", 2]}, "controller_id": 1,
                              "controller_epoch": 4, "topics": {"t": {"0": {
                                  "leader": 1, "leader_epoch": 3, "isr": [1, 0], "replicas": [0, 1]}}, "e": {}}}),
    (ApiKey.METADATA, {}, ErrorCode.ILLEGAL_SASL_STATE, {"message": "sign in first"}),
    (ApiKey.INIT_PRODUCER_ID, {}, 0, {"producer_id": 1000, "producer_epoch": 0}),
    (ApiKey.INIT_PRODUCER_ID, {}, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {"message": "no"}),
    (ApiKey.SASL_AUTHENTICATE, {}, 0, {"auth_bytes": b"r=abc,s=x,i=4096", "principal": "alice"}),
    (ApiKey.SASL_AUTHENTICATE, {}, ErrorCode.SASL_AUTHENTICATION_FAILED, {"message": "bad proof"}),
    (ApiKey.CREATE_TOPICS, {"topics": [{"topic": "a"}, {"topic": "b"}]}, 0, {"throttle_time_ms": 0, "topics": [
        {"topic": "a", "error": 0, "assignment": {"0": [1, 2]}},
        {"topic": "b", "error": int(ErrorCode.THROTTLING_QUOTA_EXCEEDED), "message": "quota",
         "throttle_time_ms": 300}]}),
    (ApiKey.CREATE_TOPICS, {"topic": "a"}, 0, {"topic": "a", "assignment": {"0": [1]}, "throttle_time_ms": 50}),
    (ApiKey.CREATE_TOPICS, {"topics": [{"topic": "a"}]}, ErrorCode.NOT_CONTROLLER,
     {"message": "broker 1 is not the controller", "throttle_time_ms": 0, "controller_id": 2}),
    (ApiKey.DELETE_TOPICS, {"topics": ["a"]}, 0, {"throttle_time_ms": 0, "topics": [
        {"topic": "a", "error": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), "message": "no such topic"}]}),
    (ApiKey.DELETE_TOPICS, {"topic": "a"}, 0, {"topic": "a", "throttle_time_ms": 0}),
    (ApiKey.CREATE_PARTITIONS, {"topics": [{"topic": "a", "count": 2}]}, 0, {"throttle_time_ms": 10, "topics": [
        {"topic": "a", "error": 0, "added": {"1": [0, 1]}}]}),
    (ApiKey.CREATE_PARTITIONS, {"topic": "a", "count": 2}, ErrorCode.INVALID_PARTITIONS,
     {"message": "fewer", "throttle_time_ms": 0, "controller_id": 1}),
    (ApiKey.ELECT_PREFERRED, {"topic": "a", "partition": 0}, 0, {}),
    (ApiKey.ELECT_PREFERRED, {"topic": "a", "partition": 0}, ErrorCode.NOT_CONTROLLER,
     {"message": "broker 1 is not the controller", "throttle_time_ms": 0, "controller_id": 2}),
    (ApiKey.ELECT_PREFERRED, {}, ErrorCode.INVALID_REQUEST, {"message": "bad request", "throttle_time_ms": 0}),
    (ApiKey.REASSIGN_PARTITIONS, {"topic": "a", "partition": 1}, 0, {"topic": "a", "partition": 1}),
    (ApiKey.REASSIGN_PARTITIONS, {"topic": "a", "partition": 1}, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     {"message": "broker 7 is not registered", "throttle_time_ms": 0, "controller_id": 1}),
    (ApiKey.DESCRIBE_CLIENT_QUOTAS, {}, 0, {"quotas": [
        {"user": "alice", "client_id": None, "controller_mutation_rate": 2.5},
        {"user": "<default>", "client_id": "<default>", "controller_mutation_rate": 1.0}],
        "metrics": {"alice/": {"rate": 0.5}}, "controller_id": 1, "from_controller": True}),
    (ApiKey.DESCRIBE_CLIENT_QUOTAS, {}, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
     {"message": "no", "throttle_time_ms": 0, "controller_id": 1}),
    (ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [{"user": "u", "client_id": None, "rate": 1.0}]}, 0, {"altered": 1}),
    (ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [{"user": "u", "client_id": None, "rate": -1.0}]},
     ErrorCode.INVALID_REQUEST, {"message": "must be positive", "throttle_time_ms": 0, "controller_id": 0}),
    (ApiKey.ALTER_CLIENT_QUOTAS, {}, ErrorCode.NOT_CONTROLLER, {"message": "no", "throttle_time_ms": 0}),
    (ApiKey.ENVELOPE, {}, 0, {"response_data": b"\x00\x00\x00\x07inner answer"}),
    (ApiKey.ENVELOPE, {}, ErrorCode.NOT_CONTROLLER, {"message": "broker 1 is not the controller",
                                                     "controller_id": 2}),
]

# SaslHandshake has no flexible version: no tag, so no clock and no error message
UNTAGGED: list[tuple[ApiKey, dict[str, Any], int, dict[str, Any]]] = [
    (ApiKey.SASL_HANDSHAKE, {}, 0, {"mechanisms": ["SCRAM-SHA-256"]}),
    (ApiKey.SASL_HANDSHAKE, {}, ErrorCode.UNSUPPORTED_SASL_MECHANISM, {}),
]


def test_every_kafka_api_has_a_translation_and_a_sample() -> None:
    assert set(TRANSLATIONS) == set(KAFKA_VERSIONS)
    assert {api for api, _ in REQUESTS} == set(KAFKA_VERSIONS)
    assert {api for api, *_ in ANSWERS + UNTAGGED} == set(KAFKA_VERSIONS)


@pytest.mark.parametrize(("api", "body"), REQUESTS, ids=lambda x: getattr(x, "name", ""))
def test_a_request_comes_back_as_sent_and_a_kafka_reader_reads_it(api: ApiKey, body: dict[str, Any]) -> None:
    flexible = TRANSLATIONS[api].flexible
    payload = encode_request(api, API_VERSIONS[api], 42, 1234, body)[4:]
    assert decode_request_header(payload) == (api, API_VERSIONS[api], 42, 1234 if flexible else 0)
    assert decode_request_body(payload) == body
    # request header v2 (v1: no tagged fields): api key, version, correlation id, client id
    assert int.from_bytes(payload[:2], "big") == api and int.from_bytes(payload[4:8], "big") == 42
    size = 8 + 2 + int.from_bytes(payload[8:10], "big")
    if flexible:
        tags, size = _skip_tags(payload, size)
        assert tags == [EPOCHAL_TAG]
    _, body_size = entity_reader(load_request_schema(api, KAFKA_VERSIONS[api]))(payload, size)
    assert size + body_size == len(payload)


@pytest.mark.parametrize(("api", "request_body", "error", "body"), ANSWERS,
                         ids=lambda x: getattr(x, "name", ""))
def test_an_answer_comes_back_as_sent_and_a_kafka_reader_reads_it(
        api: ApiKey, request_body: dict[str, Any], error: int, body: dict[str, Any]) -> None:
    payload = encode_response(7, 99, error, body, api, request_body)[4:]
    assert decode_response(payload, api) == (7, 99, error, body)
    assert int.from_bytes(payload[:4], "big") == 7  # response header v1: correlation id, tags
    tags, size = _skip_tags(payload, 4)
    assert tags == [EPOCHAL_TAG]
    _, body_size = entity_reader(load_response_schema(api, KAFKA_VERSIONS[api]))(payload, size)
    assert size + body_size == len(payload)


@pytest.mark.parametrize(("api", "request_body", "error", "body"), UNTAGGED,
                         ids=lambda x: getattr(x, "name", ""))
def test_an_untagged_answer_loses_the_clock_and_keeps_kafkas_fields(
        api: ApiKey, request_body: dict[str, Any], error: int, body: dict[str, Any]) -> None:
    payload = encode_response(7, 99, error, {**body, "message": "lost"}, api, request_body)[4:]
    assert decode_response(payload, api) == (7, 0, error, body)
    _, size = entity_reader(load_response_schema(api, KAFKA_VERSIONS[api]))(payload, 4)
    assert 4 + size == len(payload)


def test_a_replica_fetch_whose_partitions_interleave_topics_keeps_each_partitions_fields() -> None:
    """A follower rotates its partitions (a, b, a); Kafka's message groups them by topic, and
    the fields Kafka lacks (the tag's per-partition list) must follow that grouping both ways."""
    parts = [{"topic": "a", "partition": 2, "fetch_offset": 1, "hw": 10, "topic_id": 100},
             {"topic": "b", "partition": 0, "fetch_offset": 2, "hw": 20, "topic_id": 200},
             {"topic": "a", "partition": 0, "fetch_offset": 3, "hw": 30, "topic_id": 100}]
    request = {"replica_id": 2, "partitions": parts}
    read = decode_request_body(encode_request(ApiKey.FETCH, API_VERSIONS[ApiKey.FETCH], 1, 0, request)[4:])
    assert read["partitions"] == [parts[0], parts[2], parts[1]]
    answer = {"partitions": [{"topic": p["topic"], "partition": p["partition"], "error": 0, "hw": p["hw"],
                              "leo": p["fetch_offset"], "topic_id": p["topic_id"], "records": []} for p in parts]}
    _, _, _, got = decode_response(encode_response(7, 1, 0, answer, ApiKey.FETCH, request)[4:], ApiKey.FETCH)
    expected = answer["partitions"]
    assert got["partitions"] == [expected[0], expected[2], expected[1]]


def test_a_body_encoded_once_is_what_its_recipients_read() -> None:
    api, body = REQUESTS[5]
    shared = encoded_body(api, body)
    assert decode_encoded_body(api, shared) == body
    assert decode_request_body(encode_request(api, API_VERSIONS[api], 1, 0, shared)[4:]) == body


def test_a_version_epochal_does_not_speak_is_unsupported() -> None:
    payload = bytearray(encode_request(ApiKey.STOP_REPLICA, 3, 1, 0, REQUESTS[3][1])[4:])
    payload[2:4] = (1).to_bytes(2, "big")
    with pytest.raises(ProtocolError) as exc:
        decode_request_body(bytes(payload))
    assert exc.value.code == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_a_truncated_kafka_body_is_an_invalid_request(cut: int) -> None:
    payload = encode_request(ApiKey.LEADER_AND_ISR, 4, 1, 0, REQUESTS[0][1])[4:]
    with pytest.raises(ProtocolError) as exc:
        decode_request_body(payload[:-cut])
    assert exc.value.code == ErrorCode.INVALID_REQUEST


# -- record batches: the hand-written writer and reader against kio's -----------------------

def test_epochals_batches_read_as_kio_reads_them_and_kios_as_epochal_reads_them() -> None:
    records = [[5, 2, b"a"], [6, 2, b""], [7, 3, b"\xffK" + b"v" * 300], [9, 3, b"z"]]
    producers = [[7, 40, 11], [9, 40, 13]]
    data = write_records(records, producers)
    pos, seen = 0, []
    while pos < len(data):  # kio checks the CRC, the lengths and the varints
        batch, size = read_batch(data, pos)
        seen += [[r.offset, batch.partition_leader_epoch, r.value, batch.producer_id,
                  batch.base_sequence] for r in batch.records]
        pos += size
    assert seen == [[5, 2, b"a", -1, -1], [6, 2, b"", -1, -1], [7, 3, records[2][2], 40, 11],
                    [9, 3, b"z", 40, 13]]
    assert read_records(data) == (records, producers)
    buf = io.BytesIO()
    write_new_batch(buf, NewRecordBatch(producer_id=8, producer_epoch=0, partition_leader_epoch=4,
                                        base_sequence=2, attributes=0, records=tuple(
        KafkaRecord(attributes=0, timestamp=datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
                    offset=o, key=k, value=v, headers=()) for o, k, v in
        ((10, None, b"p"), (11, b"key", b"q")))))
    (batch,) = read_batches(buf.getvalue())
    assert batch == Batch(4, 8, 2, [(10, None, b"p"), (11, b"key", b"q")])


@pytest.mark.parametrize("damage", ["crc", "truncated"])
def test_a_damaged_batch_is_a_protocol_error(damage: str) -> None:
    data = bytearray(write_records([[0, 1, b"abc"]]))
    if damage == "crc":
        data[-2] ^= 0xFF
    with pytest.raises(ProtocolError):
        read_records(bytes(data if damage == "crc" else data[:-3]))


# -- a replica fetch over several topics -------------------------------------------------------

def _by_partition(parts: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(p["topic"], p["partition"]): p for p in parts}


# a follower starts each fetch at the next partition (so none waits behind the others): its
# partitions interleave topics, while Kafka's message holds them grouped by topic
_INTERLEAVED = [
    {"topic": "t", "partition": 1, "fetch_offset": 8, "hw": 8, "leader_epoch": 2, "topic_id": 1},
    {"topic": "u", "partition": 0, "fetch_offset": 4, "hw": 3, "leader_epoch": 5, "topic_id": 2},
    {"topic": "t", "partition": 0, "fetch_offset": 6, "hw": 5, "leader_epoch": 2, "topic_id": 1},
]


def test_each_partition_of_a_replica_fetch_keeps_its_own_hw_and_topic_id() -> None:
    body = {"replica_id": 2, "broker_epoch": 9, "max_records": 1000, "partitions": _INTERLEAVED}
    payload = encode_request(ApiKey.FETCH, API_VERSIONS[ApiKey.FETCH], 1, 1, body)[4:]
    read = decode_request_body(payload)
    assert _by_partition(read["partitions"]) == _by_partition(_INTERLEAVED)
    assert [p["topic"] for p in read["partitions"]] == ["t", "t", "u"]  # Kafka's order


def test_each_partition_of_a_fetch_answer_keeps_its_own_hw_and_leo() -> None:
    answered = [{"topic": p["topic"], "partition": p["partition"], "error": 0, "records": [],
                 "hw": p["hw"] + 1, "leo": p["fetch_offset"] + 2, "leader_epoch": p["leader_epoch"],
                 "topic_id": p["topic_id"]} for p in _INTERLEAVED]
    payload = encode_response(3, 1, 0, {"partitions": answered}, ApiKey.FETCH, {"replica_id": 2})[4:]
    _, _, error, read = decode_response(payload, ApiKey.FETCH)
    assert error == 0 and _by_partition(read["partitions"]) == _by_partition(answered)


@pytest.mark.parametrize("api", [ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS],
                         ids=lambda a: a.name)
def test_an_admin_requests_epochal_version_rides_in_the_tag_beside_kafkas(api: ApiKey) -> None:
    """Kafka's header holds the one Kafka version Epochal speaks; whether the request is
    forwarded (Epochal's version 0) or not (1) is the tag's, and a request without it (a
    Kafka peer's) is at the controller version."""
    body = next(b for a, b in REQUESTS if a == api and "topic" in b)
    for version in (0, 1):
        payload = encode_request(api, version, 3, 5, body)[4:]
        assert int.from_bytes(payload[2:4], "big") == KAFKA_VERSIONS[api]
        assert decode_request_header(payload) == (api, version, 3, 5)
        assert decode_request_body(payload) == body
    schema = load_request_schema(api, KAFKA_VERSIONS[api])
    kafka_body = io.BytesIO()
    entity_writer(schema)(kafka_body, entity_reader(schema)(
        encode_request(api, 0, 3, 5, body)[4:], 8 + 2 + len("epochal") + _tag_size(api, body))[0])
    plain = api.to_bytes(2, "big") + KAFKA_VERSIONS[api].to_bytes(2, "big") + (9).to_bytes(4, "big") \
        + (1).to_bytes(2, "big") + b"k" + b"\x00" + kafka_body.getvalue()
    assert decode_request_header(plain) == (api, API_VERSIONS[api], 9, 0)
    older = bytearray(plain)
    older[2:4] = (KAFKA_VERSIONS[api] - 1).to_bytes(2, "big")
    with pytest.raises(ProtocolError) as exc:
        decode_request_header(bytes(older))
    assert exc.value.code == ErrorCode.UNSUPPORTED_VERSION


def _tag_size(api: ApiKey, body: dict[str, Any]) -> int:
    payload = encode_request(api, 0, 3, 5, body)[4:]
    start = 8 + 2 + len("epochal")
    return _skip_tags(payload, start)[1] - start


def _kafka_entity(api: ApiKey, body: dict[str, Any]) -> Any:
    """The request as a Kafka broker's reader sees it (the tag skipped)."""
    payload = encode_request(api, API_VERSIONS[api], 3, 5, body)[4:]
    _, pos = _skip_tags(payload, 8 + 2 + int.from_bytes(payload[8:10], "big"))
    return entity_reader(load_request_schema(api, KAFKA_VERSIONS[api]))(payload, pos)[0]


def test_the_admin_requests_say_in_kafkas_fields_what_epochal_asks() -> None:
    elect = _kafka_entity(ApiKey.ELECT_PREFERRED, {"topic": "t", "partition": 3})
    assert elect.election_type == 0 and [(t.topic, t.partitions) for t in elect.topic_partitions] == [("t", (3,))]
    moved = _kafka_entity(ApiKey.REASSIGN_PARTITIONS, {"topic": "t", "partition": 1, "replicas": [2, 0]})
    assert [(t.name, p.partition_index, p.replicas) for t in moved.topics for p in t.partitions] == [("t", 1, (2, 0))]
    quotas = _kafka_entity(ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [
        {"user": "<default>", "client_id": "c", "rate": None}, {"user": "u", "client_id": None, "rate": 2.0}]})
    assert [([(c.entity_type, c.entity_name) for c in e.entity], [(o.key, o.value, o.remove) for o in e.ops])
            for e in quotas.entries] == [
        ([("user", None), ("client-id", "c")], [("controller_mutation_rate", 0.0, True)]),
        ([("user", "u")], [("controller_mutation_rate", 2.0, False)])]


def _ip_quota(e: Any) -> Any:
    entry = e.entries[0]
    return dataclasses.replace(e, entries=(dataclasses.replace(
        entry, entity=(dataclasses.replace(entry.entity[0], entity_type="ip"),)),))


@pytest.mark.parametrize(("api", "change"), [
    (ApiKey.ELECT_PREFERRED, lambda e: dataclasses.replace(e, election_type=1)),  # unclean
    (ApiKey.ELECT_PREFERRED, lambda e: dataclasses.replace(e, topic_partitions=None)),  # all partitions
    (ApiKey.ALTER_CLIENT_QUOTAS, _ip_quota),  # Epochal's quotas are per user and client id
], ids=["unclean", "all-partitions", "ip-quota"])
def test_a_kafka_admin_request_epochal_cannot_serve_is_an_invalid_request(api: ApiKey, change: Any) -> None:
    body = {ApiKey.ELECT_PREFERRED: {"topic": "t", "partition": 0},
            ApiKey.ALTER_CLIENT_QUOTAS: {"entries": [{"user": "u", "client_id": None, "rate": 1.0}]}}[api]
    schema = load_request_schema(api, KAFKA_VERSIONS[api])
    raw = io.BytesIO()
    entity_writer(schema)(raw, change(_kafka_entity(api, body)))
    plain = api.to_bytes(2, "big") + KAFKA_VERSIONS[api].to_bytes(2, "big") + (9).to_bytes(4, "big") \
        + (1).to_bytes(2, "big") + b"k" + b"\x00" + raw.getvalue()
    with pytest.raises(ProtocolError) as exc:
        decode_request_body(plain)
    assert exc.value.code == ErrorCode.INVALID_REQUEST
