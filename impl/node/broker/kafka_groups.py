"""Consumer groups on the Kafka listener: Kafka's classic group protocol, coordinated by
one broker per group, with committed offsets in ZooKeeper (docs/kafka-protocol.md
"Consumer groups").

* **FindCoordinator** -- the group's coordinator is the live broker at CRC-32 of the group
  id over the sorted live brokers of this broker's metadata
  (:func:`impl.node.groups.coordinator`), so every broker names the same one.  A group
  request sent to any other broker is NOT_COORDINATOR, and the client asks again.
* **JoinGroup, SyncGroup, Heartbeat, LeaveGroup** -- the group's membership
  (:mod:`impl.node.groups`, pure), in the coordinator's memory only.  A JoinGroup, and a
  follower's SyncGroup, wait for the rebalance on an asyncio future, so the broker keeps
  serving every other connection meanwhile (a connection's own requests are answered in
  order, as Kafka's broker answers them).  A new coordinator, after a broker change,
  knows no members: their heartbeats get NOT_COORDINATOR or UNKNOWN_MEMBER_ID and they join
  again.
* **OffsetCommit, OffsetFetch** -- ``/consumers/<group>/offsets/<topic>/<partition>``, as
  ZooKeeper-era Kafka (0.8) kept them, written with the broker's authenticated ZooKeeper
  session and so the cluster's ACL; the znode holds the offset, the commit's metadata and
  the principal that committed it.  They survive a coordinator change.  Only partitions
  of topics in the metadata are stored, so a client names no other znode.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError
from kio.schema.errors import ErrorCode as KafkaError

from impl.node import groups as gp
from impl.node import zk as zkl
from impl.node.codes import ApiKey
from impl.node.kafka import KafkaApi, build, millis

CONSUMERS = "/consumers"
MAX_METADATA = 4096  # a commit's metadata string, as Kafka's offset.metadata.max.bytes
TICK_S = 0.25  # how often session timeouts and rebalance deadlines are checked
GROUP_KEY = 0  # FindCoordinator's key_type for a group (1: a transactional id)
JOINING = -1  # a waiting JoinGroup's place for a generation (a SyncGroup names its own)

GROUPS_AS: dict[KafkaApi, ApiKey] = {api: ApiKey.FETCH for api in (
    KafkaApi.JOIN_GROUP, KafkaApi.SYNC_GROUP, KafkaApi.HEARTBEAT, KafkaApi.LEAVE_GROUP,
    KafkaApi.OFFSET_COMMIT, KafkaApi.OFFSET_FETCH)}
"""A group request passes a consumer fetch's authorization rule: any authenticated
principal may consume in a group (docs/security.md)."""


def offset_path(group_id: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group_id}/offsets/{topic}/{partition}"


def _error(code: int, message: str = "") -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message or None}


class KafkaGroups:
    """The group coordinator half of :class:`impl.node.broker.kafka_listener.KafkaClients`."""

    id: int
    metadata: dict[str, Any]
    zk: Any
    _zk: Callable[[Callable[[], Any]], Awaitable[Any]]  # impl.node.broker.core
    _kafka_broker_endpoints: Callable[[list[int]], Awaitable[dict[int, tuple[str, int] | None]]]

    _groups: dict[str, gp.Group] | None = None
    # each group's waiting JoinGroups and SyncGroups: (SyncGroup's generation or JOINING,
    # member id, the answer's future)
    _group_waiters: dict[str, list[tuple[int, str, asyncio.Future[Any]]]]
    _group_ticker: asyncio.Task[None] | None = None

    # -- the coordinator ------------------------------------------------------------------
    def _live_brokers(self) -> list[int]:
        return sorted(int(b) for b in self.metadata.get("brokers", {}))

    async def _find_coordinator(self, schema: type, body: Any) -> Any:
        keys = getattr(body, "coordinator_keys", None)
        keys = list(keys) if keys is not None else [body.key]
        rows = [await self._coordinator_row(k, getattr(body, "key_type", GROUP_KEY)) for k in keys]
        first = rows[0] if rows else {"node_id": -1, "host": "", "port": -1, **_error(0)}
        return build(schema, throttle_time=0, coordinators=rows,
                     **{k: v for k, v in first.items() if k != "key"})

    async def _coordinator_row(self, key: str, key_type: int) -> dict[str, Any]:
        row: dict[str, Any] = {"key": key, "node_id": -1, "host": "", "port": -1}
        if key_type != GROUP_KEY:
            return {**row, **_error(KafkaError.coordinator_not_available,
                                    "no transaction coordinator: transactions are not served")}
        if not gp.valid_group_id(key):
            return {**row, **_error(KafkaError.invalid_group_id, f"group id {key!r}")}
        node = gp.coordinator(key, self._live_brokers())
        endpoint = (await self._kafka_broker_endpoints([node])).get(node) if node >= 0 else None
        if endpoint is None:
            return {**row, **_error(KafkaError.coordinator_not_available, "no live broker")}
        return {**row, "node_id": node, "host": endpoint[0], "port": endpoint[1], **_error(0)}

    def _not_coordinator(self, group_id: str) -> int | None:
        """The error for a group request this broker may not answer, or None."""
        if not gp.valid_group_id(group_id):
            return KafkaError.invalid_group_id
        node = gp.coordinator(group_id, self._live_brokers())
        if node < 0:
            return KafkaError.coordinator_not_available
        return None if node == self.id else KafkaError.not_coordinator

    def _group_state(self) -> dict[str, gp.Group]:
        if self._groups is None:
            self._groups, self._group_waiters = {}, {}
            self._group_ticker = asyncio.get_running_loop().create_task(self._expire_groups())
        return self._groups

    async def _expire_groups(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            now = _now_ms()
            for group_id, group in list(self._group_state().items()):
                self._apply(group_id, gp.expire(group, now))

    def _apply(self, group_id: str, group: gp.Group | None) -> None:
        """Keep the group's new state and answer every request it settles."""
        groups = self._group_state()
        if group is None or (group.phase is gp.Phase.EMPTY and not group.pending):
            groups.pop(group_id, None)
        else:
            groups[group_id] = group
        waiting = []
        for generation, member_id, future in self._group_waiters.get(group_id, []):
            answer = gp.join_answer(group, member_id) if generation == JOINING \
                else gp.sync_answer(group, member_id, generation)
            if future.done():
                continue
            if answer is None:
                waiting.append((generation, member_id, future))
            else:
                future.set_result(answer)
        self._group_waiters[group_id] = waiting
        if not waiting:
            del self._group_waiters[group_id]

    async def _wait_group(self, group_id: str, member_id: str, generation: int) -> Any:
        """The answer to a JoinGroup (``generation`` JOINING) or a SyncGroup of that
        generation, once the group's state settles it."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._group_waiters.setdefault(group_id, []).append((generation, member_id, future))
        self._apply(group_id, self._group_state().get(group_id))
        return await future

    # -- membership -----------------------------------------------------------------------
    async def _kafka_group(self, api: KafkaApi, version: int, schema: type, body: Any,
                           client_id: str | None, peer: Any, principal: str | None) -> Any:
        if api == KafkaApi.OFFSET_FETCH:
            return await self._offset_fetch(schema, body)
        refused = self._not_coordinator(body.group_id)
        if api == KafkaApi.OFFSET_COMMIT:
            return await self._offset_commit(schema, body, refused, principal)
        if refused is not None:
            return _refused(api, schema, body, refused)
        if api == KafkaApi.JOIN_GROUP:
            return await self._join(version, schema, body, client_id, peer)
        if api == KafkaApi.SYNC_GROUP:
            return await self._sync(schema, body)
        group = self._group_state().get(body.group_id)
        if api == KafkaApi.HEARTBEAT:
            group, code = gp.heartbeat(group, body.member_id, body.generation_id, _now_ms())
            self._apply(body.group_id, group)
            return build(schema, throttle_time=0, error_code=code)
        leaving = [m.member_id for m in body.members] if hasattr(body, "members") \
            else [body.member_id]
        codes = []
        for member_id in leaving:
            group, code = gp.leave(group, member_id, _now_ms())
            codes.append(code)
        self._apply(body.group_id, group)
        batched = hasattr(body, "members")  # v3+ (KIP-345): each member's code, none above
        return build(schema, throttle_time=0, error_code=0 if batched else codes[0],
                     members=[{"member_id": m, "group_instance_id": None, "error_code": c}
                              for m, c in zip(leaving, codes, strict=True)])

    async def _join(self, version: int, schema: type, body: Any, client_id: str | None,
                    peer: Any) -> Any:
        session_ms = millis(body.session_timeout)
        request = gp.JoinRequest(
            body.member_id, client_id or "", str(peer[0]) if peer else "", session_ms,
            millis(body.rebalance_timeout) if hasattr(body, "rebalance_timeout") else session_ms,
            body.protocol_type, tuple((p.name, p.metadata) for p in body.protocols),
            require_known_id=version >= 4)
        group_id = body.group_id
        new_id = f"{client_id or 'member'}-{uuid.uuid4()}"
        group = self._group_state().get(group_id) or gp.Group(group_id)
        group, refused = gp.join(group, request, new_id, _now_ms())
        self._apply(group_id, group)
        answer = refused or await self._wait_group(
            group_id, new_id if not body.member_id else body.member_id, JOINING)
        return build(schema, throttle_time=0, error_code=answer.error,
                     generation_id=answer.generation, protocol_type=answer.protocol_type,
                     protocol_name=answer.protocol or "", leader=answer.leader,
                     member_id=answer.member_id,
                     members=[{"member_id": m, "group_instance_id": None, "metadata": md}
                              for m, md in answer.members])

    async def _sync(self, schema: type, body: Any) -> Any:
        group_id, member_id, generation = body.group_id, body.member_id, body.generation_id
        assignments = {a.member_id: a.assignment for a in body.assignments}
        group, refused = gp.sync(self._group_state().get(group_id), member_id, generation,
                                 assignments, _now_ms())
        self._apply(group_id, group)
        code, assignment = (refused, b"") if refused is not None \
            else await self._wait_group(group_id, member_id, generation)
        group = self._group_state().get(group_id)
        return build(schema, throttle_time=0, error_code=code, assignment=assignment,
                     protocol_type=group.protocol_type if group else None,
                     protocol_name=group.protocol if group else None)

    # -- offsets --------------------------------------------------------------------------
    async def _offset_commit(self, schema: type, body: Any, refused: int | None,
                             principal: str | None) -> Any:
        group_id = body.group_id
        if refused is None:
            refused = gp.commit_check(self._group_state().get(group_id), body.member_id,
                                      body.generation_id_or_member_epoch)
        writes: list[tuple[str, int, int, str]] = []
        topics = []
        for topic in body.topics:
            rows = []
            for p in topic.partitions:
                code = refused or self._commit_refusal(topic.name, p.partition_index,
                                                       p.committed_metadata)
                if not code:
                    writes.append((topic.name, p.partition_index, int(p.committed_offset),
                                   p.committed_metadata or ""))
                rows.append({"partition_index": p.partition_index, "error_code": code or 0})
            topics.append({"name": topic.name, "partitions": rows})
        if writes:
            await self._zk(lambda: self._store_offsets(group_id, writes, principal))
        return build(schema, throttle_time=0, topics=topics)

    def _commit_refusal(self, topic: str, partition: int, metadata: str | None) -> int | None:
        if str(partition) not in self.metadata.get("topics", {}).get(topic, {}):
            return KafkaError.unknown_topic_or_partition
        if metadata is not None and len(metadata.encode()) > MAX_METADATA:
            return KafkaError.offset_metadata_too_large
        return None

    def _store_offsets(self, group_id: str, writes: list[tuple[str, int, int, str]],
                       principal: str | None) -> None:
        for topic, partition, offset, metadata in writes:
            path = offset_path(group_id, topic, partition)
            data = zkl.encode({"offset": offset, "metadata": metadata, "committed_by": principal})
            try:
                self.zk.set(path, data)
            except NoNodeError:
                with contextlib.suppress(NodeExistsError):
                    self.zk.create(path, data, makepath=True)
                    continue
                self.zk.set(path, data)

    async def _offset_fetch(self, schema: type, body: Any) -> Any:
        group_id = body.group_id
        refused = self._not_coordinator(group_id)
        asked = None if body.topics is None else [(t.name, list(t.partition_indexes))
                                                  for t in body.topics]
        if refused is not None:
            rows = [{"name": t, "partitions": [{"partition_index": p, "committed_offset": -1,
                                                "metadata": "", "error_code": refused}
                                               for p in ps]} for t, ps in asked or []]
            return build(schema, throttle_time=0, topics=rows, error_code=refused)
        stored = await self._zk(lambda: self._read_offsets(group_id, asked))
        topics = [{"name": t, "partitions": [
            {"partition_index": p, "committed_leader_epoch": -1, "error_code": 0,
             "committed_offset": int(o["offset"]) if o else -1,
             "metadata": str(o["metadata"]) if o else ""} for p, o in parts]}
            for t, parts in stored]
        return build(schema, throttle_time=0, topics=topics, error_code=0)

    def _read_offsets(self, group_id: str, asked: list[tuple[str, list[int]]] | None
                      ) -> list[tuple[str, list[tuple[int, dict[str, Any] | None]]]]:
        """Each asked partition's stored commit (None: none); ``asked`` None: every one."""
        base = f"{CONSUMERS}/{group_id}/offsets"
        if asked is None:
            topics = self.zk.get_children(base) if self.zk.exists(base) else []
            asked = [(t, sorted(int(p) for p in self.zk.get_children(f"{base}/{t}")))
                     for t in sorted(topics)]
        found = []
        for topic, partitions in asked:
            rows = []
            for p in partitions:
                try:
                    data, _ = self.zk.get(offset_path(group_id, topic, p))
                    rows.append((p, zkl.decode(data)))
                except NoNodeError:
                    rows.append((p, None))
            found.append((topic, rows))
        return found


def _refused(api: KafkaApi, schema: type, body: Any, code: int) -> Any:
    """A membership request's answer with one error (NOT_COORDINATOR, INVALID_GROUP_ID, ...)."""
    if api == KafkaApi.JOIN_GROUP:
        return build(schema, throttle_time=0, error_code=code, generation_id=-1,
                     protocol_name="", leader="", member_id=body.member_id, members=[])
    if api == KafkaApi.SYNC_GROUP:
        return build(schema, throttle_time=0, error_code=code, assignment=b"")
    return build(schema, throttle_time=0, error_code=code, members=[])


def _now_ms() -> int:
    return int(time.monotonic() * 1000)
