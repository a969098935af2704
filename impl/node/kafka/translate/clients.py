"""What clients send as Kafka's messages: Produce v9, Metadata v9, InitProducerId v2,
SaslHandshake v1 and SaslAuthenticate v2.

A produce's values become one record batch v2 (its producer id and base sequence the
batch's, KIP-98), each value the one the log stores, verbatim (docs/wire.md 4.1).  Fields
Kafka lacks ride in the header's tag: the answer's ``leader_epoch`` and ``duplicate``,
Metadata's ``controller_epoch``, InitProducerId's ``client_id``, SaslAuthenticate's
``principal``.  Metadata has no request-level error field: a refused Metadata request
carries its error code as ``error_code`` in the tag.  SaslHandshake has no flexible
version: its frames carry no tag, so no clock (the exchange runs before any traced
request, at clock 0) and no error message.
"""

from __future__ import annotations

from typing import Any

from impl.node.codes import ApiKey, ErrorCode, ProtocolError
from impl.node.kafka.translate import (
    NOTHING,
    Body,
    Fields,
    Translation,
    read_top_level_error,
    top_level_error,
)
from impl.node.kafka.translate.replication import read_records, write_produced

DEFAULT_ACKS = -1
DEFAULT_TIMEOUT_MS = 5000
NO_PRODUCER = -1


# -- Produce ---------------------------------------------------------------------------------

def _value(v: Any) -> bytes:
    """A record's value as bytes: a string in UTF-8, bytes as they are; anything else is
    refused before it is sent (``bytes(16 * MiB)`` would be 16 MiB of zeros)."""
    if type(v) is bytes:  # nearly every value: as it is
        return v
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    raise ProtocolError(f"a record value must be bytes or a string, not {type(v).__name__}",
                        ErrorCode.INVALID_REQUEST)


def _produce_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    pid = int(body.get("producer_id", NO_PRODUCER))
    seq = int(body.get("base_sequence", -1)) if pid != NO_PRODUCER else -1
    values = [_value(v) for v in body["values"]]
    return {"transactional_id": None, "acks": int(body.get("acks", DEFAULT_ACKS)),
            "timeout": int(body.get("timeout_ms", DEFAULT_TIMEOUT_MS)),
            "topic_data": [{"name": str(body["topic"]), "partition_data": [
                {"index": int(body["partition"]), "records": write_produced(values, pid, seq)}]}]}, \
        frozenset({"topic", "partition", "values", "acks", "timeout_ms", "producer_id",
                   "base_sequence"}), {}


def _produce_from_request(e: Any, _extras: Body) -> Body:
    (topic,) = e.topic_data
    (p,) = topic.partition_data
    records, producers = read_records(p.records)
    out: Body = {"topic": topic.name, "partition": int(p.index), "values": [v for _, _, v in records],
                 "acks": int(e.acks), "timeout_ms": int(e.timeout.total_seconds() * 1000)}
    if producers:
        out["producer_id"], out["base_sequence"] = producers[0][1], producers[0][2]
    return out


def _produce_response(error: int, body: Body, request: Body) -> Fields:
    part = {"index": int(request.get("partition", -1)), "error_code": error,
            "base_offset": -1 if error else int(body["base_offset"]), "log_append_time": None,
            "log_start_offset": -1, "record_errors": []}
    return {"throttle_time": 0, "responses": [{"name": str(request.get("topic", "")),
                                               "partition_responses": [part]}]}, \
        NOTHING if error else frozenset({"base_offset"}), {}


def _produce_from_response(e: Any, _extras: Body) -> tuple[int, Body]:
    (topic,) = e.responses
    (p,) = topic.partition_responses
    if int(p.error_code):
        return int(p.error_code), {}
    return 0, {"base_offset": int(p.base_offset)}


# -- Metadata --------------------------------------------------------------------------------

