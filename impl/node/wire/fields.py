"""The fields of every API's request and response bodies, declared once (docs/wire.md
section 5)."""

from __future__ import annotations

from typing import Any, NamedTuple

from impl.node.codes import ApiKey

# -- the fields of every API (docs/wire.md section 5) ----------------------------------------
# Declarative: what each request and response body holds, as the brokers, the controller and
# the clients encode it.  A nested field is named by its path -- ``partitions[].topic`` is the
# ``topic`` of every map in the list ``partitions``, ``principal.user`` a key of the map
# ``principal``; a ``map<...>`` keyed by ids or names is one field.  ``docs/wire.md`` lists
# exactly these tables and ``tests/impl/node/test_wire_doc.py`` holds the two together, and holds
# real requests and answers of a running cluster to them.


class Field(NamedTuple):
    """One field of a request or response body (a key of the body's map)."""

    name: str  # a path: ``key``, ``list[].key``, ``map.key``
    type: str  # int, bool, string, bytes/string, float, map, list<...>, map<K, V>
    required: bool  # whether a sender always includes it (in every version it applies to)
    meaning: str


class Message(NamedTuple):
    """The body of one API's request and of its success response.  An error response's body
    is ``ERROR_BODY`` instead (whatever the API)."""

    request: tuple[Field, ...]
    response: tuple[Field, ...]


_F = Field
_CONTROL = (  # every control request: the controller's fencing fields (seed 002, seed 003)
    _F("controller_id", "int", True, "the sending controller's broker id"),
    _F("controller_epoch", "int", True, "the sending controller's epoch (seed 002): older than the broker's is refused"),
    _F("max_broker_epoch", "int", False, "seed 003 format: the largest broker epoch the controller has read; a "
       "broker registered after it refuses the request (STALE_BROKER_EPOCH)"),
    _F("broker_epoch", "int", False, "KIP-380 format, instead of max_broker_epoch: the recipient's broker epoch"),
)
_PRINCIPAL = (  # every admin request (seed 001: the principal the quota is charged to)
    _F("user", "string", False, "the client's user: the authenticated one's name, or absent (no authentication)"),
    _F("client_id", "string", False, "the client's id"),
)
_FORWARDED = (  # in a forwarded admin request, inside an ENVELOPE only (seed 004, KIP-590)
    _F("forward_id", "string", False, "forwarded requests only: a unique id of the forwarded request (audit log)"),
    _F("original_version", "int", False, "forwarded requests only: the version the client sent (audit log; "
       "the quota's strictness)"),
)
_ADMIN = (*_PRINCIPAL, *_FORWARDED)
_TOPIC_RESULT = (  # one topic's outcome in a version-1 admin answer
    _F("topics[].topic", "string", True, "the topic"),
    _F("topics[].error", "int", True, "this topic's error code (0: none)"),
    _F("topics[].message", "string", False, "the error, in words"),
    _F("topics[].throttle_time_ms", "int", False, "with THROTTLING_QUOTA_EXCEEDED: how long to wait"),
)
_THROTTLE = _F("throttle_time_ms", "int", True, "seed 001: how long the client must wait before its next request")

ERROR_BODY: tuple[Field, ...] = (
    _F("message", "string", True, "the error, in words"),
    _F("throttle_time_ms", "int", False, "admin APIs: the throttle time (seed 001)"),
    _F("controller_id", "int", False, "admin APIs: the controller this broker knows (NOT_CONTROLLER: resend there)"),
    _F("leader", "int", False, "NOT_LEADER: the leader this broker knows"),
    _F("leader_epoch", "int", False, "FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH: this broker's leader epoch"),
    _F("leo", "int", False, "OFFSET_OUT_OF_RANGE: the log end offset"),
    _F("hw", "int", False, "OFFSET_OUT_OF_RANGE: the high watermark"),
    _F("log_start_offset", "int", False, "OFFSET_OUT_OF_RANGE: the log start offset"),
)
"""The body of every response whose header carries a non-zero error code."""

