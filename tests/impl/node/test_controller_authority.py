"""Only the controller ZooKeeper names may send control requests, on real processes.

Another broker's principal passes the authentication rule for control requests that name
*itself* as controller (``controller_id`` = its id), at the controller epoch anyone can read
from ZooKeeper.  A compromised broker could so make leaders (and get an acks=all write
acknowledged that the partition never had), or claim a controller epoch far above the real
one and have every broker refuse the real controller from then on.  Each test forges the
requests with a non-controller broker's credentials and shows they change nothing, and
that a replica fetch from a broker outside the partition's assignment is refused.
"""

from __future__ import annotations

from typing import Any

import pytest
from impl_testing import three_brokers_and_their_roles, trace_events, wait_until

from impl.node import zk as zkl
from impl.node.client import Admin
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode

pytestmark = pytest.mark.integration

TOPIC = "governed"


def _send(c: Any, broker: int, api: ApiKey, body: dict[str, Any],
          as_broker: int | None = None) -> tuple[int, dict[str, Any]]:
    """Send as ``broker-<as_broker>`` (its credentials), or as the operator."""
    auth = {} if as_broker is None else {"credentials": c.keyring.credentials(f"broker-{as_broker}")}
    conn = BlockingConnection(*c.endpoint(broker), timeout=5.0, **auth)
    try:
        error, _, resp = conn.send(api, body)
        return error, resp
    finally:
        conn.close()


def _fencing(c: Any, zk: Any, controller_id: int, controller_epoch: int) -> dict[str, int]:
    return {"controller_id": controller_id, "controller_epoch": controller_epoch,
            "max_broker_epoch": max(zk.exists(zkl.broker_path(b)).czxid for b in c.configs)}


def _epoch(zk: Any) -> int:
    return int(zk.get(zkl.CONTROLLER_EPOCH)[0].decode())


def _forged_leader_and_isr(c: Any, zk: Any, impostor: int, leader: int,
                           isr: list[int]) -> dict[str, Any]:
    """A LeaderAndISR from ``impostor`` naming ``leader`` at the next leader epoch, carrying
    the current controller epoch and the partition's current zk_version."""
    data, stat = zk.get(zkl.leader_and_isr_path(TOPIC, 0))
    st = zkl.LeaderAndIsr.from_json(data)
    return dict(_fencing(c, zk, impostor, _epoch(zk)), init=False, leaders={}, partitions=[{
        "topic": TOPIC, "partition": 0, "leader": leader, "leader_epoch": st.leader_epoch + 1,
        "isr": isr, "replicas": sorted(c.configs), "zk_version": stat.version,
        "topic_id": zk.exists(zkl.topic_path(TOPIC)).czxid}])


def _values(c: Any, broker: int) -> list[str]:
    """What a consumer reads from ``broker`` (up to the HW), or [] if it does not lead."""
    err, resp = _send(c, broker, ApiKey.FETCH, {"topic": TOPIC, "partition": 0, "fetch_offset": 0})
    if err != ErrorCode.NONE:
        return []
    return [bytes(v).decode() if isinstance(v, bytes) else str(v) for _, _, v in resp["records"]]


def _produce(c: Any, broker: int, value: str) -> int:
    err, _ = _send(c, broker, ApiKey.PRODUCE, {"topic": TOPIC, "partition": 0, "acks": -1,
                                               "values": [value.encode()]})
    return err


def _roles(c: Any) -> list[tuple[int, str]]:
    return [(e["node"], e["kind"]) for e in trace_events(c.data_dir)
            if e.get("topic") == TOPIC and e["kind"] in ("become_leader", "become_follower")]


def test_a_non_controller_cannot_make_itself_leader(make_cluster: Any) -> None:
    """(a) broker ``impostor`` is authenticated and not the controller: its LeaderAndISR
    naming itself leader, at the current controller epoch, is refused by every broker, and
    the partition's leader and ISR stay as the controller made them."""
    c, zk, ctrl, leader, impostor = three_brokers_and_their_roles(make_cluster)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [leader, impostor, ctrl]})
    wait_until(lambda: _produce(c, leader, "before") == ErrorCode.NONE, 10, "the first write")
    state = zk.get(zkl.leader_and_isr_path(TOPIC, 0))[0]
    roles = _roles(c)
    forged = _forged_leader_and_isr(c, zk, impostor, impostor, [impostor])
    for b in c.configs:
        err, resp = _send(c, b, ApiKey.LEADER_AND_ISR, forged, as_broker=impostor)
        assert err == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, (b, err, resp)
    assert zk.get(zkl.leader_and_isr_path(TOPIC, 0))[0] == state
    assert _roles(c) == roles  # nobody became leader or follower
    assert _values(c, leader) == ["before"]  # the leader still leads
    assert _values(c, impostor) == []  # and the impostor does not
    assert _produce(c, leader, "after") == ErrorCode.NONE
    zk.stop()


