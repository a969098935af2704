"""The inter-broker messages of ZooKeeper mode that ``kio``'s schemas no longer carry, as kio
entities: LeaderAndIsr (API key 4), StopReplica (5), UpdateMetadata (6), and AlterPartition
(56) before v2.

kio's schemas follow Kafka's newest message definitions, from which the ZooKeeper-era
control requests are gone since kio 0.6.3; a 3.9 broker still speaks them.  (The project
pins kio below 0.6.3, whose own classes for them name some fields as later Kafka does, e.g.
``partition_epoch`` for ``zk_version``: these tables keep ZooKeeper mode's names.)  Each message here is a table
of :class:`Field` s, as Kafka's JSON message definitions list them (name, type, the
versions that carry it); :func:`entity` turns one version of a table into a frozen
dataclass kio's native reader and writer take, exactly as kio's generated classes.  So
:mod:`.kafka` decodes these messages, and a test encodes them, with kio itself.

UpdateMetadata's request is described only as far as the relay reads it, its opening fixed
fields (:data:`PREFIXES`, :func:`read_prefix`).
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import field, make_dataclass
from typing import Any, ClassVar, NamedTuple

from kio.serial import readers
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64

LEADER_AND_ISR = 4
STOP_REPLICA = 5
UPDATE_METADATA = 6
ALTER_PARTITION = 56
ANY = 99  # "this version and every later one"


class Field(NamedTuple):
    """One field of a message: ``kind`` is a Kafka type name (``int32``, ``string``,
    ``[]int32``, ...) or a tuple of fields (an array of that struct); it is in versions
    ``low`` through ``high``."""

    name: str
    kind: str | tuple[Field, ...]
    low: int = 0
    high: int = ANY


_PRIMITIVES: dict[str, Any] = {"int8": i8, "int16": i16, "int32": i32, "int64": i64, "bool": bool,
                               "string": str, "uuid": uuid.UUID | None}

LEADER_AND_ISR_PARTITION = (
    Field("topic_name", "string", 0, 1),
    Field("partition_index", "int32"),
    Field("controller_epoch", "int32"),
    Field("leader", "int32"),
    Field("leader_epoch", "int32"),
    Field("isr", "[]int32"),
    Field("zk_version", "int32"),  # Kafka's PartitionEpoch: the state znode's version
    Field("replicas", "[]int32"),
    Field("adding_replicas", "[]int32", 3),
    Field("removing_replicas", "[]int32", 3),
    Field("is_new", "bool", 1),
    Field("leader_recovery_state", "int8", 6),
)
LEADER_AND_ISR_REQUEST = (
    Field("controller_id", "int32"),
    Field("is_kraft_controller", "bool", 7),
    Field("controller_epoch", "int32"),
    Field("broker_epoch", "int64", 2),
    Field("type", "int8", 5),
    Field("ungrouped_partition_states", LEADER_AND_ISR_PARTITION, 0, 1),
    Field("topic_states", (Field("topic_name", "string"), Field("topic_id", "uuid", 5),
                           Field("partition_states", LEADER_AND_ISR_PARTITION)), 2),
    Field("live_leaders", (Field("broker_id", "int32"), Field("host_name", "string"), Field("port", "int32"))),
)
STOP_REPLICA_REQUEST = (
    Field("controller_id", "int32"),
    Field("is_kraft_controller", "bool", 4),
    Field("controller_epoch", "int32"),
    Field("broker_epoch", "int64", 1),
    Field("delete_partitions", "bool", 0, 2),
    Field("ungrouped_partitions", (Field("topic_name", "string"), Field("partition_index", "int32")), 0, 0),
    Field("topics", (Field("name", "string"), Field("partition_indexes", "[]int32")), 1, 2),
    Field("topic_states", (Field("topic_name", "string"),
                           Field("partition_states", (Field("partition_index", "int32"),
                                                      Field("leader_epoch", "int32"),
                                                      Field("delete_partition", "bool")))), 3),
)
UPDATE_METADATA_PREFIX = (
    Field("controller_id", "int32"),
    Field("is_kraft_controller", "bool", 8),
    Field("controller_epoch", "int32"),
    Field("broker_epoch", "int64", 5),
)
LEADER_AND_ISR_RESPONSE = (
    Field("error_code", "int16"),
    Field("partition_errors", (Field("topic_name", "string"), Field("partition_index", "int32"),
                               Field("error_code", "int16")), 0, 4),
    Field("topics", (Field("topic_id", "uuid"),
                     Field("partition_errors", (Field("partition_index", "int32"), Field("error_code", "int16")))), 5),
)
STOP_REPLICA_RESPONSE = (
    Field("error_code", "int16"),
    Field("partition_errors", (Field("topic_name", "string"), Field("partition_index", "int32"),
                               Field("error_code", "int16"))),
)
UPDATE_METADATA_RESPONSE = (Field("error_code", "int16"),)

ALTER_PARTITION_V0_REQUEST = (
    Field("broker_id", "int32"),
    Field("broker_epoch", "int64"),
    Field("topics", (Field("topic_name", "string"),
                     Field("partitions", (Field("partition_index", "int32"), Field("leader_epoch", "int32"),
                                          Field("new_isr", "[]int32"), Field("leader_recovery_state", "int8", 1),
                                          Field("partition_epoch", "int32"))))),
)
ALTER_PARTITION_V0_RESPONSE = (
    Field("throttle_time_ms", "int32"),
    Field("error_code", "int16"),
    Field("topics", (Field("topic_name", "string"),
                     Field("partitions", (Field("partition_index", "int32"), Field("error_code", "int16"),
                                          Field("leader_id", "int32"), Field("leader_epoch", "int32"),
                                          Field("isr", "[]int32"), Field("leader_recovery_state", "int8", 1),
                                          Field("partition_epoch", "int32"))))),
)

FIRST_FLEXIBLE = {LEADER_AND_ISR: 4, STOP_REPLICA: 2, UPDATE_METADATA: 7, ALTER_PARTITION: 0}
"""The first version of each API with the flexible (tagged-field) encoding."""
VERSIONS = {LEADER_AND_ISR: 7, STOP_REPLICA: 4, UPDATE_METADATA: 8, ALTER_PARTITION: 1}
"""The newest version of each API described here (AlterPartition's later ones are kio's)."""
_REQUESTS = {LEADER_AND_ISR: LEADER_AND_ISR_REQUEST, STOP_REPLICA: STOP_REPLICA_REQUEST,
             UPDATE_METADATA: UPDATE_METADATA_PREFIX, ALTER_PARTITION: ALTER_PARTITION_V0_REQUEST}
_RESPONSES = {LEADER_AND_ISR: LEADER_AND_ISR_RESPONSE, STOP_REPLICA: STOP_REPLICA_RESPONSE,
              UPDATE_METADATA: UPDATE_METADATA_RESPONSE, ALTER_PARTITION: ALTER_PARTITION_V0_RESPONSE}
PREFIXES = {UPDATE_METADATA: UPDATE_METADATA_PREFIX}
"""Requests described only up to the fields the relay reads: :func:`read_prefix` reads them
field by field (an entity's reader would read on, into what it takes for tagged fields)."""


def described(api_key: int, version: int) -> bool:
    return api_key in VERSIONS and 0 <= version <= VERSIONS[api_key]


def flexible(api_key: int, version: int) -> bool:
    return version >= FIRST_FLEXIBLE[api_key]


def request_schema(api_key: int, version: int) -> type:
    """The kio entity of this API's request at ``version`` (KeyError: not described here)."""
    if not described(api_key, version):
        raise KeyError(f"api key {api_key} version {version} is not described")
    return entity(f"Api{api_key}Request", _REQUESTS[api_key], api_key, version, EntityType.request)


def response_schema(api_key: int, version: int) -> type:
    if not described(api_key, version):
        raise KeyError(f"api key {api_key} version {version} is not described")
    return entity(f"Api{api_key}Response", _RESPONSES[api_key], api_key, version, EntityType.response)


@functools.cache
def entity(name: str, fields: tuple[Field, ...], api_key: int, version: int,
           entity_type: EntityType = EntityType.nested) -> type:
    """The frozen dataclass of ``fields`` at ``version``, in kio's form: each primitive
    field's Kafka type in its metadata, each array of structs a tuple of a nested entity."""
    spec: list[tuple[str, Any, Any]] = []
    for f in fields:
        if not f.low <= version <= f.high:
            continue
        if isinstance(f.kind, tuple):
            nested = entity(f"{name}_{f.name}", f.kind, api_key, version)
            spec.append((f.name, tuple[nested, ...], field()))  # type: ignore[valid-type]
        else:
            array = f.kind.startswith("[]")
            kind = f.kind.removeprefix("[]")
            python_type = tuple[_PRIMITIVES[kind], ...] if array else _PRIMITIVES[kind]
            spec.append((f.name, python_type, field(metadata={"kafka_type": kind})))
    namespace: dict[str, ClassVar[Any]] = {  # type: ignore[valid-type]
        "__type__": entity_type, "__version__": i16(version),
        "__flexible__": flexible(api_key, version), "__api_key__": i16(api_key)}
    return make_dataclass(name, spec, namespace=namespace, frozen=True, slots=True, kw_only=True)


_PREFIX_READERS = {"int8": readers.read_int8, "int16": readers.read_int16, "int32": readers.read_int32,
                   "int64": readers.read_int64, "bool": readers.read_boolean}


def read_prefix(api_key: int, version: int, buffer: bytes, offset: int) -> Any:
    """The fixed-size fields of a request in :data:`PREFIXES` at ``version``, read from
    ``offset`` one after the other with kio's primitive readers, as an entity of them."""
    fields = PREFIXES[api_key]
    values: dict[str, Any] = {}
    for f in fields:
        if f.low <= version <= f.high:
            assert isinstance(f.kind, str), "a prefix holds fixed-size fields only"
            values[f.name], size = _PREFIX_READERS[f.kind](buffer, offset)
            offset += size
    return entity(f"Api{api_key}Prefix", fields, api_key, version)(**values)
