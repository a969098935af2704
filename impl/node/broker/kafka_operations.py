"""Kafka's operator requests on the Kafka listener: what ``kafka-leader-election``,
``kafka-reassign-partitions``, ``kafka-configs`` and ``kafka-topics --describe`` send.

* **ElectLeaders** (preferred only) -- each named partition, or with no list every partition
  of the broker's metadata, is Epochal's preferred-replica election (forwarded to the
  controller, :mod:`impl.node.admin`).  A partition whose leader is its preferred replica
  already is ELECTION_NOT_NEEDED; one whose preferred replica is not a live ISR member is
  PREFERRED_LEADER_NOT_AVAILABLE; otherwise the answer waits, up to the request's timeout,
  until this broker's metadata shows the preferred replica leading (Kafka's broker waits
  the same way), else REQUEST_TIMED_OUT.  An unclean election is INVALID_REQUEST.
* **AlterPartitionReassignments** -- each partition a reassignment, forwarded.  Epochal
  cannot cancel one (replicas null): INVALID_REQUEST.
* **ListPartitionReassignments** -- the pending requests under
  ``/admin/partitions_reassigned``: ``replicas`` is the metadata's assignment (AR+RAR while
  the move runs), ``adding`` the target replicas not yet in the ISR, ``removing`` the
  assigned replicas outside the target.
* **DescribeClientQuotas / AlterClientQuotas** -- Epochal's one quota,
  ``controller_mutation_rate`` (seed 001, KIP-599), with Kafka's filters (exact, default,
  any; strict) over ``user`` / ``client-id`` entities; an alteration of any other key, or
  of another entity type, is that entry's INVALID_REQUEST.  Alterations are forwarded.
* **DescribeConfigs** -- a topic has one config, ``min.insync.replicas``, the brokers'
  (read only, source STATIC_BROKER_CONFIG); a broker has none stored.  An unknown topic is
  UNKNOWN_TOPIC_OR_PARTITION, another broker's id or resource type INVALID_REQUEST.
* **IncrementalAlterConfigs** -- nothing is stored, so a DELETE (what
  ``kafka-reassign-partitions --verify`` sends to clear throttles) is answered done and
  anything else INVALID_CONFIG.
* **DescribeUserScramCredentials** -- every valid user name has its SCRAM-SHA-256
  credentials (derived from the cluster secret, :mod:`impl.node.auth.credentials`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode as KafkaError

from impl.node import zk as zkl
from impl.node.admin import RATE
from impl.node.admin_writes import AdminError
from impl.node.auth.credentials import valid_name
from impl.node.auth.scram import ITERATIONS
from impl.node.codes import ApiKey
from impl.node.envelope import UNKNOWN_ORIGIN, Origin
from impl.node.kafka import KafkaApi, build, millis
from impl.node.quota import DEFAULT

FORWARDED = 0  # Epochal's version of an admin write that any broker forwards to the controller
PREFERRED, UNCLEAN = 0, 1  # ElectLeaders' election_type
EXACT, DEFAULT_MATCH, SPECIFIED = 0, 1, 2  # DescribeClientQuotas' match_type
TOPIC, BROKER = 2, 4  # a config resource's type
DELETE = 1  # IncrementalAlterConfigs' config_operation
STATIC_BROKER_CONFIG, INT = 4, 3  # DescribeConfigs' config_source, config_type
SCRAM_SHA_256 = 1  # DescribeUserScramCredentials' mechanism
MAX_ELECTION_WAIT_S = 30.0
COMPONENTS = (("user", "user"), ("client_id", "client-id"))  # Epochal's key, Kafka's type

class Caller(NamedTuple):
    """Who sent an operator request: the body fields that name it (``user``, ``client_id``)
    and where it came from (its authenticated principal, which a forwarded request keeps)."""

    fields: dict[str, Any]
    origin: Origin


OPERATIONS_AS: dict[KafkaApi, ApiKey] = {
    KafkaApi.ELECT_LEADERS: ApiKey.ELECT_PREFERRED,
    KafkaApi.ALTER_PARTITION_REASSIGNMENTS: ApiKey.REASSIGN_PARTITIONS,
    KafkaApi.LIST_PARTITION_REASSIGNMENTS: ApiKey.METADATA,
    KafkaApi.DESCRIBE_CLIENT_QUOTAS: ApiKey.DESCRIBE_CLIENT_QUOTAS,
    KafkaApi.ALTER_CLIENT_QUOTAS: ApiKey.ALTER_CLIENT_QUOTAS,
    KafkaApi.DESCRIBE_CONFIGS: ApiKey.METADATA,
    KafkaApi.INCREMENTAL_ALTER_CONFIGS: ApiKey.METADATA,
    KafkaApi.DESCRIBE_USER_SCRAM_CREDENTIALS: ApiKey.DESCRIBE_CLIENT_QUOTAS,
}
"""The broker protocol's request whose authorization rule each operator request passes."""