def test_a_non_controller_cannot_get_an_acks_all_write_acknowledged_and_lost(make_cluster: Any) -> None:
    """(b) the probe's sequence: the impostor makes itself leader with an ISR of itself,
    a producer's acks=all write to it is acknowledged at once, and the partition's real
    leader never has it.  Now the write is either refused or on the real leader."""
    c, zk, ctrl, leader, impostor = three_brokers_and_their_roles(make_cluster)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [leader, impostor, ctrl]})
    wait_until(lambda: _produce(c, leader, "before") == ErrorCode.NONE, 10, "the first write")
    _send(c, impostor, ApiKey.LEADER_AND_ISR,
          _forged_leader_and_isr(c, zk, impostor, impostor, [impostor]), as_broker=impostor)
    acked = _produce(c, impostor, "acked") == ErrorCode.NONE
    # the controller's leader, as ZooKeeper says: a consumer reads from it
    real = zkl.LeaderAndIsr.from_json(zk.get(zkl.leader_and_isr_path(TOPIC, 0))[0]).leader
    assert real == leader
    if acked:
        wait_until(lambda: "acked" in _values(c, real), 5, "the acknowledged write on the leader")
    assert _produce(c, leader, "after") == ErrorCode.NONE
    assert _values(c, leader)[-1] == "after"
    zk.stop()


def test_a_controller_epoch_far_above_the_real_one_locks_nobody_out(make_cluster: Any) -> None:
    """(c) an UpdateMetadata claiming a controller epoch 1,000 above the real one is refused
    by every broker and moves no broker's epoch; the real controller's next requests are
    taken, and so are its successor's after a failover."""
    c, zk, ctrl, impostor, _ = three_brokers_and_their_roles(make_cluster)
    epoch = _epoch(zk)
    forged = dict(_fencing(c, zk, impostor, epoch + 1000), partial=False, brokers={}, topics={})
    for b in c.configs:
        err, _ = _send(c, b, ApiKey.UPDATE_METADATA, forged, as_broker=impostor)
        assert err == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, b
        assert _send(c, b, ApiKey.METADATA, {})[1]["controller_epoch"] <= epoch, b

    def everyone_knows(topic: str, brokers: list[int]) -> bool:
        return all(topic in _send(c, b, ApiKey.METADATA, {})[1]["topics"] for b in brokers)

    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [impostor, ctrl]})
    wait_until(lambda: everyone_knows(TOPIC, list(c.configs)), 10, "the real controller's metadata")
    c.kill(ctrl)
    live = [b for b in c.configs if b != ctrl]
    wait_until(lambda: _epoch(zk) == epoch + 1, 15, "a new controller")
    wait_until(lambda: _produce(c, impostor, "after failover") == ErrorCode.NONE, 15,
               "the successor's LeaderAndISR (the partition failed over)")
    with Admin(",".join(f"{h}:{p}" for h, p in (c.endpoint(b) for b in live))) as admin:
        admin.create_topic("after", partitions=1, replication_factor=2)
    wait_until(lambda: everyone_knows("after", live), 10, "the successor's metadata")
    zk.stop()


def test_a_replica_fetch_from_a_broker_outside_the_assignment_is_refused(make_cluster: Any) -> None:
    """(d) broker ``outsider`` is not in the partition's AR: its replica fetch, as itself,
    gets no records and counts nothing; the assigned follower's fetches go on."""
    c, zk, ctrl, leader, outsider = three_brokers_and_their_roles(make_cluster)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [leader, ctrl]})
    wait_until(lambda: _produce(c, leader, "kept") == ErrorCode.NONE, 10, "the first write")
    fetch = {"replica_id": outsider, "max_wait_ms": 0, "partitions": [{
        "topic": TOPIC, "partition": 0, "fetch_offset": 0, "hw": -1, "leader_epoch": -1}]}
    err, resp = _send(c, leader, ApiKey.FETCH, fetch, as_broker=outsider)
    assert err == ErrorCode.NONE
    [item] = resp["partitions"]
    assert item["error"] == ErrorCode.NOT_LEADER and not item.get("records"), item
    assert not [e for e in trace_events(c.data_dir) if e["kind"] == "handle_fetch"
                and e["params"]["follower"] == outsider]
    assert _produce(c, leader, "still") == ErrorCode.NONE  # the assigned follower fetches
    assert _values(c, leader) == ["kept", "still"]
    zk.stop()
