"""Kafka's messages between brokers, read at any version Kafka 2.x-3.9 sends: a request's
header, each inter-broker request's and answer's body (kio's schemas, and :mod:`.control`'s
for the ZooKeeper-era ones kio lacks), and what an observer keeps of each -- the fields a
trace adapter reads and a driver matches on.

Both relays read frames with it: :mod:`impl.harness.kafka.relay`, which logs real Kafka
brokers' messages, and :mod:`impl.harness.relay`, which holds and reorders the messages
between brokers for ``epochal drive`` and falls back to it for a frame that is not at the
version Epochal's own brokers send.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

from kio.index import UnknownEntity, load_request_schema, load_response_schema
from kio.schema.request_header.v1 import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2 import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0 import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1 import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader

from impl.harness.frames import control

FETCH = 1
API_VERSIONS = 18
OFFSET_FOR_LEADER_EPOCH = 23
API_NAMES = {FETCH: "Fetch", control.LEADER_AND_ISR: "LeaderAndIsr", control.STOP_REPLICA: "StopReplica",
             control.UPDATE_METADATA: "UpdateMetadata", OFFSET_FOR_LEADER_EPOCH: "OffsetForLeaderEpoch",
             control.ALTER_PARTITION: "AlterPartition"}
"""The APIs whose messages between brokers the relay logs."""
REPLICA_APIS = frozenset({FETCH, OFFSET_FOR_LEADER_EPOCH})
"""APIs both replicas and clients send: logged only with a ``replica_id`` of a broker."""

_SIZE = struct.Struct(">i")


# -- decoding -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Header:
    """A request's header; ``body_at`` is where the body starts (None: the API or version
    has no schema here, so its header's form, and the body, are unknown)."""

    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    body_at: int | None


def body_schema(api_key: int, version: int, request: bool) -> type | None:
    """The kio entity of a request's or response's body, from kio's schemas or, for the
    ZooKeeper-era messages, :mod:`.control`'s; None where neither describes it."""
    if control.described(api_key, version):
        return control.request_schema(api_key, version) if request else control.response_schema(api_key, version)
    try:
        return load_request_schema(api_key, version) if request else load_response_schema(api_key, version)
    except UnknownEntity:
        return None


def decode_request_header(payload: bytes) -> Header:
    """A request's header: v2 (with tagged fields) for a flexible version, else v1; the
    client id is read the same way in both."""
    header, size = entity_reader(RequestHeaderV1)(payload, 0)
    schema = body_schema(header.request_api_key, header.request_api_version, request=True)
    body_at: int | None = size
    if schema is None:
        body_at = None
    elif schema.__flexible__:
        header, body_at = entity_reader(RequestHeaderV2)(payload, 0)
    return Header(int(header.request_api_key), int(header.request_api_version),
                  int(header.correlation_id), header.client_id, body_at)


def decode_response(payload: bytes, api_key: int, version: int) -> Any:
    """The body of an answer to a request of ``api_key`` at ``version`` (None: no schema).
    Its header is v1 for a flexible version, except ApiVersions' (always v0)."""
    schema = body_schema(api_key, version, request=False)
    if schema is None:
        return None
    header_type = ResponseHeaderV1 if schema.__flexible__ and api_key != API_VERSIONS else ResponseHeaderV0
    _, size = entity_reader(header_type)(payload, 0)
    return entity_reader(schema)(payload, size)[0]


def response_correlation_id(payload: bytes) -> int:
    return int(_SIZE.unpack_from(payload)[0])


def decode_request(payload: bytes, header: Header) -> Any:
    if header.body_at is None:
        return None
    if header.api_key in control.PREFIXES:
        return control.read_prefix(header.api_key, header.version, payload, header.body_at)
    schema = body_schema(header.api_key, header.version, request=True)
    return entity_reader(schema)(payload, header.body_at)[0]


