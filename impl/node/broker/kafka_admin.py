"""Kafka's admin requests on the Kafka listener, translated into Epochal's admin path.

CreateTopics, DeleteTopics and CreatePartitions (what Kafka's ``kafka-topics`` and every
client's admin API send) become the broker protocol's CREATE_TOPICS, DELETE_TOPICS and
CREATE_PARTITIONS at their controller version (:mod:`impl.node.admin`), so the same rules
hold (docs/kafka-protocol.md):

* **Only the active controller answers** (seed 004, KIP-590): any other broker answers every
  topic NOT_CONTROLLER (41), and Kafka's clients find the controller in Metadata's
  ``controller_id`` and resend there -- Kafka's own rule for these APIs.
* **The controller-mutation quota** (seed 001, KIP-599) is charged to the authenticated user
  and the request's client id.  Versions that know THROTTLING_QUOTA_EXCEEDED (CreateTopics
  v6+, DeleteTopics v5+, CreatePartitions v3+) are refused with it, as the broker
  protocol's new clients are; older versions are admitted and their answer is held back
  for the throttle time (the connection answers in order, so it reads nothing meanwhile:
  Kafka mutes such a client's channel for as long).
* **What Epochal's topics cannot have is refused per topic**: topic configs
  (INVALID_CONFIG), topics named by id alone (UNKNOWN_TOPIC_ID).  A partition count or
  replication factor of -1 (the broker's default, KIP-464) is one.

A created topic is answered once this broker's metadata lists a leader for each of its
partitions, or at the request's timeout (Kafka's broker waits the same way), so that a
producer started right after ``kafka-topics --create`` finds it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kio.schema.errors import ErrorCode as KafkaError

from impl.node.admin import AdminError
from impl.node.codes import CONTROLLER_VERSIONS, ApiKey
from impl.node.kafka import KafkaApi, build, millis

AS_ADMIN: dict[KafkaApi, ApiKey] = {
    KafkaApi.CREATE_TOPICS: ApiKey.CREATE_TOPICS, KafkaApi.DELETE_TOPICS: ApiKey.DELETE_TOPICS,
    KafkaApi.CREATE_PARTITIONS: ApiKey.CREATE_PARTITIONS,
}
STRICT_FROM: dict[KafkaApi, int] = {
    KafkaApi.CREATE_TOPICS: 6, KafkaApi.DELETE_TOPICS: 5, KafkaApi.CREATE_PARTITIONS: 3,
}
"""The first version of each that knows THROTTLING_QUOTA_EXCEEDED (KIP-599)."""
DEFAULT = -1  # CreateTopics' num_partitions / replication_factor: the broker's default
DEFAULT_PARTITIONS = DEFAULT_REPLICATION_FACTOR = 1
MAX_CREATE_WAIT_S = 30.0


def _row(name: str | None, code: int, message: str = "") -> dict[str, Any]:
    return {"name": name, "error_code": int(code), "error_message": message or None}


class KafkaAdmin:
    """The admin half of :class:`impl.node.broker.kafka_listener.KafkaClients`."""

    admin: Any  # impl.node.admin.AdminService
    metadata: dict[str, Any]

    async def _kafka_admin(self, api: KafkaApi, version: int, schema: type, body: Any,
                           user: str | None, client_id: str | None) -> Any:
        topics, refused = self._admin_topics(api, body)
        answers = {t["topic"]: t for t in await self._admin_call(
            api, version, topics, bool(getattr(body, "validate_only", False)), user, client_id)}
        if api == KafkaApi.CREATE_TOPICS:
            created = [n for n, t in answers.items() if int(t.get("error", 0)) == 0]
            if created and not body.validate_only:
                await self._await_leaders(created, min(millis(body.timeout) / 1000,
                                                       MAX_CREATE_WAIT_S))
        throttle = max((int(t.get("throttle_time_ms", 0)) for t in answers.values()), default=0)
        rows = [_row(name, int(t.get("error", 0)), str(t.get("message", "")))
                | self._admin_detail(api, t) for name, t in answers.items()] + \
            [self._admin_detail(api, {}) | r for r in refused]
        if throttle > 0 and version < STRICT_FROM[api]:
            await asyncio.sleep(throttle / 1000)  # an old client: admitted, then held back
        results_field = {KafkaApi.CREATE_TOPICS: "topics", KafkaApi.DELETE_TOPICS: "responses",
                         KafkaApi.CREATE_PARTITIONS: "results"}[api]
        return build(schema, throttle_time=throttle, **{results_field: rows})

    @staticmethod
    def _admin_topics(api: KafkaApi, body: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The broker protocol's topic specs, and the rows of topics refused before it."""
        specs: list[dict[str, Any]] = []
        refused: list[dict[str, Any]] = []
        if api == KafkaApi.CREATE_TOPICS:
            for t in body.topics:
                if t.configs:
                    refused.append(_row(t.name, KafkaError.invalid_config,
                                        "topic configs are not stored: Epochal topics have none"))
                    continue
                spec: dict[str, Any] = {
                    "topic": t.name,
                    "partitions": DEFAULT_PARTITIONS if t.num_partitions == DEFAULT
                    else int(t.num_partitions),
                    "replication_factor": DEFAULT_REPLICATION_FACTOR
                    if t.replication_factor == DEFAULT else int(t.replication_factor)}
                if t.assignments:
                    spec["assignment"] = {str(a.partition_index): [int(b) for b in a.broker_ids]
                                          for a in t.assignments}
                specs.append(spec)
        elif api == KafkaApi.DELETE_TOPICS:
            names = getattr(body, "topic_names", None)
            if names is None:  # v6: topics by name or by id
                names = [t.name for t in body.topics if t.name is not None]
                refused = [_row(None, KafkaError.unknown_topic_id,
                                "topics are named here, not numbered: give the name")
                           | {"topic_id": t.topic_id} for t in body.topics if t.name is None]
            specs = [{"topic": n} for n in names]
        else:
            for t in body.topics:
                spec = {"topic": t.name, "count": int(t.count)}
                if t.assignments:
                    spec["assignments"] = [[int(b) for b in a.broker_ids] for a in t.assignments]
                specs.append(spec)
        return specs, refused

    async def _admin_call(self, api: KafkaApi, version: int, topics: list[dict[str, Any]],
                          validate_only: bool, user: str | None,
                          client_id: str | None) -> list[dict[str, Any]]:
        """The broker protocol's answer for each topic, at the controller version (never
        forwarded); a request refused whole (NOT_CONTROLLER) is each topic's answer."""
        if not topics:
            return []
        admin_api = AS_ADMIN[api]
        controller_version = CONTROLLER_VERSIONS[admin_api]
        request = {"topics": [t if admin_api != ApiKey.DELETE_TOPICS else t["topic"]
                              for t in topics],
                   "validate_only": validate_only, "user": user, "client_id": client_id or "",
                   # how the quota treats the client: strict if its version knows the refusal
                   "original_version": controller_version if version >= STRICT_FROM[api]
                   else controller_version - 1}
        try:
            answer = await self.admin.handle(admin_api, controller_version, request)
        except AdminError as exc:
            return [{"topic": t["topic"], "error": int(exc.code), "message": str(exc),
                     "throttle_time_ms": exc.throttle_ms} for t in topics]
        return list(answer["topics"])

    @staticmethod
    def _admin_detail(api: KafkaApi, answer: dict[str, Any]) -> dict[str, Any]:
        if api != KafkaApi.CREATE_TOPICS:
            return {"topic_id": None}
        assignment = answer.get("assignment") or {}
        replicas = next(iter(assignment.values()), [])
        return {"topic_id": None, "topic_config_error_code": 0, "configs": [],
                "num_partitions": len(assignment) if assignment else -1,
                "replication_factor": len(replicas) if assignment else -1}

    async def _await_leaders(self, topics: list[str], timeout_s: float) -> None:
        """Until this broker's metadata has a leader for every partition of ``topics``."""
        deadline = time.monotonic() + timeout_s

        def led(topic: str) -> bool:
            parts = self.metadata.get("topics", {}).get(topic)
            return bool(parts) and all(int(p["leader"]) >= 0 for p in parts.values())

        while not all(led(t) for t in topics) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
