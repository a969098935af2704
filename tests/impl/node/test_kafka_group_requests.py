"""The group coordinator's requests on the Kafka listener (impl.node.broker.kafka_groups),
against a stand-in broker (metadata, a dict for ZooKeeper): every answer is encoded as
Kafka's message of its version (kio), at the lowest and the highest version ApiVersions
lists; JoinGroups wait for each other on one event loop; commits land in the znodes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.exceptions import NodeExistsError, NoNodeError
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KafkaError

from impl.node import groups as gp
from impl.node import zk as zkl
from impl.node.broker.kafka_groups import KafkaGroups, offset_path
from impl.node.kafka import SERVED, KafkaApi, build, encode_response, response_schema

LIVE = [0, 1, 2]
GROUP = "g"
PROTOCOLS = [{"name": "range", "metadata": b"subscription"}]


class FakeZk:
    """The znodes the coordinator writes and reads, by path."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}

    def get(self, path: str) -> tuple[bytes, None]:
        if path not in self.nodes:
            raise NoNodeError
        return self.nodes[path], None

    def set(self, path: str, data: bytes) -> None:
        if path not in self.nodes:
            raise NoNodeError
        self.nodes[path] = data

    def create(self, path: str, data: bytes, makepath: bool = False) -> None:
        if path in self.nodes:
            raise NodeExistsError
        self.nodes[path] = data

    def exists(self, path: str) -> bool:
        return any(p.startswith(path + "/") for p in self.nodes)

    def get_children(self, path: str) -> list[str]:
        return sorted({p[len(path) + 1:].split("/")[0] for p in self.nodes
                       if p.startswith(path + "/")})


class Coordinator(KafkaGroups):
    def __init__(self, broker: int | None = None) -> None:
        self.id = gp.coordinator(GROUP, LIVE) if broker is None else broker
        self.metadata = {"brokers": {str(b): [] for b in LIVE},
                         "topics": {"t": {"0": {}, "1": {}}}}
        self.zk = FakeZk()

    async def _zk(self, fn: Callable[[], Any]) -> Any:
        return fn()

    async def _kafka_broker_endpoints(self, brokers: list[int]) -> dict[int, tuple[str, int] | None]:
        return {b: ("127.0.0.1", 9000 + b) for b in brokers}


async def _ask(c: Coordinator, api: KafkaApi, version: int, principal: str = "alice",
               **body: Any) -> Any:
    request = build(load_request_schema(api, version), **body)
    schema = response_schema(api, version)
    if api == KafkaApi.FIND_COORDINATOR:
        answer = await c._find_coordinator(schema, request)
    else:
        answer = await c._kafka_group(api, version, schema, request, "cli", ("10.0.0.7", 5000),
                                      principal)
    encode_response(api, 7, answer)  # it is Kafka's message of this version
    return answer


def _versions(api: KafkaApi) -> list[int]:
    return list(SERVED[api])


@pytest.mark.parametrize("version", _versions(KafkaApi.FIND_COORDINATOR))
def test_find_coordinator_names_one_live_broker_by_the_group_id(version: int) -> None:
    c = Coordinator()
    keys = {"key": GROUP, "coordinator_keys": [GROUP, "a/b"], "key_type": 0}
    answer = asyncio.run(_ask(c, KafkaApi.FIND_COORDINATOR, version, **keys))
    node = gp.coordinator(GROUP, LIVE)
    if version >= 4:
        (ours, bad) = answer.coordinators
        assert (ours.node_id, ours.port, ours.error_code) == (node, 9000 + node, KafkaError.none)
        assert bad.error_code == KafkaError.invalid_group_id
    else:
        assert (answer.node_id, answer.port, answer.error_code) == (node, 9000 + node, 0)
    if version >= 1:
        txn = asyncio.run(_ask(c, KafkaApi.FIND_COORDINATOR, version,
                               **{**keys, "key_type": 1}))
        code = txn.coordinators[0].error_code if version >= 4 else txn.error_code
        assert code == KafkaError.coordinator_not_available


