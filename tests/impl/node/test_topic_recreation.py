"""Integration: a topic deleted while one of its replicas' brokers is down, then re-created
under the same name with that broker in the assignment, keeps every acknowledged write.

This is the design's own question 5 (repeated topic deletion and creation).  Without topic
identity the restarted broker keeps the log of the deleted incarnation (the topic is
assigned to it again), its leader epochs start over at 0 exactly as the new incarnation's
do, so epoch-based truncation finds nothing to cut: it rejoins the ISR holding the *old*
record at offset 0, and when it becomes leader the acknowledged record of the new
incarnation is gone.  Kafka answered this class of bug with topic ids (KIP-516): the id is
written in the topic's znode, carried in LeaderAndISR and StopReplica, and stored beside the
log; a broker deletes a local log whose id differs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from impl_testing import three_brokers_and_their_roles, trace_events, wait_until

from impl.node import zk as zkl
from impl.node.client import Admin, Consumer, Producer
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode

pytestmark = pytest.mark.integration

TOPIC = "orders"


def _state(zk: Any, p: int = 0) -> zkl.LeaderAndIsr:
    data, _ = zk.get(zkl.leader_and_isr_path(TOPIC, p))
    return zkl.LeaderAndIsr.from_json(data)


def _read_all(bootstrap: str) -> list[bytes]:
    with Consumer(bootstrap) as consumer:
        return [v for _p, _o, v in consumer.consume(TOPIC, True, 1.0)]


def test_an_acknowledged_write_survives_recreation_of_its_topic_over_a_broker_that_was_down(
        make_cluster: Any) -> None:
    c, zk, ctrl, stale, leader = three_brokers_and_their_roles(make_cluster)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [leader, stale, ctrl]})
        with Producer(c.bootstrap, acks=-1) as producer:
            producer.send(TOPIC, "old", partition=0)  # on every replica, stale's included

        c.kill(stale)
        wait_until(lambda: stale not in _state(zk).isr, 15, f"broker {stale} out of the ISR")
        admin.delete_topic(TOPIC)  # StopReplica(delete) reaches the live replicas only
        # the same name again, the stale broker preferred after the leader
        admin.create_topic(TOPIC, assignment={0: [leader, stale, ctrl]})
        with Producer(c.bootstrap, acks=-1) as producer:
            producer.send(TOPIC, "new", partition=0)  # acknowledged by the live ISR

        c.restart(stale)
        c.wait_ready(30)
        wait_until(lambda: stale in _state(zk).isr, 20, f"broker {stale} back in the ISR")
        time.sleep(0.5)  # a fetch round after rejoining: whatever it holds is what it serves
        c.kill(leader)
        wait_until(lambda: _state(zk).leader not in (leader, -1), 15, "a new leader")
        assert _state(zk).leader == stale  # first live ISR member in assignment order

    assert _read_all(c.bootstrap) == [b"new"]
    # the restarted broker deleted the deleted incarnation's log, and said why
    dropped = [e for e in trace_events(c.data_dir) if e["kind"] == "stop_replica"
               and e["node"] == stale and e["params"].get("reason") == "stale_topic_id"]
    assert [(e["topic"], e["partition"], e["params"]["delete"]) for e in dropped] == \
        [(TOPIC, 0, True)]
    zk.stop()


def test_requests_of_an_older_incarnation_of_the_topic_are_refused_and_delete_nothing(
        make_cluster: Any) -> None:
    c = make_cluster(2)
    zk = c.zk_client()
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1]})
    topic_id = zk.exists(zkl.topic_path(TOPIC)).czxid  # the incarnation: its znode's czxid
    ctrl = int(zkl.decode(zk.get(zkl.CONTROLLER)[0])["brokerid"])
    epoch = int(zk.get(zkl.CONTROLLER_EPOCH)[0].decode())
    target = 1 - ctrl
    log_dir = c.data_dir / f"broker-{target}" / "logs" / f"{TOPIC}-0"
    wait_until(lambda: (log_dir / "partition.metadata").exists(), 10, "the id beside the log")
    assert (log_dir / "partition.metadata").read_text() == f"topic_id: {topic_id}\n"

    mbe = max(zk.exists(zkl.broker_path(b)).czxid for b in c.configs)  # seed 003: mandatory

    def send(api: ApiKey, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        conn = BlockingConnection(*c.endpoint(target), timeout=5)
        try:
            error, _, resp = conn.send(api, dict(body, controller_id=ctrl, controller_epoch=epoch,
                                                 max_broker_epoch=mbe))
            return error, resp
        finally:
            conn.close()

    older = {"topic": TOPIC, "partition": 0, "leader": target, "leader_epoch": 99,
             "isr": [target], "replicas": [0, 1], "zk_version": 99, "topic_id": topic_id - 1}
    err, resp = send(ApiKey.LEADER_AND_ISR, {"init": False, "partitions": [older], "leaders": {}})
    assert err == ErrorCode.NONE
    assert resp["partitions"] == [[TOPIC, 0, int(ErrorCode.INCONSISTENT_TOPIC_ID)]]
    rejects = [e for e in trace_events(c.data_dir) if e["kind"] == "reject_leader_and_isr"
               and e["node"] == target]
    assert [(e["params"]["reason"], e["params"]["leader_epoch"]) for e in rejects] == \
        [("stale_topic_id", 99)]
    # an older incarnation's StopReplica(delete) leaves the current log alone
    err, _ = send(ApiKey.STOP_REPLICA, {"delete": True, "partitions": [[TOPIC, 0, topic_id - 1]]})
    assert err == ErrorCode.NONE
    assert (log_dir / "partition.metadata").exists()
    assert _state(zk).leader_epoch == 0  # nothing moved
    # the current incarnation's does delete it
    err, _ = send(ApiKey.STOP_REPLICA, {"delete": True, "partitions": [[TOPIC, 0, topic_id]]})
    assert err == ErrorCode.NONE
    assert not log_dir.exists()
    zk.stop()
