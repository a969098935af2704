"""The protocol's vocabulary: API keys and the versions each speaks, error codes, frame
limits, the u32 that prefixes every frame and every string, list and map, and the two
exceptions every layer of the codec raises."""

from __future__ import annotations

import enum
import struct
from typing import Any

MAX_FRAME = 8 * 1024 * 1024
# before authentication a connection may send only the SASL exchange's small messages: a
# longer frame is refused from its length prefix, before its body is read (Kafka's
# sasl.server.max.receive.size, 512 KiB)
PRE_AUTH_MAX_FRAME = 512 * 1024
MAX_DEPTH = 32
U32 = struct.Struct(">I")


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    SASL_HANDSHAKE = 17  # authentication (impl.node.auth), before any other request: a body's claims are checked against it
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22  # KIP-98: an idempotent producer's id (impl.node.producer_state)
    OFFSETS_FOR_LEADER_EPOCH = 23
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    ELECT_PREFERRED = 43
    REASSIGN_PARTITIONS = 45
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    ENVELOPE = 58  # KIP-590: a forwarded admin request, broker -> controller (impl.node.envelope)
    REMOVE_PARTITIONS = 100


# Seed 004 (KIP-590): the admin writes' version at which a request must be sent to the
# controller (and, seed 001, at which THROTTLING_QUOTA_EXCEEDED may be answered).  A broker
# forwards an older-version request to the controller *as this version*; a request at this
# version is never forwarded, so nothing is forwarded twice.
CONTROLLER_VERSIONS: dict[ApiKey, int] = {
    ApiKey.CREATE_TOPICS: 1, ApiKey.DELETE_TOPICS: 1, ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.REMOVE_PARTITIONS: 1, ApiKey.REASSIGN_PARTITIONS: 1, ApiKey.ELECT_PREFERRED: 1,
    ApiKey.ALTER_CLIENT_QUOTAS: 1,
}

# the requests a broker may forward to the controller inside an ENVELOPE (Kafka's
# "forwardable" APIs): the admin writes.  An Envelope itself is not forwardable, so a
# forwarded request is never forwarded again.
FORWARDABLE: frozenset[ApiKey] = frozenset(CONTROLLER_VERSIONS)

# the APIs that travel as Apache Kafka's messages (impl.node.kafka.translate), each at the
# one flexible version Epochal sends and answers: the ZooKeeper-era inter-broker messages,
# replication, reads, writes, authentication and the admin requests (those of
# CONTROLLER_VERSIONS keep Epochal's own version in the header's tag: docs/wire.md 2.1)
KAFKA_VERSIONS: dict[ApiKey, int] = {
    ApiKey.LEADER_AND_ISR: 4, ApiKey.STOP_REPLICA: 3, ApiKey.UPDATE_METADATA: 6,
    ApiKey.CONTROLLED_SHUTDOWN: 3, ApiKey.FETCH: 12, ApiKey.OFFSETS_FOR_LEADER_EPOCH: 4,
    ApiKey.PRODUCE: 9, ApiKey.METADATA: 9, ApiKey.INIT_PRODUCER_ID: 2, ApiKey.SASL_HANDSHAKE: 1,
    ApiKey.SASL_AUTHENTICATE: 2, ApiKey.CREATE_TOPICS: 6, ApiKey.DELETE_TOPICS: 5,
    ApiKey.CREATE_PARTITIONS: 3, ApiKey.ELECT_PREFERRED: 2, ApiKey.REASSIGN_PARTITIONS: 0,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: 1, ApiKey.ALTER_CLIENT_QUOTAS: 1, ApiKey.ENVELOPE: 0,
}

# highest version each API speaks: the admin writes above at their controller version (also
# those that travel as Kafka's messages), the Kafka messages at theirs, everything else at 0
API_VERSIONS: dict[ApiKey, int] = {**dict.fromkeys(ApiKey, 0), **KAFKA_VERSIONS,
                                   **CONTROLLER_VERSIONS}


class ErrorCode(enum.IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    RECORD_TOO_LARGE = 18  # a value above max.message.bytes (impl.node.limits)
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    CLUSTER_AUTHORIZATION_FAILED = 31  # this principal may not send this request (impl.node.auth.rules)
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34  # a request before authentication, or authentication off (--insecure)
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45  # KIP-98: a batch after a gap in its producer's sequence
    DUPLICATE_SEQUENCE_NUMBER = 46  # KIP-98: a batch appended before, too long ago to say where
    KAFKA_STORAGE_ERROR = 56  # the log could not be written (ENOSPC, EIO): it is offline
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    INVALID_REPLICA_ASSIGNMENT = 39
    SASL_AUTHENTICATION_FAILED = 58
    BROKER_NOT_AVAILABLE = 8
    THROTTLING_QUOTA_EXCEEDED = 89  # seed 001: per topic, to new-version clients only
    PRINCIPAL_DESERIALIZATION_FAILURE = 97  # an Envelope whose request_principal does not decode
    INCONSISTENT_TOPIC_ID = 103  # KIP-516: the request names an older incarnation of the topic


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


class ProtocolError(Exception):
    """Bad bytes on the wire; ``code`` is the error to answer with."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.CORRUPT_MESSAGE) -> None:
        super().__init__(message)
        self.code = code


class RpcError(Exception):
    """A response carried a non-zero error code."""

    def __init__(self, code: int, message: str = "", body: dict[str, Any] | None = None) -> None:
        super().__init__(message or error_name(code))
        self.code = code
        self.body = body or {}  # the error response's body (throttle_time_ms, controller_id)
