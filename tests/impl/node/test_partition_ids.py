"""Integration: a partition removed while one of its replicas' brokers is down is never
added again under its id, so that broker's old log is deleted and nothing serves it.

Seed 000 H adds and removes partitions but does not say whether a removed id may come back.
The topic id (KIP-516, :mod:`impl.node.topic_identity`) is the topic's, not the partition's:
a broker that missed the removal's StopReplica(delete) and is named in a new partition of
the same id would find its old log under the same topic id and keep it.  As in the model
(``model.actions.partitions.fresh_partition_id``), an added partition takes an id past every
id the topic ever had, recorded in ZooKeeper (``/brokers/topics/T/next_partition``), and
the controller drops a request for an id the topic had.
"""

from __future__ import annotations

from typing import Any

import pytest
from impl_testing import three_brokers_and_their_roles, wait_until
from kazoo.exceptions import NoNodeError

from impl.node import zk as zkl
from impl.node.client import Admin, Consumer, Producer

pytestmark = pytest.mark.integration

TOPIC = "orders"


def _state(zk: Any, p: int) -> zkl.LeaderAndIsr:
    data, _ = zk.get(zkl.leader_and_isr_path(TOPIC, p))
    return zkl.LeaderAndIsr.from_json(data)


def _read_all(bootstrap: str) -> list[bytes]:
    with Consumer(bootstrap) as consumer:
        return [v for _p, _o, v in consumer.consume(TOPIC, True, 1.0)]


def _assignment(zk: Any) -> dict[int, list[int]]:
    data, _ = zk.get(zkl.topic_path(TOPIC))
    return {int(p): r for p, r in zkl.decode(data)["partitions"].items()}


def test_a_removed_partition_id_is_never_added_again_and_its_old_log_is_not_served(
        make_cluster: Any) -> None:
    c, zk, ctrl, stale, other = three_brokers_and_their_roles(make_cluster)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [ctrl, other], 1: [stale, other]})
        wait_until(lambda: len(_state(zk, 1).isr) == 2, 15, "partition 1's full ISR")
        with Producer(c.bootstrap, acks=-1) as producer:
            producer.send(TOPIC, "removed", partition=1)  # on every replica, stale's included

        c.kill(stale)
        wait_until(lambda: stale not in _state(zk, 1).isr, 15, f"broker {stale} out of the ISR")
        admin.remove_partitions(TOPIC, [1])  # StopReplica(delete) reaches the live replicas only
        assert _assignment(zk) == {0: [ctrl, other]}

        # an administrator asks for the removed id again, naming only the broker that was
        # down (seed 000 H: /admin/partitions_add/T/P -> AR).  Were it accepted, that broker
        # would start into a partition it leads, with the removed partition's log
        txn = zk.transaction()
        txn.create(f"{zkl.PARTITIONS_ADD}/{TOPIC}", b"")
        txn.create(f"{zkl.PARTITIONS_ADD}/{TOPIC}/1", zkl.encode([stale]))
        assert not any(isinstance(r, BaseException) for r in txn.commit())
        wait_until(lambda: not zk.exists(f"{zkl.PARTITIONS_ADD}/{TOPIC}"), 15, "the request consumed")

        c.restart(stale)
        c.wait_ready(30)
        old_log = c.data_dir / f"broker-{stale}" / "logs" / f"{TOPIC}-1"
        wait_until(lambda: not old_log.exists() or (1 in _assignment(zk) and _state(zk, 1).leader == stale),
                   15, "the old log deleted, or its broker leading the id again")
        assert b"removed" not in _read_all(c.bootstrap), "a replica serves the removed partition's records"
        assert 1 not in _assignment(zk) and not old_log.exists()

        # the admin API's addition back to two partitions takes a fresh id, recorded in ZK
        admin.add_partitions(TOPIC, 2)
        assert sorted(_assignment(zk)) == [0, 2]
        assert zk.get(zkl.next_partition_path(TOPIC))[0] == b"2"
        with Producer(c.bootstrap, acks=-1) as producer:
            producer.send(TOPIC, "added", partition=2)

    values = _read_all(c.bootstrap)
    assert b"removed" not in values and b"added" in values
    for b in c.configs:  # no replica anywhere holds the removed partition's log
        assert not (c.data_dir / f"broker-{b}" / "logs" / f"{TOPIC}-1").exists()
    zk.stop()


class _Znodes:
    """A ZooKeeper with only the data the rule reads (``get``)."""

    def __init__(self, data: dict[str, bytes]) -> None:
        self.data = data

    def get(self, path: str) -> tuple[bytes, None]:
        if path not in self.data:
            raise NoNodeError(path)
        return self.data[path], None


@pytest.mark.parametrize("current, recorded, fresh", [
    ([0, 1], None, 2),  # no removal yet: after the highest id the topic has
    ([0], b"2", 2),  # partition 1 removed: 1 stays used
    ([0, 4], b"3", 5),  # ids added since the removal: past them
    ([], b"x", 0),  # an unreadable record counts as none
])
def test_the_fresh_partition_id_is_past_every_id_the_topic_has_and_every_id_it_had(
        current: list[int], recorded: bytes | None, fresh: int) -> None:
    data = {} if recorded is None else {zkl.next_partition_path(TOPIC): recorded}
    assert zkl.fresh_partition_id(_Znodes(data), TOPIC, current) == fresh


@pytest.mark.parametrize("history", [
    "a", "r0 a", "a a r1 a", "r0 r1 a a", "a r2 r0 a", "r1 a r2 a",
])
def test_the_implementations_fresh_id_is_the_models_after_every_add_and_remove(history: str) -> None:
    """The same rule written twice -- the model reads its znodes (``ever_created``), the
    controller reads the current ids and ``next_partition`` (written by each removal) -- so
    the two are held together here: a topic of partitions 0 and 1, then each history of
    additions (``a``, at the fresh id) and removals (``rP``), compared after every step."""
    from model.actions.partitions import fresh_partition_id as model_fresh
    from model.state import NOT_CREATED, PartitionZnode, Zk

    created = PartitionZnode(0, 1, (0,), 0, (0,))
    slots = [created, created] + [NOT_CREATED] * 6
    current, data = {0, 1}, {}
    zk = Zk(0, 1, (0,), (0,), 0, tuple(slots))
    for op in history.split():
        impl_fresh = zkl.fresh_partition_id(_Znodes(data), TOPIC, current)
        assert impl_fresh == model_fresh(zk), (history, op)
        if op == "a":
            slots[impl_fresh] = created
            current.add(impl_fresh)
        else:
            p = int(op[1:])
            data[zkl.next_partition_path(TOPIC)] = str(impl_fresh).encode()  # the removal's multi
            slots[p] = created._replace(ar=(), isr=(), leader=-1)  # keeps its leader epoch
            current.discard(p)
        zk = zk._replace(partitions=tuple(slots))
    assert zkl.fresh_partition_id(_Znodes(data), TOPIC, current) == model_fresh(zk)