def _result(code: int, message: str = "") -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message or None}


def _entity(user: str | None, client_id: str | None) -> list[dict[str, Any]]:
    """Kafka's entity components (Epochal's ``<default>`` is Kafka's null name)."""
    return [{"entity_type": kind, "entity_name": None if name == DEFAULT else name}
            for kind, name in (("user", user), ("client-id", client_id)) if name is not None]


def _matches(entity: dict[str, str | None], components: Any, strict: bool) -> bool:
    """Kafka's client quota filter over one entity (Kafka type -> Epochal name)."""
    named = {k: v for k, v in entity.items() if v is not None}
    for c in components:
        name = named.get(c.entity_type)
        if name is None or (c.match_type == EXACT and name != c.match) or \
                (c.match_type == DEFAULT_MATCH and name != DEFAULT):
            return False
    return not strict or set(named) == {c.entity_type for c in components}


class KafkaOperations:
    """The operator half of :class:`impl.node.broker.kafka_listener.KafkaClients`."""

    admin: Any  # impl.node.admin.AdminService
    metadata: dict[str, Any]
    config: Any
    id: int
    zk: Any
    _zk: Callable[[Callable[[], Any]], Awaitable[Any]]  # impl.node.broker.core

    async def _kafka_operation(self, api: KafkaApi, schema: type, body: Any, user: str | None,
                               client_id: str | None, origin: Origin = UNKNOWN_ORIGIN) -> Any:
        principal = Caller({"user": user, "client_id": client_id or ""}, origin)
        if api == KafkaApi.ELECT_LEADERS:
            return await self._kafka_elect(schema, body, principal)
        if api == KafkaApi.ALTER_PARTITION_REASSIGNMENTS:
            return await self._kafka_reassign(schema, body, principal)
        if api == KafkaApi.LIST_PARTITION_REASSIGNMENTS:
            return await self._kafka_list_reassignments(schema, body)
        if api == KafkaApi.DESCRIBE_CLIENT_QUOTAS:
            return await self._kafka_describe_quotas(schema, body)
        if api == KafkaApi.ALTER_CLIENT_QUOTAS:
            return await self._kafka_alter_quotas(schema, body, principal)
        if api == KafkaApi.DESCRIBE_CONFIGS:
            return self._kafka_describe_configs(schema, body)
        if api == KafkaApi.INCREMENTAL_ALTER_CONFIGS:
            return self._kafka_alter_configs(schema, body)
        assert api == KafkaApi.DESCRIBE_USER_SCRAM_CREDENTIALS, api
        return self._kafka_scram_credentials(schema, body)

    @staticmethod
    def _kafka_scram_credentials(schema: type, body: Any) -> Any:
        """Every valid user name has SCRAM-SHA-256 credentials (its password derived from
        the cluster secret); any other name is RESOURCE_NOT_FOUND."""
        return build(schema, throttle_time=0, **_result(KafkaError.none), results=[
            {"user": u.name, **_result(KafkaError.none),
             "credential_infos": [{"mechanism": SCRAM_SHA_256, "iterations": ITERATIONS}]}
            if valid_name(u.name) else
            {"user": u.name, **_result(KafkaError.resource_not_found, "not a user name"),
             "credential_infos": []} for u in body.users or ()])

    async def _kafka_forward(self, api: ApiKey, request: dict[str, Any],
                             origin: Origin) -> dict[str, Any]:
        """An admin write at its forwarded version: the controller's answer, from any broker."""
        return dict(await self.admin.handle(api, FORWARDED, request, origin))

    def _partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        return self.metadata.get("topics", {}).get(topic, {}).get(str(partition))

    # -- leader election --------------------------------------------------------------------
    async def _kafka_elect(self, schema: type, body: Any, principal: Caller) -> Any:
        if int(body.election_type) != PREFERRED:
            return build(schema, throttle_time=0, error_code=KafkaError.invalid_request,
                         replica_election_results=[])
        if body.topic_partitions is None:
            named = [(t, int(p)) for t, parts in sorted(self.metadata.get("topics", {}).items())
                     for p in sorted(parts, key=int)]
        else:
            named = [(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]
        wait_s = min(millis(body.timeout) / 1000, MAX_ELECTION_WAIT_S)
        results = await asyncio.gather(*(self._kafka_elect_one(t, p, principal, wait_s)
                                         for t, p in named))
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), row in zip(named, results, strict=True):
            by_topic.setdefault(t, []).append({"partition_id": p, **row})
        return build(schema, throttle_time=0, error_code=KafkaError.none,
                     replica_election_results=[{"topic": t, "partition_result": rows}
                                               for t, rows in by_topic.items()])

    async def _kafka_elect_one(self, topic: str, partition: int, principal: Caller,
                               wait_s: float) -> dict[str, Any]:
        state = self._partition_state(topic, partition)
        if state is None:
            return _result(KafkaError.unknown_topic_or_partition, f"no partition {topic}-{partition}")
        preferred = int(state["replicas"][0])
        if int(state["leader"]) == preferred:
            return _result(KafkaError.election_not_needed)
        if preferred not in state["isr"] or str(preferred) not in self.metadata.get("brokers", {}):
            return _result(KafkaError.preferred_leader_not_available,
                           f"preferred replica {preferred} is not a live ISR member")
        try:
            await self._kafka_forward(ApiKey.ELECT_PREFERRED, {
                "topic": topic, "partition": partition, **principal.fields}, principal.origin)
        except AdminError as exc:
            return _result(exc.code, str(exc))
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            state = self._partition_state(topic, partition)
            if state is not None and int(state["leader"]) == preferred:
                return _result(KafkaError.none)
            await asyncio.sleep(0.05)
        return _result(KafkaError.request_timed_out, f"broker {preferred} not leading yet")

    # -- reassignments ----------------------------------------------------------------------
    async def _kafka_reassign(self, schema: type, body: Any, principal: Caller) -> Any:
        responses = []
        for t in body.topics:
            rows = []
            for p in t.partitions:
                row: dict[str, Any] = {"partition_index": int(p.partition_index),
                                       **_result(KafkaError.none)}
                if p.replicas is None:
                    row.update(_result(KafkaError.invalid_request,
                                       "Epochal cannot cancel a reassignment"))
                else:
                    try:
                        await self._kafka_forward(ApiKey.REASSIGN_PARTITIONS, {
                            "topic": t.name, "partition": int(p.partition_index),
                            "replicas": [int(b) for b in p.replicas], **principal.fields},
                            principal.origin)
                    except AdminError as exc:
                        row.update(_result(exc.code, str(exc)))
                rows.append(row)
            responses.append({"name": t.name, "partitions": rows})
        return build(schema, throttle_time=0, **_result(KafkaError.none), responses=responses)

    async def _kafka_list_reassignments(self, schema: type, body: Any) -> Any:
        pending = await self._zk(self._pending_reassignments)
        asked = None if body.topics is None else \
            {(t.name, int(p)) for t in body.topics for p in t.partition_indexes}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), target in sorted(pending.items()):
            state = self._partition_state(topic, p)
            if (asked is not None and (topic, p) not in asked) or state is None:
                continue
            replicas = [int(b) for b in state["replicas"]]
            by_topic.setdefault(topic, []).append({
                "partition_index": p, "replicas": replicas,
                "adding_replicas": [b for b in target if b not in state["isr"]],
                "removing_replicas": [b for b in replicas if b not in target]})
        return build(schema, throttle_time=0, **_result(KafkaError.none), topics=[
            {"name": t, "partitions": rows} for t, rows in by_topic.items()])

    def _pending_reassignments(self) -> dict[tuple[str, int], list[int]]:
        """ZooKeeper thread: partition -> target replicas of each pending reassignment."""
        out: dict[tuple[str, int], list[int]] = {}
        for topic in self.zk.get_children(zkl.REASSIGN) if self.zk.exists(zkl.REASSIGN) else []:
            for p in self.zk.get_children(f"{zkl.REASSIGN}/{topic}"):
                data, _ = self.zk.get(f"{zkl.REASSIGN}/{topic}/{p}")
                out[(topic, int(p))] = [int(b) for b in zkl.decode(data)]
        return out

    # -- client quotas ----------------------------------------------------------------------
    async def _kafka_describe_quotas(self, schema: type, body: Any) -> Any:
        unknown = {c.entity_type for c in body.components} - {kind for _, kind in COMPONENTS}
        if unknown:
            return build(schema, throttle_time=0, entries=None, **_result(
                KafkaError.invalid_request, f"entity types {sorted(unknown)}: Epochal knows "
                                            "user, client-id"))
        quotas = (await self.admin.handle(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, {}))["quotas"]
        entries = [{"entity": _entity(q["user"], q["client_id"]),
                    "values": [{"key": RATE, "value": float(q[RATE])}]} for q in quotas
                   if _matches({"user": q["user"], "client-id": q["client_id"]},
                               body.components, bool(body.strict))]
        return build(schema, throttle_time=0, **_result(KafkaError.none), entries=entries)

    async def _kafka_alter_quotas(self, schema: type, body: Any, principal: Caller) -> Any:
        rows = []
        for q in body.entries:
            names = {c.entity_type: DEFAULT if c.entity_name is None else c.entity_name
                     for c in q.entity}
            keys = sorted({op.key for op in q.ops} - {RATE})
            entity = {key: names.get(kind) for key, kind in COMPONENTS}
            row = {"entity": [{"entity_type": c.entity_type, "entity_name": c.entity_name}
                              for c in q.entity], **_result(KafkaError.none)}
            if set(names) - {kind for _, kind in COMPONENTS} or not names:
                row.update(_result(KafkaError.invalid_request,
                                   "a quota entity is a user, a client-id or both"))
            elif keys or len(q.ops) != 1:
                row.update(_result(KafkaError.invalid_request,
                                   f"unknown quota keys {keys}: Epochal enforces {RATE} only"
                                   if keys else f"one operation on {RATE}"))
            else:
                (op,) = q.ops
                try:
                    await self._kafka_forward(ApiKey.ALTER_CLIENT_QUOTAS, {
                        "entries": [{**entity, "rate": None if op.remove else float(op.value)}],
                        "validate_only": bool(body.validate_only), **principal.fields},
                        principal.origin)
                except AdminError as exc:
                    row.update(_result(exc.code, str(exc)))
            rows.append(row)
        return build(schema, throttle_time=0, entries=rows)

    @staticmethod
    def _kafka_quotas_refused(schema: type, body: Any, code: int, message: str) -> Any:
        """AlterClientQuotas refused as a whole (authorization): every entry's error."""
        return build(schema, throttle_time=0, entries=[
            {"entity": [{"entity_type": c.entity_type, "entity_name": c.entity_name}
                        for c in q.entity], **_result(code, message)} for q in body.entries])

    # -- configs ----------------------------------------------------------------------------
    def _config_refusal(self, resource_type: int, name: str) -> dict[str, Any] | None:
        """Kafka's error for a config resource Epochal does not have (None: it has it)."""
        if resource_type == TOPIC:
            if name not in self.metadata.get("topics", {}):
                return _result(KafkaError.unknown_topic_or_partition, f"no topic {name}")
            return None
        if resource_type == BROKER:
            if name not in ("", str(self.id)):
                return _result(KafkaError.invalid_request, f"this is broker {self.id}, not {name}")
            return None
        return _result(KafkaError.invalid_request,
                       f"resource type {resource_type}: Epochal has topic and broker configs")

    def _kafka_describe_configs(self, schema: type, body: Any) -> Any:
        min_isr = {"name": "min.insync.replicas", "value": str(self.config.min_insync_replicas),
                   "read_only": True, "config_source": STATIC_BROKER_CONFIG,
                   "is_sensitive": False, "synonyms": [], "config_type": INT,
                   "documentation": None}
        results = []
        for r in body.resources:
            refused = self._config_refusal(int(r.resource_type), r.resource_name)
            wanted = r.configuration_keys
            configs = [] if refused is not None or int(r.resource_type) != TOPIC else \
                [min_isr] if wanted is None or min_isr["name"] in wanted else []
            results.append({"resource_type": int(r.resource_type),
                            "resource_name": r.resource_name, "configs": configs,
                            **(refused or _result(KafkaError.none))})
        return build(schema, throttle_time=0, results=results)

    def _kafka_alter_configs(self, schema: type, body: Any) -> Any:
        responses = []
        for r in body.resources:
            refused = self._config_refusal(int(r.resource_type), r.resource_name)
            if refused is None and any(int(c.config_operation) != DELETE for c in r.configs):
                refused = _result(KafkaError.invalid_config,
                                  "Epochal stores no configs: only deletes are answered")
            responses.append({"resource_type": int(r.resource_type),
                              "resource_name": r.resource_name,
                              **(refused or _result(KafkaError.none))})
        return build(schema, throttle_time=0, responses=responses)