MESSAGES: dict[ApiKey, Message] = {
    ApiKey.PRODUCE: Message(
        request=(
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition (this broker must lead it)"),
            _F("values", "list<bytes/string>", True, "the records' values, appended in order (at least one); a "
               "record with a key is one value, encoded as §4.1 says"),
            _F("acks", "int", False, "-1 (default): answer once committed; 1: once appended; 0: no response at all"),
            _F("timeout_ms", "int", False, "acks=-1: how long to wait for the commit (default 5000)"),
            _F("producer_id", "int", False, "KIP-98: the idempotent producer's id (from INIT_PRODUCER_ID; -1 or "
               "absent: not idempotent)"),
            _F("base_sequence", "int", False, "KIP-98, with producer_id: the first value's sequence number in the "
               "producer's stream for this partition (the others follow by one); a retry resends the same"),
        ),
        response=(
            _F("base_offset", "int", True, "offset of the first value appended"),
            _F("leader_epoch", "int", True, "the leader epoch they were appended in"),
            _F("duplicate", "bool", False, "KIP-98: true if the batch had been appended before (nothing was "
               "appended now; base_offset is where it was, -1 if too long ago to say)"),
        ),
    ),
    ApiKey.FETCH: Message(
        request=(
            _F("replica_id", "int", False, "the fetching follower's broker id; -1 or absent: a consumer"),
            _F("broker_epoch", "int", False, "replica fetch, KIP-903: the follower's broker epoch (the czxid of its "
               "registration), which the leader records in its handle_fetch event (absent: not recorded)"),
            _F("topic", "string", False, "consumer fetch: the topic"),
            _F("partition", "int", False, "consumer fetch: the partition"),
            _F("fetch_offset", "int", False, "consumer fetch: the offset to read from"),
            _F("max_records", "int", False, "at most this many records (default 500, at most 5000)"),
            _F("max_wait_ms", "int", False, "long poll: wait up to this long for something to read (at most 5000)"),
            _F("max_bytes", "int", False, "at most this many bytes of values (the first record always whole, KIP-74)"),
            _F("partition_max_bytes", "int", False, "replica fetch: at most this many bytes per partition"),
            _F("partitions", "list<map>", False, "replica fetch: one entry per partition the follower fetches"),
            _F("partitions[].topic", "string", True, "the topic"),
            _F("partitions[].partition", "int", True, "the partition"),
            _F("partitions[].fetch_offset", "int", True, "the follower's LEO"),
            _F("partitions[].hw", "int", False, "the follower's HW: the leader answers at once when its own differs"),
            _F("partitions[].leader_epoch", "int", False, "KIP-320: the follower's leader epoch, fenced by the leader (-1: "
               "not checked)"),
            _F("partitions[].topic_id", "int", False, "KIP-516: the follower's incarnation of the topic (0: unknown)"),
        ),
        response=(
            _F("records", "list<[int, int, bytes]>", False, "consumer fetch: [offset, leader_epoch, value] each, below the HW"),
            _F("hw", "int", False, "consumer fetch: the high watermark"),
            _F("leo", "int", False, "consumer fetch: the log end offset"),
            _F("leader_epoch", "int", False, "consumer fetch: the leader's epoch"),
            _F("log_start_offset", "int", False, "consumer fetch: the log start offset (0 unless "
               "retention deleted segments)"),
            _F("partitions", "list<map>", False, "replica fetch: one entry per partition asked for"),
            _F("partitions[].topic", "string", True, "the topic"),
            _F("partitions[].partition", "int", True, "the partition"),
            _F("partitions[].error", "int", True, "this partition's error code (0: none)"),
            _F("partitions[].producers", "list<[int, int, int]>", False, "KIP-98: [offset, producer_id, sequence] of "
               "each record in records an idempotent producer wrote (absent: none)"),
            _F("partitions[].records", "list<[int, int, bytes]>", False, "[offset, leader_epoch, value] each, from "
               "fetch_offset"),
            _F("partitions[].hw", "int", False, "the leader's high watermark (with OFFSET_OUT_OF_RANGE too)"),
            _F("partitions[].leo", "int", False, "the leader's log end offset (with OFFSET_OUT_OF_RANGE too)"),
            _F("partitions[].log_start_offset", "int", False, "with OFFSET_OUT_OF_RANGE: the leader's log "
               "start offset (a follower below it starts there)"),
            _F("partitions[].leader_epoch", "int", False, "the leader's epoch (with FENCED_LEADER_EPOCH / "
               "UNKNOWN_LEADER_EPOCH too)"),
            _F("partitions[].topic_id", "int", False, "the leader's incarnation of the topic"),
            _F("partitions[].leader", "int", False, "with NOT_LEADER: the leader this broker knows"),
        ),
    ),
    ApiKey.METADATA: Message(
        request=(),
        response=(
            _F("brokers", "map<string, [string, int]>", True, "live brokers: id -> [host, port]"),
            _F("topics", "map<string, map<string, map>>", True, "topic -> partition -> {leader, leader_epoch, isr, "
               "replicas}"),
            _F("controller_id", "int", False, "the active controller (from /controller; -1: none known)"),
            _F("controller_epoch", "int", False, "the controller epoch of the last UpdateMetadata"),
        ),
    ),
    ApiKey.LEADER_AND_ISR: Message(
        request=(
            *_CONTROL,
            _F("init", "bool", False, "the INIT request of a new controller (seed 000 D): replicas it does not name "
               "are deleted"),
            _F("partitions", "list<map>", True, "one entry per partition state (seed 000 C)"),
            _F("partitions[].topic", "string", True, "the topic"),
            _F("partitions[].partition", "int", True, "the partition"),
            _F("partitions[].leader", "int", True, "the leader (-1: none)"),
            _F("partitions[].leader_epoch", "int", True, "the leader epoch"),
            _F("partitions[].isr", "list<int>", True, "the in-sync replicas"),
            _F("partitions[].replicas", "list<int>", True, "the assigned replicas (AR)"),
            _F("partitions[].zk_version", "int", True, "zkVersion of the partition state znode"),
            _F("partitions[].topic_id", "int", False, "KIP-516: the topic's incarnation (0: unknown, not checked)"),
            _F("leaders", "map<string, [string, int]>", False, "the leaders' endpoints: id -> [host, port]"),
        ),
        response=(
            _F("partitions", "list<[string, int, int]>", True, "[topic, partition, error] of every entry refused "
               "(FENCED_LEADER_EPOCH, INCONSISTENT_TOPIC_ID); accepted ones are not listed"),
        ),
    ),
    ApiKey.STOP_REPLICA: Message(
        request=(
            *_CONTROL,
            _F("delete", "bool", False, "also delete the logs"),
            _F("partitions", "list<[string, int, int]>", True, "[topic, partition, topic_id] each (topic_id may be "
               "left out: not checked)"),
        ),
        response=(),
    ),
    ApiKey.UPDATE_METADATA: Message(
        request=(
            *_CONTROL,
            _F("brokers", "map<string, [string, int]>", True, "live brokers: id -> [host, port]"),
            _F("topics", "map<string, map<string, map>>", True, "topic -> partition -> {leader, leader_epoch, isr, "
               "replicas}"),
            _F("partial", "bool", False, "only these partitions changed: merge them into the cache"),
        ),
        response=(),
    ),
    ApiKey.CONTROLLED_SHUTDOWN: Message(
        request=(
            _F("broker_id", "int", True, "the broker that is stopping"),
            _F("broker_epoch", "int", True, "its broker epoch (KIP-380): a stale incarnation is refused"),
        ),
        response=(
            _F("remaining_leaderships", "list<[string, int]>", True, "[topic, partition] it still leads"),
            _F("remaining_isr", "list<[string, int]>", True, "[topic, partition] whose ISR it could not leave"),
        ),
    ),
    ApiKey.SASL_HANDSHAKE: Message(
        request=(
            _F("mechanism", "string", True, "the SASL mechanism the client will use (SCRAM-SHA-256)"),
        ),
        response=(
            _F("mechanisms", "list<string>", True, "the mechanisms this broker accepts"),
        ),
    ),
    ApiKey.SASL_AUTHENTICATE: Message(
        request=(
            _F("auth_bytes", "bytes", True, "the client's next SCRAM message (client-first, then client-final)"),
        ),
        response=(
            _F("auth_bytes", "bytes", True, "the broker's SCRAM answer (server-first, then server-final)"),
            _F("principal", "string", False, "with server-final: the principal authenticated"),
        ),
    ),
    ApiKey.CREATE_TOPICS: Message(
        request=(
            *_ADMIN,
            _F("validate_only", "bool", False, "check, charge nothing, write nothing"),
            _F("topics", "list<map>", False, "version 1: the topics to create"),
            _F("topics[].topic", "string", True, "the topic's name"),
            _F("topics[].partitions", "int", False, "how many partitions (without assignment)"),
            _F("topics[].replication_factor", "int", False, "how many replicas each (without assignment)"),
            _F("topics[].assignment", "map<string, list<int>>", False, "partition -> replicas, chosen by the client"),
            _F("topic", "string", False, "version 0: the one topic"),
            _F("partitions", "int", False, "version 0"),
            _F("replication_factor", "int", False, "version 0"),
            _F("assignment", "map<string, list<int>>", False, "version 0"),
        ),
        response=(
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
            _F("topics", "list<map>", False, "version 1: one result per topic"),
            *_TOPIC_RESULT,
            _F("topics[].assignment", "map<string, list<int>>", False, "the assignment written"),
            _F("topic", "string", False, "version 0: the topic"),
            _F("assignment", "map<string, list<int>>", False, "version 0: the assignment written"),
        ),
    ),
    ApiKey.DELETE_TOPICS: Message(
        request=(
            *_ADMIN,
            _F("topics", "list<string>", False, "version 1: the topics to delete"),
            _F("topic", "string", False, "version 0: the one topic"),
        ),
        response=(
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
            _F("topics", "list<map>", False, "version 1: one result per topic"),
            *_TOPIC_RESULT,
            _F("topic", "string", False, "version 0: the topic"),
        ),
    ),
    ApiKey.CREATE_PARTITIONS: Message(
        request=(
            *_ADMIN,
            _F("validate_only", "bool", False, "check, charge nothing, write nothing"),
            _F("topics", "list<map>", False, "version 1: the topics to grow"),
            _F("topics[].topic", "string", True, "the topic"),
            _F("topics[].count", "int", True, "the new total number of partitions"),
            _F("topics[].assignments", "list<list<int>>", False, "the replicas of each partition added, in id "
               "order, the first listed preferred (Kafka's assignments); absent: the controller assigns them"),
            _F("topic", "string", False, "version 0: the one topic"),
            _F("count", "int", False, "version 0: the new total number of partitions"),
        ),
        response=(
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
            _F("topics", "list<map>", False, "version 1: one result per topic"),
            *_TOPIC_RESULT,
            _F("topics[].added", "map<string, list<int>>", False, "partition -> replicas of the partitions added"),
            _F("topic", "string", False, "version 0: the topic"),
            _F("added", "map<string, list<int>>", False, "version 0: the partitions added"),
        ),
    ),
    ApiKey.ELECT_PREFERRED: Message(
        request=(
            *_ADMIN,
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition whose preferred replica (first of AR) should lead"),
        ),
        response=(),
    ),
    ApiKey.REASSIGN_PARTITIONS: Message(
        request=(
            *_ADMIN,
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition"),
            _F("replicas", "list<int>", True, "the reassigned replicas (RAR, seed 000 F)"),
        ),
        response=(
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition"),
        ),
    ),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Message(
        request=tuple(_PRINCIPAL),
        response=(
            _F("quotas", "list<map>", True, "every stored quota"),
            _F("quotas[].user", "string", False, "the entity's user (null: not part of the entity; `<default>`: the default)"),
            _F("quotas[].client_id", "string", False, "the entity's client id (null: not part of the entity; `<default>`: the default)"),
            _F("quotas[].controller_mutation_rate", "float", True, "partition mutations per second (seed 001)"),
            _F("metrics", "map", True, "on the controller: per principal, its rate, tokens and throttle time"),
            _F("controller_id", "int", True, "the controller this broker knows"),
            _F("from_controller", "bool", True, "whether this broker is the controller (metrics are only there)"),
        ),
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: Message(
        request=(
            *_ADMIN,
            _F("validate_only", "bool", False, "check, write nothing"),
            _F("entries", "list<map>", True, "the quotas to set"),
            _F("entries[].user", "string", False, "the entity's user (null: not part of the entity; `<default>`: the default)"),
            _F("entries[].client_id", "string", False, "the entity's client id (null: not part of the entity; `<default>`: the default)"),
            _F("entries[].rate", "float", False, "partition mutations per second; null removes the quota"),
        ),
        response=(
            _F("altered", "int", True, "how many entries were set or removed"),
        ),
    ),
    ApiKey.INIT_PRODUCER_ID: Message(
        request=(
            _F("client_id", "string", False, "the producer's client id (informational)"),
        ),
        response=(
            _F("producer_id", "int", True, "a producer id no other producer of this cluster has (from a block the "
               "broker reserved in ZooKeeper)"),
            _F("producer_epoch", "int", True, "always 0 (no transactions)"),
        ),
    ),
    ApiKey.OFFSETS_FOR_LEADER_EPOCH: Message(
        request=(
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition"),
            _F("leader_epoch", "int", True, "the epoch whose end offset the follower asks for (its latest)"),
            _F("current_leader_epoch", "int", False, "KIP-320: the follower's current leader epoch, fenced by the leader"),
            _F("replica_id", "int", False, "the asking follower's broker id"),
            _F("topic_id", "int", False, "KIP-516: the follower's incarnation of the topic (0: unknown)"),
        ),
        response=(
            _F("leader_epoch", "int", True, "the largest epoch <= the one asked for that the leader has"),
            _F("end_offset", "int", True, "where that epoch ends in the leader's log (KIP-101/279)"),
        ),
    ),
    ApiKey.ENVELOPE: Message(
        request=(
            _F("request_data", "bytes", True, "the forwarded request: its header and body, without the length prefix"),
            _F("request_principal", "bytes", True, "the original client's principal: Kafka's DefaultPrincipalData, "
               "prefixed by its i16 version"),
            _F("client_host_address", "bytes", True, "the original client's IP address (4 or 16 bytes)"),
            _F("forwarded_by", "int", False, "the forwarding broker's id (absent: the authenticated broker's)"),
        ),
        response=(
            _F("response_data", "bytes", True, "the forwarded request's response: its header and body"),
        ),
    ),
    ApiKey.REMOVE_PARTITIONS: Message(
        request=(
            *_ADMIN,
            _F("topic", "string", True, "the topic"),
            _F("partitions", "list<int>", True, "the partitions to remove (seed 000 H)"),
        ),
        response=(
            _F("topic", "string", True, "the topic"),
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
        ),
    ),
}
"""Every API's request and success-response fields."""

_NESTED = ("map", "list<map>")


def undeclared_fields(fields: tuple[Field, ...], body: dict[str, Any]) -> list[str]:
    """The paths in ``body`` that ``fields`` does not declare, and the declared required ones
    it lacks (``missing: <path>``): nested maps are walked only where a field's type is
    ``map`` or ``list<map>``; a required nested field is checked in every map present."""
    declared = {f.name: f for f in fields}
    out: list[str] = []

    def walk(value: dict[str, Any], prefix: str) -> None:
        for key, v in value.items():
            path = prefix + key
            spec = declared.get(path)
            if spec is None:
                out.append(path)
            elif spec.type == "map" and isinstance(v, dict):
                walk(v, path + ".")
            elif spec.type == "list<map>" and isinstance(v, list):
                for item in v:
                    if isinstance(item, dict):
                        walk(item, path + "[].")
        for f in fields:
            parent, _, leaf = f.name.rpartition(".")
            if f.required and (parent + "." if parent else "") == prefix and leaf not in value:
                out.append(f"missing: {f.name}")

    walk(body, "")
    return sorted(set(out))
