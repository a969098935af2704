"""Kafka frames, headers and the versions served, on ``kio``'s generated message types.

A Kafka frame is an i32 length and a payload, the same framing as the broker's own
protocol (:func:`impl.node.wire.read_frame` reads both).  The payload of a request is a
request header -- v1 (api key, version, correlation id, client id) or, for a flexible
version, v2 (with tagged fields) -- and the request body; a response is a response header
(v0: the correlation id; v1 adds tagged fields, for flexible versions except ApiVersions,
whose response header is always v0 so that any client can read it) and the body.
Which header and which body a version has is kio's, read from Kafka's schemas.

:data:`SERVED` is every API key and version range the listener answers (what ApiVersions
lists); :func:`build` makes a kio entity of any version from plain values, so one
translation serves every version of an API (a field the version lacks is left out, one it
adds takes its schema default).
"""

from __future__ import annotations

import datetime
import enum
import functools
import io
import struct
import types
import typing
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode as KafkaError
from kio.schema.request_header.v1 import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2 import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0 import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1 import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer

_API_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id: in every header
_LENGTH = struct.Struct(">i")


class KafkaApi(enum.IntEnum):
    """The Kafka APIs the listener answers (Kafka's API keys)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10  # a group's coordinator; a transactional id's: COORDINATOR_NOT_AVAILABLE
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    DESCRIBE_CONFIGS = 32
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50


SERVED: dict[KafkaApi, tuple[int, int]] = {
    KafkaApi.PRODUCE: (3, 9),  # record batch v2 from v3; v10 adds leader hints (KIP-951)
    KafkaApi.FETCH: (4, 12),  # record batch v2 from v4; v13 names topics by id only
    KafkaApi.LIST_OFFSETS: (1, 7),  # v0 answers lists of offsets; v8 adds tiered storage
    KafkaApi.METADATA: (0, 12),
    KafkaApi.SASL_HANDSHAKE: (1, 1),  # v0 carries the SASL tokens outside Kafka frames
    KafkaApi.API_VERSIONS: (0, 3),
    KafkaApi.INIT_PRODUCER_ID: (0, 4),  # v5 is KIP-890's transactions
    KafkaApi.SASL_AUTHENTICATE: (0, 2),
    KafkaApi.CREATE_TOPICS: (2, 7),  # v2 is the first a controller answers (NOT_CONTROLLER)
    KafkaApi.DELETE_TOPICS: (1, 6),  # v6 may name a topic by id: answered UNKNOWN_TOPIC_ID
    KafkaApi.CREATE_PARTITIONS: (0, 3),
    # consumer groups (impl.node.broker.kafka_groups): the classic protocol, not KIP-848's
    KafkaApi.OFFSET_COMMIT: (2, 8),  # v0 was ZooKeeper's, v1 had commit timestamps; v9 is KIP-848's
    KafkaApi.OFFSET_FETCH: (1, 7),  # v8 asks for several groups at once (KIP-709)
    KafkaApi.FIND_COORDINATOR: (0, 4),  # v5 adds TRANSACTION_ABORTABLE, v6 share groups
    KafkaApi.JOIN_GROUP: (0, 7),  # v4+ MEMBER_ID_REQUIRED (KIP-394); v8 adds a reason
    KafkaApi.HEARTBEAT: (0, 4),
    KafkaApi.LEAVE_GROUP: (0, 4),  # v3+ leaves several members at once (KIP-345)
    KafkaApi.SYNC_GROUP: (0, 5),
    # the operator tools' requests (impl.node.broker.kafka_operations)
    KafkaApi.DESCRIBE_CONFIGS: (1, 4),  # v0 has no config_source
    KafkaApi.ELECT_LEADERS: (1, 2),  # v0 has no election_type
    KafkaApi.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    KafkaApi.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    KafkaApi.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    KafkaApi.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    KafkaApi.ALTER_CLIENT_QUOTAS: (0, 1),
    KafkaApi.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
}
"""What ApiVersions lists: API key -> (lowest, highest) version answered."""


class UnsupportedRequest(Exception):
    """A request for an API or version not served: ApiVersions is answered with
    UNSUPPORTED_VERSION and the versions served (KIP-511); anything else closes the
    connection, as Kafka's broker does for a request it cannot parse."""

    def __init__(self, api_key: int, version: int, correlation_id: int, reason: str) -> None:
        super().__init__(reason)
        self.api_key, self.version, self.correlation_id = api_key, version, correlation_id