# -- what is logged of each message ---------------------------------------------------------
TopicIds = dict[uuid.UUID, str]
"""Topic ids (Fetch from v13, LeaderAndIsr from v5, AlterPartition from v2) to names, as the
LeaderAndIsr requests forwarded so far name them."""


def _topic(entry: Any, topic_ids: TopicIds) -> dict[str, Any]:
    """A topic entry's name, and its id where the version names topics by id."""
    for name_field in ("topic", "topic_name", "name"):
        if hasattr(entry, name_field):
            return {"topic": getattr(entry, name_field)}
    topic_id = getattr(entry, "topic_id", None)
    return {"topic": topic_ids.get(topic_id) if topic_id else None, "topic_id": str(topic_id)}


def _int(value: Any) -> int:
    return int(value.value) if hasattr(value, "value") else int(value)


def _leader_and_isr(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    partitions = []
    grouped = [(t, t.partition_states) for t in getattr(body, "topic_states", ())]
    grouped += [(p, (p,)) for p in getattr(body, "ungrouped_partition_states", ())]
    for topic, states in grouped:
        topic_id = getattr(topic, "topic_id", None)
        if topic_id is not None:
            topic_ids[topic_id] = topic.topic_name
        for p in states:
            partitions.append({**_topic(topic, topic_ids), "partition": p.partition_index,
                               "controller_epoch": p.controller_epoch, "leader": p.leader,
                               "leader_epoch": p.leader_epoch, "isr": list(p.isr),
                               "zk_version": p.zk_version, "replicas": list(p.replicas)})
    return {"src": body.controller_id, "controller_epoch": body.controller_epoch,
            "broker_epoch": getattr(body, "broker_epoch", -1), "partitions": partitions}


def _stop_replica(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    partitions = [{"topic": p.topic_name, "partition": p.partition_index,
                   "delete": body.delete_partitions} for p in getattr(body, "ungrouped_partitions", ())]
    partitions += [{"topic": t.name, "partition": i, "delete": body.delete_partitions}
                   for t in getattr(body, "topics", ()) for i in t.partition_indexes]
    partitions += [{"topic": t.topic_name, "partition": p.partition_index, "leader_epoch": p.leader_epoch,
                    "delete": p.delete_partition}
                   for t in getattr(body, "topic_states", ()) for p in t.partition_states]
    return {"src": body.controller_id, "controller_epoch": body.controller_epoch, "partitions": partitions}


def _update_metadata(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    return {"src": body.controller_id, "controller_epoch": body.controller_epoch}


def fetch_replica_id(body: Any) -> int:
    """The fetching replica (-1: a consumer): a field of its own before v15, then in
    ``replica_state``."""
    if hasattr(body, "replica_state"):
        return int(body.replica_state.replica_id)
    return int(getattr(body, "replica_id", -1))


def _fetch_request(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    return {"src": fetch_replica_id(body), "session_id": body.session_id, "session_epoch": body.session_epoch,
            "partitions": [{**_topic(t, topic_ids), "partition": p.partition, "fetch_offset": p.fetch_offset,
                            "current_leader_epoch": getattr(p, "current_leader_epoch", -1),
                            "last_fetched_epoch": getattr(p, "last_fetched_epoch", -1),
                            "log_start_offset": getattr(p, "log_start_offset", -1)}
                           for t in body.topics for p in t.partitions]}


def _offset_for_leader_epoch(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    return {"src": getattr(body, "replica_id", -1),
            "partitions": [{**_topic(t, topic_ids), "partition": p.partition,
                            "current_leader_epoch": p.current_leader_epoch, "leader_epoch": p.leader_epoch}
                           for t in body.topics for p in t.partitions]}


def _alter_partition(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    def isr(p: Any) -> list[int]:
        if hasattr(p, "new_isr_with_epochs"):
            return [s.broker_id for s in p.new_isr_with_epochs]
        return list(p.new_isr)
    return {"src": body.broker_id, "broker_epoch": body.broker_epoch,
            "partitions": [{**_topic(t, topic_ids), "partition": p.partition_index,
                            "leader_epoch": p.leader_epoch, "isr": isr(p), "zk_version": p.partition_epoch}
                           for t in body.topics for p in t.partitions]}


_REQUEST_SUMMARIES = {control.LEADER_AND_ISR: _leader_and_isr, control.STOP_REPLICA: _stop_replica,
                      control.UPDATE_METADATA: _update_metadata, FETCH: _fetch_request,
                      OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch, control.ALTER_PARTITION: _alter_partition}


def summarize_request(api_key: int, body: Any, topic_ids: TopicIds) -> dict[str, Any] | None:
    """What the log keeps of an inter-broker request, or None if it is not one (a client's
    Fetch or OffsetForLeaderEpoch, or an API not in :data:`API_NAMES`)."""
    summary = _REQUEST_SUMMARIES.get(api_key)
    if summary is None:
        return None
    found = summary(body, topic_ids)
    if api_key in REPLICA_APIS and found["src"] < 0:
        return None
    return found


_BATCH_HEADER = struct.Struct(">qiibIhi")  # base offset, length, leader epoch, magic, crc, attributes, last delta
_RECORD_COUNT_AT = 57


def record_batches(records: bytes | None) -> dict[str, Any]:
    """What a fetch answer's ``records`` hold: the count of records, the last offset and the
    batches' partition leader epochs (a trailing partial batch, which Kafka may send, is
    left out)."""
    count, last_offset, epochs, at = 0, None, [], 0
    data = records or b""
    while at + _RECORD_COUNT_AT + 4 <= len(data):
        base, length, epoch, magic, _, _, last_delta = _BATCH_HEADER.unpack_from(data, at)
        if at + 12 + length > len(data) or magic != 2:
            break
        count += _SIZE.unpack_from(data, at + _RECORD_COUNT_AT)[0]
        last_offset = base + last_delta
        if epoch not in epochs:
            epochs.append(epoch)
        at += 12 + length
    return {"records": count, "last_offset": last_offset, "batch_leader_epochs": epochs}


def _fetch_response(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    partitions = []
    for t in body.responses:
        for p in t.partitions:
            diverging = getattr(p, "diverging_epoch", None)
            partitions.append({
                **_topic(t, topic_ids), "partition": p.partition_index, "error": _int(p.error_code),
                "high_watermark": p.high_watermark, "log_start_offset": p.log_start_offset,
                "diverging_epoch": None if diverging is None or diverging.epoch < 0 else
                {"epoch": diverging.epoch, "end_offset": diverging.end_offset},
                **record_batches(p.records)})
    return {"error": _int(body.error_code), "session_id": body.session_id, "partitions": partitions}


def _offset_for_leader_epoch_response(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    return {"partitions": [{**_topic(t, topic_ids), "partition": p.partition, "error": _int(p.error_code),
                            "leader_epoch": p.leader_epoch, "end_offset": p.end_offset}
                           for t in body.topics for p in t.partitions]}


def _alter_partition_response(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    return {"error": _int(body.error_code),
            "partitions": [{**_topic(t, topic_ids), "partition": p.partition_index, "error": _int(p.error_code),
                            "leader": p.leader_id, "leader_epoch": p.leader_epoch, "isr": list(p.isr),
                            "zk_version": p.partition_epoch}
                           for t in body.topics for p in t.partitions]}


def _control_response(body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    return {"error": _int(body.error_code)}


_RESPONSE_SUMMARIES = {control.LEADER_AND_ISR: _control_response, control.STOP_REPLICA: _control_response,
                       control.UPDATE_METADATA: _control_response, FETCH: _fetch_response,
                       OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch_response,
                       control.ALTER_PARTITION: _alter_partition_response}


def summarize_response(api_key: int, body: Any, topic_ids: TopicIds) -> dict[str, Any]:
    return _RESPONSE_SUMMARIES[api_key](body, topic_ids)
