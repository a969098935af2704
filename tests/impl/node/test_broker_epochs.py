"""Seed 003 against a real cluster: broker epochs, the max broker epoch in control requests,
and one cached UpdateMetadata payload.

The e0 -> e1 -> e2 story: broker N registers (e0); the controller reads the brokers (e1,
so the max broker epoch it knows is >= e0); N restarts and registers again (e2 > e1).  A
control request the controller computed at e1 but that arrives after e2 was meant for the
previous incarnation, and N must refuse it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from impl_testing import trace_events, wait_until

from impl.harness.cluster import LocalCluster
from impl.node import zk as zkl
from impl.node.client import Admin, Producer
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode

pytestmark = pytest.mark.integration


def broker_epochs(zk: Any) -> dict[int, int]:
    """Each live broker's epoch: the czxid of its ``/brokers/ids/N`` znode."""
    out = {}
    for child in zk.get_children(zkl.BROKER_IDS):
        stat = zk.exists(zkl.broker_path(int(child)))
        if stat is not None:
            out[int(child)] = stat.czxid
    return out


def controller(zk: Any) -> tuple[int, int]:
    data, _ = zk.get(zkl.CONTROLLER)
    epoch, _ = zk.get(zkl.CONTROLLER_EPOCH)
    return int(json.loads(data)["brokerid"]), int(epoch.decode())


def send(c: LocalCluster, broker: int, api: ApiKey, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    conn = BlockingConnection(*c.endpoint(broker), timeout=5.0)
    try:
        error, _, resp = conn.send(api, body)
        return error, resp
    finally:
        conn.close()


def update_metadata(ctrl: int, epoch: int, **fencing: int) -> dict[str, Any]:
    return {"controller_id": ctrl, "controller_epoch": epoch, "brokers": {}, "topics": {}, **fencing}


def led_by_a_non_controller(c: LocalCluster, zk: Any, topic: str) -> tuple[int, int, int]:
    """Create ``topic`` (one partition) led by a broker that is not the controller; return
    (controller id, controller epoch, that broker)."""
    ctrl, epoch = controller(zk)
    victim = next(b for b in sorted(c.configs) if b != ctrl)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, assignment={0: [victim, *[b for b in c.configs if b != victim]]})
    return ctrl, epoch, victim


def bounce(c: LocalCluster, zk: Any, broker: int, above: int) -> int:
    """kill -9 and restart ``broker``; its new epoch (which must exceed ``above``)."""
    c.kill(broker)
    c.restart(broker)
    wait_until(lambda: broker_epochs(zk).get(broker, 0) > above, 30, "the broker to register again")
    c.wait_ready()
    return broker_epochs(zk)[broker]


def test_a_restarted_broker_refuses_control_requests_meant_for_its_previous_incarnation(
        make_cluster: Any) -> None:
    c = make_cluster(3)
    zk = c.zk_client()
    ctrl, epoch, victim = led_by_a_non_controller(c, zk, "epochs")
    e0 = broker_epochs(zk)[victim]
    e1 = max(broker_epochs(zk).values())  # what the controller knew: e0 <= e1
    assert e0 <= e1
    e2 = bounce(c, zk, victim, above=e1)  # zxids only grow: newer than anything read at e1

    # message 5 of the seed: computed at e1, delivered after e2 -- refused, in both formats
    err, _ = send(c, victim, ApiKey.UPDATE_METADATA, update_metadata(ctrl, epoch, max_broker_epoch=e1))
    assert err == ErrorCode.STALE_BROKER_EPOCH
    err, _ = send(c, victim, ApiKey.UPDATE_METADATA, update_metadata(ctrl, epoch, broker_epoch=e0))
    assert err == ErrorCode.STALE_BROKER_EPOCH
    err, _ = send(c, victim, ApiKey.STOP_REPLICA, {
        "controller_id": ctrl, "controller_epoch": epoch, "max_broker_epoch": e1,
        "delete": True, "partitions": [["epochs", 0]]})
    assert err == ErrorCode.STALE_BROKER_EPOCH
    assert (c.data_dir / f"broker-{victim}" / "logs" / "epochs-0").exists()  # not deleted
    # a request computed after the controller read the new registration is acted on
    err, _ = send(c, victim, ApiKey.UPDATE_METADATA, update_metadata(ctrl, epoch, max_broker_epoch=e2))
    assert err == ErrorCode.NONE

    rejected = [e for e in trace_events(c.data_dir) if e["kind"] == "request_rejected"
                and e["node"] == victim and e["params"]["reason"] == "stale_broker_epoch"]
    # ours, and possibly one the controller itself computed before it read e2 -- the very
    # race seed 003 is about -- all refused for the same reason
    assert len(rejected) >= 3
    assert {e0, e1} <= {e["params"]["max_broker_epoch"] for e in rejected}
    assert all(e["params"]["broker_epoch"] == e2 and e["params"]["max_broker_epoch"] < e2 for e in rejected)

    # the real controller learned e2: its requests reach the new incarnation, which
    # follows the partition again and rejoins the ISR
    def rejoined() -> bool:
        data, _ = zk.get(zkl.leader_and_isr_path("epochs", 0))
        return victim in zkl.LeaderAndIsr.from_json(data).isr
    # through the controller's broker: the victim's metadata is the empty UpdateMetadata this
    # test sent it, and a client bootstrapped at the victim first would find no topic at all
    host, port = c.endpoint(ctrl)
    with Producer(f"{host}:{port}", acks=-1) as producer:
        producer.send("epochs", "after-restart")
    wait_until(rejoined, 30, "the restarted broker to rejoin the ISR")
    # KIP-903: its new leader's answers name the incarnation that asked
    answered = [e["params"].get("follower_broker_epoch") for e in trace_events(c.data_dir)
                if e["kind"] == "handle_fetch" and e["params"]["follower"] == victim]
    assert e2 in answered and set(answered) <= {e0, e2}
    zk.stop()