def _join(version: int, member_id: str = "") -> dict[str, Any]:
    return {"group_id": GROUP, "session_timeout": 10_000, "rebalance_timeout": 5_000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": PROTOCOLS, "reason": None}


@pytest.mark.parametrize("join_v,sync_v,beat_v,leave_v", [
    (lo, SERVED[KafkaApi.SYNC_GROUP][i], SERVED[KafkaApi.HEARTBEAT][i],
     SERVED[KafkaApi.LEAVE_GROUP][i]) for i, lo in enumerate(SERVED[KafkaApi.JOIN_GROUP])])
def test_two_members_join_sync_heartbeat_and_leave(join_v: int, sync_v: int, beat_v: int,
                                                   leave_v: int) -> None:
    async def run() -> None:
        c = Coordinator()
        first = await _ask(c, KafkaApi.JOIN_GROUP, join_v, **_join(join_v))
        if join_v >= 4:  # KIP-394: join again with the id given
            assert first.error_code == KafkaError.member_id_required
            first = await _ask(c, KafkaApi.JOIN_GROUP, join_v, **_join(join_v, first.member_id))
        a = first.member_id
        assert (first.error_code, first.generation_id, first.leader) == (0, 1, a)
        sync = {"group_id": GROUP, "group_instance_id": None, "protocol_type": "consumer",
                "protocol_name": "range"}
        await _ask(c, KafkaApi.SYNC_GROUP, sync_v, generation_id=1, member_id=a,
                   assignments=[{"member_id": a, "assignment": b"0,1"}], **sync)
        # b joins: its JoinGroup waits until a's heartbeat sends a to join again
        b_join = asyncio.ensure_future(_ask(c, KafkaApi.JOIN_GROUP, join_v, **_join(join_v)))
        await asyncio.sleep(0)
        if join_v >= 4:
            b_id = (await b_join).member_id
            b_join = asyncio.ensure_future(
                _ask(c, KafkaApi.JOIN_GROUP, join_v, **_join(join_v, b_id)))
        await asyncio.sleep(0.01)
        assert not b_join.done()
        beat = await _ask(c, KafkaApi.HEARTBEAT, beat_v, group_id=GROUP, generation_id=1,
                          member_id=a, group_instance_id=None)
        assert beat.error_code == KafkaError.rebalance_in_progress
        a_again = await _ask(c, KafkaApi.JOIN_GROUP, join_v, **_join(join_v, a))
        b_answer = await b_join
        b = b_answer.member_id
        assert (a_again.generation_id, b_answer.generation_id, b_answer.leader) == (2, 2, a)
        assert [m.member_id for m in a_again.members] == [a, b] and b_answer.members == ()
        # b's SyncGroup waits for the leader's
        b_sync = asyncio.ensure_future(_ask(c, KafkaApi.SYNC_GROUP, sync_v, generation_id=2,
                                            member_id=b, assignments=[], **sync))
        await asyncio.sleep(0.01)
        assert not b_sync.done()
        await _ask(c, KafkaApi.SYNC_GROUP, sync_v, generation_id=2, member_id=a, assignments=[
            {"member_id": a, "assignment": b"0"}, {"member_id": b, "assignment": b"1"}], **sync)
        assert (await b_sync).assignment == b"1"
        stale = await _ask(c, KafkaApi.HEARTBEAT, beat_v, group_id=GROUP, generation_id=1,
                           member_id=b, group_instance_id=None)
        assert stale.error_code == KafkaError.illegal_generation
        left = await _ask(c, KafkaApi.LEAVE_GROUP, leave_v, group_id=GROUP, member_id=b,
                          members=[{"member_id": b, "group_instance_id": None}])
        code = left.members[0].error_code if leave_v >= 3 else left.error_code
        assert code == KafkaError.none and c._group_state()[GROUP].phase is gp.Phase.PREPARING_REBALANCE

    asyncio.run(run())


def test_a_broker_that_is_not_the_coordinator_answers_not_coordinator() -> None:
    other = next(b for b in LIVE if b != gp.coordinator(GROUP, LIVE))
    c = Coordinator(other)
    join = asyncio.run(_ask(c, KafkaApi.JOIN_GROUP, 7, **_join(7)))
    commit = asyncio.run(_ask(c, KafkaApi.OFFSET_COMMIT, 8, group_id=GROUP,
                              generation_id_or_member_epoch=-1, member_id="",
                              group_instance_id=None, topics=[{"name": "t", "partitions": [
                                  {"partition_index": 0, "committed_offset": 5,
                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}]))
    fetch = asyncio.run(_ask(c, KafkaApi.OFFSET_FETCH, 7, group_id=GROUP, topics=None))
    assert join.error_code == commit.topics[0].partitions[0].error_code == fetch.error_code \
        == KafkaError.not_coordinator
    assert c.zk.nodes == {}


@pytest.mark.parametrize("commit_v,fetch_v", [(2, 1), (8, 7)])
def test_commits_are_stored_in_zookeeper_with_their_committer_and_fetched_back(
        commit_v: int, fetch_v: int) -> None:
    c = Coordinator()
    partitions = [{"partition_index": p, "committed_offset": 10 + p, "committed_leader_epoch": -1,
                   "committed_metadata": "m"} for p in (0, 1, 7)]
    answer = asyncio.run(_ask(c, KafkaApi.OFFSET_COMMIT, commit_v, group_id=GROUP,
                              generation_id_or_member_epoch=-1, member_id="",
                              group_instance_id=None, retention_time=-1,
                              topics=[{"name": "t", "partitions": partitions},
                                      {"name": "gone", "partitions": partitions[:1]}]))
    codes = [[p.error_code for p in t.partitions] for t in answer.topics]
    assert codes == [[0, 0, KafkaError.unknown_topic_or_partition],
                     [KafkaError.unknown_topic_or_partition]]
    assert zkl.decode(c.zk.nodes[offset_path(GROUP, "t", 1)]) == {
        "offset": 11, "metadata": "m", "committed_by": "alice"}
    assert sorted(c.zk.nodes) == [offset_path(GROUP, "t", 0), offset_path(GROUP, "t", 1)]
    asked = asyncio.run(_ask(c, KafkaApi.OFFSET_FETCH, fetch_v, group_id=GROUP,
                             topics=[{"name": "t", "partition_indexes": [0, 1, 5]}]))
    assert [(p.partition_index, p.committed_offset) for p in asked.topics[0].partitions] == [
        (0, 10), (1, 11), (5, -1)]
    if fetch_v >= 2:  # null topics: every partition the group committed
        every = asyncio.run(_ask(c, KafkaApi.OFFSET_FETCH, fetch_v, group_id=GROUP, topics=None))
        assert [(t.name, [p.committed_offset for p in t.partitions]) for t in every.topics] == [
            ("t", [10, 11])]
