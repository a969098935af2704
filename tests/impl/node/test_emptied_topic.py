"""Integration: a topic's last partition removed, as the model lets an administrator do.

Seed 000 H removes any partitions of a topic; the model (``remove_partitions``) takes the
last one too: the topic stays, with no partitions, its ids used -- a partition added later
takes a fresh id (``fresh_partition_id``), never the removed one.  Here on real processes:
the removal with one replica's broker down, the topic in every broker's metadata with no
partitions, a controller failover that reads it so, the broker that was down deleting its
copy when it starts (seed 000 E 4), a partition added under id 1, and the topic deleted.
"""

from __future__ import annotations

from typing import Any

import pytest
from impl_testing import three_brokers_and_their_roles, trace_events, wait_until

from impl.node import zk as zkl
from impl.node.client import Admin, Consumer, Producer
from impl.node.wire import ErrorCode, RpcError

pytestmark = pytest.mark.integration

TOPIC = "emptied"


def _assignment(zk: Any) -> dict[int, list[int]]:
    data, _ = zk.get(zkl.topic_path(TOPIC))
    return {int(p): r for p, r in zkl.decode(data)["partitions"].items()}


def _logs(c: Any, broker: int) -> set[str]:
    d = c.data_dir / f"broker-{broker}" / "logs"
    return {x.name for x in d.iterdir() if x.name.startswith(f"{TOPIC}-")} if d.exists() else set()


def _topic_in_metadata(c: Any, broker: int) -> dict[str, Any] | None:
    meta = c.metadata(broker) or {}
    return meta.get("topics", {}).get(TOPIC)


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_the_last_partition_removed_leaves_the_topic_with_none_and_an_added_one_takes_a_fresh_id(
        make_cluster: Any, capsys: Any, monkeypatch: Any) -> None:
    from impl.harness.cli import main as cli

    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", cli.CLUSTER_COMMAND_MODULES)
    c, zk, ctrl, stale, other = three_brokers_and_their_roles(make_cluster)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [stale, other]})
        wait_until(lambda: len(zkl.LeaderAndIsr.from_json(
            zk.get(zkl.leader_and_isr_path(TOPIC, 0))[0]).isr) == 2, 15, "partition 0's full ISR")
        with Producer(c.bootstrap, acks=-1) as producer:
            producer.send(TOPIC, "removed", partition=0)  # on both replicas
        c.kill(stale)  # it misses the removal's StopReplica(delete)

        admin.remove_partitions(TOPIC, [0])
        assert _assignment(zk) == {}  # the topic stays, with no partitions
        assert zk.exists(zkl.partition_path(TOPIC, 0)) is None
        assert zk.get(zkl.next_partition_path(TOPIC))[0] == b"1"  # id 0 stays used
        assert not zk.get_children(zkl.PARTITIONS_REMOVE)
        wait_until(lambda: not _logs(c, other), 10, "the live replica's log deleted")
        assert f"{TOPIC}-0" in _logs(c, stale)  # it was down: nobody told it
        for b in (ctrl, other):
            wait_until(lambda b=b: _topic_in_metadata(c, b) == {}, 10,
                       f"broker {b}'s metadata: the topic with no partitions")
        assert admin.describe(TOPIC) == {TOPIC: {}}
        capsys.readouterr()
        host, port = c.endpoint(other)
        assert cli.main(["topics", "describe", TOPIC, "--bootstrap", f"{host}:{port}"]) == 0
        assert capsys.readouterr().out.splitlines() == [f"topic {TOPIC}  (no partitions)"]
        with pytest.raises(RpcError) as again:  # an id it no longer has
            admin.remove_partitions(TOPIC, [0])
        assert again.value.code == ErrorCode.INVALID_PARTITIONS
        with Producer(c.bootstrap, acks=1, retries=0) as producer, \
                pytest.raises(RpcError) as refused:
            producer.send(TOPIC, "nowhere")
        assert refused.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        # a failover: the new controller reads the topic with no partitions from ZooKeeper,
        # and the broker that was down, started again, deletes its copy (seed 000 E 4)
        c.kill(ctrl)
        c.restart(stale)
        c.wait_ready(30, brokers=[stale, other])
        assert f"{TOPIC}-0" not in _logs(c, stale)
        wait_until(lambda: _topic_in_metadata(c, stale) == {}, 10,
                   "the new controller's metadata: the topic with no partitions")
        assert zkl.decode(zk.get(zkl.CONTROLLER)[0])["brokerid"] in (stale, other)

        # an added partition takes a fresh id: 1, not the removed 0
        admin.add_partitions(TOPIC, 1, assignments=[[stale, other]])
        assert _assignment(zk) == {1: [stale, other]}
        with Producer(c.bootstrap, acks=-1) as producer:
            assert producer.send(TOPIC, "added")["partition"] == 1
        with Consumer(c.bootstrap) as consumer:
            values = [v for _p, _o, v in consumer.consume(TOPIC, True, 1.0)]
        assert values == [b"added"]  # nothing of the removed partition is served
        assert _logs(c, stale) == _logs(c, other) == {f"{TOPIC}-1"}

        # the topic, emptied once, is deleted as any other
        admin.delete_topic(TOPIC)
    assert zk.exists(zkl.topic_path(TOPIC)) is None
    wait_until(lambda: not _logs(c, stale) and not _logs(c, other), 10, "every log deleted")
    assert all(_topic_in_metadata(c, b) is None for b in (stale, other))
    removed = [e for e in trace_events(c.data_dir) if e["kind"] == "partitions_removed"]
    assert [e["params"]["partitions"] for e in removed] == [[0]]
    zk.stop()