def test_controller_sends_every_broker_the_same_max_broker_epoch(make_cluster: Any) -> None:
    """Control requests carry max(live broker epochs), one value for the whole cluster."""
    c = make_cluster(3)
    zk = c.zk_client()
    epochs = broker_epochs(zk)
    ctrl, epoch = controller(zk)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("same", partitions=3, replication_factor=3)

    def told_everyone() -> bool:
        return {e["node"] for e in trace_events(c.data_dir) if e["kind"] == "update_metadata"
                and "same" in e["params"]["topics"]} == set(c.configs)

    wait_until(told_everyone, 10, "every broker to apply the new topic's UpdateMetadata")
    # every broker accepted the controller's requests: none was refused as stale
    assert not [e for e in trace_events(c.data_dir) if e["kind"] == "request_rejected"]
    # and a request with a max below some broker's own epoch is refused by that broker only
    youngest = max(epochs, key=lambda b: epochs[b])
    below = epochs[youngest] - 1
    for b in c.configs:
        err, _ = send(c, b, ApiKey.UPDATE_METADATA, update_metadata(ctrl, epoch, max_broker_epoch=below))
        assert (err == ErrorCode.STALE_BROKER_EPOCH) == (epochs[b] > below), b
    zk.stop()


def test_a_newer_controller_epoch_tells_a_broker_a_new_controller_exists(make_cluster: Any) -> None:
    """Seed 002: a control request from a newer epoch tells the broker a new controller
    exists -- once ZooKeeper confirms that controller at that epoch (docs/security.md): a
    made-up one is refused and moves nothing.  Afterwards the older epoch's requests are
    refused."""
    c = make_cluster(2)
    zk = c.zk_client()
    ctrl, epoch = controller(zk)
    target = 1 - ctrl
    mbe = max(broker_epochs(zk).values())
    err, _ = send(c, target, ApiKey.UPDATE_METADATA, update_metadata(7, epoch + 3, max_broker_epoch=mbe))
    assert err == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert send(c, target, ApiKey.METADATA, {})[1]["controller_epoch"] == epoch
    c.kill(ctrl)  # the target is elected, at epoch + 1, and tells itself

    def knows_the_new_epoch() -> bool:
        err, meta = send(c, target, ApiKey.METADATA, {})
        return err == ErrorCode.NONE and meta["controller_epoch"] == epoch + 1

    wait_until(knows_the_new_epoch, 15, "the new controller's UpdateMetadata")
    mbe = max(broker_epochs(zk).values())
    err, _ = send(c, target, ApiKey.UPDATE_METADATA, update_metadata(ctrl, epoch, max_broker_epoch=mbe))
    assert err == ErrorCode.STALE_CONTROLLER_EPOCH
    zk.stop()


def test_controller_fences_a_controlled_shutdown_request_from_an_older_incarnation(
        make_cluster: Any) -> None:
    """KIP-380: the controller keeps each broker's epoch and refuses a ControlledShutdown
    that names an epoch other than the broker's current registration -- a delayed request
    of a previous incarnation must not take leadership away from the restarted broker."""
    c = make_cluster(3)
    zk = c.zk_client()
    ctrl, _, victim = led_by_a_non_controller(c, zk, "csd")
    old = broker_epochs(zk)[victim]
    bounce(c, zk, victim, above=old)

    def leader() -> int:
        data, _ = zk.get(zkl.leader_and_isr_path("csd", 0))
        return zkl.LeaderAndIsr.from_json(data).leader

    def in_isr() -> bool:
        data, _ = zk.get(zkl.leader_and_isr_path("csd", 0))
        return victim in zkl.LeaderAndIsr.from_json(data).isr

    wait_until(in_isr, 30, "the restarted broker to rejoin the ISR")
    with Admin(c.bootstrap) as admin:
        admin.elect_preferred("csd", 0)
    wait_until(lambda: leader() == victim, 20, "the restarted broker to lead again")

    err, _ = send(c, ctrl, ApiKey.CONTROLLED_SHUTDOWN, {"broker_id": victim, "broker_epoch": old})
    assert err == ErrorCode.STALE_BROKER_EPOCH
    assert leader() == victim  # the stale request moved nothing
    err, resp = send(c, ctrl, ApiKey.CONTROLLED_SHUTDOWN,
                     {"broker_id": victim, "broker_epoch": broker_epochs(zk)[victim]})
    assert err == ErrorCode.NONE and resp["remaining_leaderships"] == []
    assert leader() != victim  # the current incarnation's request is honoured
    zk.stop()


def test_brokers_merge_partial_update_metadata_and_keep_every_topic(make_cluster: Any) -> None:
    """Topic creations send UpdateMetadata for the new partitions only; every broker's
    metadata still lists every topic with its leader."""
    c = make_cluster(3)
    with Admin(c.bootstrap) as admin:
        for name in ("m1", "m2", "m3"):
            admin.create_topic(name, partitions=2, replication_factor=2)

    def complete(b: int) -> bool:
        err, meta = send(c, b, ApiKey.METADATA, {})
        topics = meta.get("topics", {})
        return err == ErrorCode.NONE and all(
            len(topics.get(t, {})) == 2 and all(p["leader"] >= 0 for p in topics[t].values())
            for t in ("m1", "m2", "m3"))

    for b in c.configs:
        wait_until(lambda b=b: complete(b), 10, f"broker {b} to know every topic")