class Refused(Exception):
    """A request, or one partition of it, answered with Kafka's error ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class MalformedRequest(Exception):
    """Bytes that are no request of the version they name: the connection is closed."""


@dataclass(frozen=True)
class KafkaRequest:
    api: KafkaApi
    version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request entity of this API and version


def served(api_key: int, version: int) -> bool:
    try:
        api = KafkaApi(api_key)
    except ValueError:
        return False
    low, high = SERVED[api]
    return low <= version <= high


def request_api_key(payload: bytes) -> int | None:
    """The API key a request frame's header names, read without decoding anything else
    (None: shorter than a header)."""
    if len(payload) < _API_HEADER.size:
        return None
    return int(_API_HEADER.unpack_from(payload)[0])


def decode_request(payload: bytes) -> KafkaRequest:
    """A request frame's payload, as kio's entities; :class:`UnsupportedRequest` for an API
    or version not served, :class:`MalformedRequest` for bytes that do not parse."""
    if len(payload) < _API_HEADER.size:
        raise MalformedRequest("frame shorter than a request header")
    api_key, version, correlation_id = _API_HEADER.unpack_from(payload)
    if not served(api_key, version):
        raise UnsupportedRequest(api_key, version, correlation_id,
                                 f"api key {api_key} version {version} is not served")
    schema = load_request_schema(api_key, version)
    header_type = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
    try:
        header, size = entity_reader(header_type)(payload, 0)
        body, body_size = entity_reader(schema)(payload, size)
    except Exception as exc:  # noqa: BLE001 - kio's native reader raises several kinds
        raise MalformedRequest(f"{KafkaApi(api_key).name} v{version}: {exc}") from None
    if size + body_size != len(payload):
        raise MalformedRequest(f"{KafkaApi(api_key).name} v{version}: "
                               f"{len(payload) - size - body_size} bytes after the body")
    return KafkaRequest(KafkaApi(api_key), version, correlation_id, header.client_id, body)


def response_schema(api: KafkaApi, version: int) -> type:
    return load_response_schema(api, version)


def encode_response(api: KafkaApi, correlation_id: int, response: Any) -> bytes:
    """A response frame: length, response header, body."""
    flexible = type(response).__flexible__ and api != KafkaApi.API_VERSIONS
    header_type = ResponseHeaderV1 if flexible else ResponseHeaderV0
    buf = io.BytesIO()
    buf.write(_LENGTH.pack(0))
    entity_writer(header_type)(buf, header_type(correlation_id=correlation_id))
    entity_writer(type(response))(buf, response)
    frame = buf.getbuffer()
    _LENGTH.pack_into(frame, 0, len(frame) - _LENGTH.size)
    return bytes(frame)


def build(entity_type: type, /, **values: Any) -> Any:
    """A kio entity from plain values: nested entities from dicts, ``ErrorCode`` fields
    from ints, millisecond durations from ints.  Values for fields this version of the
    schema lacks are dropped; a field without a value takes its schema default (one
    without a default is a TypeError: the translation forgot it)."""
    kwargs = {name: _field_value(field_type, values[name])
              for name, field_type in _fields(entity_type) if name in values}
    return entity_type(**kwargs)


@functools.cache
def _fields(entity_type: type) -> tuple[tuple[str, Any], ...]:
    return tuple((f.name, f.type) for f in fields(entity_type))


@functools.cache
def _kind(field_type: Any) -> tuple[str, Any]:
    """How a plain value becomes a value of ``field_type`` (read once per type: every
    request of Epochal's own connections builds entities)."""
    origin = typing.get_origin(field_type)
    if origin in (types.UnionType, typing.Union):  # X | None
        (inner,) = [t for t in typing.get_args(field_type) if t is not type(None)]
        return "optional", inner
    if origin is tuple:
        return "tuple", typing.get_args(field_type)[0]
    if is_dataclass(field_type):
        return "entity", field_type
    if field_type is KafkaError:
        return "error", None
    if isinstance(field_type, type) and issubclass(field_type, datetime.timedelta):
        return "millis", None
    return "plain", None


def _field_value(field_type: Any, value: Any) -> Any:
    if value is None:
        return None
    kind, arg = _kind(field_type)
    if kind == "optional":
        return _field_value(arg, value)
    if kind == "tuple":
        return tuple(_field_value(arg, v) for v in value)
    if kind == "entity":
        return value if is_dataclass(value) else build(arg, **value)
    if kind == "error":
        return KafkaError(int(value))
    if kind == "millis":
        return datetime.timedelta(milliseconds=int(value))
    return value


def millis(duration: datetime.timedelta) -> int:
    """A kio duration field (``timeout``, ``max_wait``) in milliseconds."""
    return int(duration.total_seconds() * 1000)