def _metadata_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    return {"topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}, NOTHING, {}


def _metadata_from_request(_e: Any, _extras: Body) -> Body:
    return {}


def _metadata_response(error: int, body: Body, _request: Body) -> Fields:
    base = {"throttle_time": 0, "cluster_id": None, "cluster_authorized_operations": -2147483648}
    if error:
        return {**base, "brokers": [], "controller_id": -1, "topics": []}, NOTHING, {"error_code": error}
    brokers = [{"node_id": int(b), "host": str(h), "port": int(port), "rack": None}
               for b, (h, port) in dict(body.get("brokers", {})).items()]
    topics = [{"error_code": 0, "name": str(t), "is_internal": False,
               "topic_authorized_operations": -2147483648, "partitions": [
                   {"error_code": 0, "partition_index": int(p), "leader_id": int(st["leader"]),
                    "leader_epoch": int(st["leader_epoch"]), "replica_nodes": list(st["replicas"]),
                    "isr_nodes": list(st["isr"]), "offline_replicas": []}
                   for p, st in sorted(dict(parts).items(), key=lambda kv: int(kv[0]))]}
              for t, parts in dict(body.get("topics", {})).items()]
    return {**base, "brokers": brokers, "controller_id": int(body.get("controller_id", -1)),
            "topics": topics}, frozenset({"brokers", "topics", "controller_id"}), {}


def _metadata_from_response(e: Any, extras: Body) -> tuple[int, Body]:
    error = int(extras.pop("error_code", 0))
    if error:
        return error, {}
    out: Body = {
        "brokers": {str(int(b.node_id)): [b.host, int(b.port)] for b in e.brokers},
        "topics": {t.name: {str(int(p.partition_index)): {
            "leader": int(p.leader_id), "leader_epoch": int(p.leader_epoch),
            "isr": [int(b) for b in p.isr_nodes], "replicas": [int(b) for b in p.replica_nodes]}
            for p in t.partitions} for t in e.topics}}
    if int(e.controller_id) != -1:
        out["controller_id"] = int(e.controller_id)
    return 0, out


# -- InitProducerId --------------------------------------------------------------------------

def _init_request(_body: Body) -> tuple[Body, frozenset[str], Body]:
    return {"transactional_id": None, "transaction_timeout": 60000}, NOTHING, {}


def _init_answer(body: Body, _request: Body) -> tuple[Body, frozenset[str]]:
    return {"throttle_time": 0, "producer_id": int(body.get("producer_id", -1)),
            "producer_epoch": int(body.get("producer_epoch", -1))}, \
        frozenset({"producer_id", "producer_epoch"})


def _init_from_answer(e: Any) -> Body:
    return {"producer_id": int(e.producer_id), "producer_epoch": int(e.producer_epoch)}


# -- SASL ------------------------------------------------------------------------------------

def _handshake_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    return {"mechanism": str(body["mechanism"])}, frozenset({"mechanism"}), {}


def _handshake_answer(body: Body, _request: Body) -> tuple[Body, frozenset[str]]:
    return {"mechanisms": list(body.get("mechanisms", []))}, frozenset({"mechanisms"})


def _authenticate_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    return {"auth_bytes": _value(body["auth_bytes"])}, frozenset({"auth_bytes"}), {}


def _authenticate_response(error: int, body: Body, _request: Body) -> Fields:
    return {"error_code": error, "error_message": body.get("message") if error else None,
            "auth_bytes": b"" if error else _value(body.get("auth_bytes", b"")),
            "session_lifetime": 0}, frozenset({"auth_bytes"}) if not error else NOTHING, {}


def _authenticate_from_response(e: Any, _extras: Body) -> tuple[int, Body]:
    if int(e.error_code):
        return int(e.error_code), {}
    return 0, {"auth_bytes": bytes(e.auth_bytes)}


def _mechanism(e: Any, _extras: Body) -> Body:
    return {"mechanism": e.mechanism}


def _auth_bytes(e: Any, _extras: Body) -> Body:
    return {"auth_bytes": bytes(e.auth_bytes)}


TRANSLATIONS = (
    Translation(ApiKey.PRODUCE, _produce_request, _produce_from_request, _produce_response,
                _produce_from_response),
    Translation(ApiKey.METADATA, _metadata_request, _metadata_from_request, _metadata_response,
                _metadata_from_response),
    Translation(ApiKey.INIT_PRODUCER_ID, _init_request, lambda _e, _x: {},
                top_level_error(_init_answer), read_top_level_error(_init_from_answer)),
    Translation(ApiKey.SASL_HANDSHAKE, _handshake_request, _mechanism,
                top_level_error(_handshake_answer),
                read_top_level_error(lambda e: {"mechanisms": list(e.mechanisms)})),
    Translation(ApiKey.SASL_AUTHENTICATE, _authenticate_request, _auth_bytes,
                _authenticate_response, _authenticate_from_response),
)
