"""Fencing without gaps, on real processes (and the topic-id fetch fence, for a re-created topic).

Each test sends a broker what a stale or malformed sender would, and shows that it changes
nothing: a replica fetch for another incarnation of the topic, a LeaderAndISR repeating the
current leader epoch with another decision, a malformed control request carrying a newer
controller epoch, a control request without a broker epoch; and that an abnormal
``/controller`` or ``/controller_epoch`` does not stop the election.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from impl_testing import trace_events, wait_until

from impl.harness.cluster import LocalCluster
from impl.node import zk as zkl
from impl.node.client import Admin, Producer
from impl.node.wire import (
    API_VERSIONS,
    ApiKey,
    BlockingConnection,
    ErrorCode,
    decode_response,
    encode_request,
)

pytestmark = pytest.mark.integration

TOPIC = "fenced"


def _send(c: LocalCluster, broker: int, api: ApiKey, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    conn = BlockingConnection(*c.endpoint(broker), timeout=5.0)
    try:
        error, _, resp = conn.send(api, body)
        return error, resp
    finally:
        conn.close()


def _send_cut(c: LocalCluster, broker: int, api: ApiKey, body: dict[str, Any]) -> int:
    """Send ``body``'s frame with its last byte cut off (its Kafka body no longer parses);
    the error code answered."""
    conn = BlockingConnection(*c.endpoint(broker), timeout=5.0)
    try:
        frame = encode_request(api, API_VERSIONS[api], 1, 0, body)
        conn.sock.sendall(struct.pack(">I", len(frame) - 5) + frame[4:-1])
        length = struct.unpack(">I", conn.sock.recv(4))[0]
        payload = b""
        while len(payload) < length:
            payload += conn.sock.recv(length - len(payload))
        return decode_response(payload, api)[2]
    finally:
        conn.close()


def _controller(zk: Any) -> tuple[int | None, int | None]:
    """(holder, epoch) as ZooKeeper says; None where the data is not a valid one."""
    try:
        holder = int(json.loads(zk.get(zkl.CONTROLLER)[0])["brokerid"])
        epoch = int(zk.get(zkl.CONTROLLER_EPOCH)[0].decode())
    except Exception:  # noqa: BLE001 - absent or abnormal: no valid controller yet
        return None, None
    return holder, epoch


def _max_broker_epoch(zk: Any, c: LocalCluster) -> int:
    return max(zk.exists(zkl.broker_path(b)).czxid for b in c.configs)


def _state(zk: Any) -> tuple[zkl.LeaderAndIsr, int]:
    data, stat = zk.get(zkl.leader_and_isr_path(TOPIC, 0))
    return zkl.LeaderAndIsr.from_json(data), stat.version


def _hw(c: LocalCluster, leader: int) -> int:
    err, resp = _send(c, leader, ApiKey.FETCH, {"replica_id": -1, "topic": TOPIC, "partition": 0,
                                                "fetch_offset": 0})
    assert err == ErrorCode.NONE
    return int(resp["hw"])


def test_a_replica_fetch_naming_another_incarnation_is_refused_and_its_offset_not_counted(
        make_cluster: Any) -> None:
    """The re-created topic's epochs start again, so a fetch sent to the deleted incarnation
    carries the very epoch the new leader holds; counting its offset would commit a record
    the real follower does not have."""
    c = make_cluster(2, replica_lag_time_ms=20000)  # the paused follower stays in the ISR
    zk = c.zk_client()
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1]})
    leader, follower = 0, 1
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send(TOPIC, "both", partition=0)
    wait_until(lambda: _hw(c, leader) == 1, 10, "the first record committed")
    topic_id = zk.exists(zkl.topic_path(TOPIC)).czxid
    registered = zk.exists(zkl.broker_path(follower)).czxid  # the follower's broker epoch
    st, _ = _state(zk)
    c.pause(follower, wait_for_expiry=False)
    try:
        err, _ = _send(c, leader, ApiKey.PRODUCE, {"topic": TOPIC, "partition": 0, "acks": 1,
                                                   "values": [b"leader-only"]})
        assert err == ErrorCode.NONE

        def fetch(tid: int) -> dict[str, Any]:
            err, resp = _send(c, leader, ApiKey.FETCH, {
                "replica_id": follower, "max_wait_ms": 0, "partitions": [{
                    "topic": TOPIC, "partition": 0, "fetch_offset": 2, "hw": 1,
                    "leader_epoch": st.leader_epoch, "topic_id": tid}]})
            assert err == ErrorCode.NONE
            [item] = resp["partitions"]
            return item

        stale = fetch(topic_id - 1)  # an older incarnation's fetch, in the same leader epoch
        assert stale["error"] == ErrorCode.INCONSISTENT_TOPIC_ID
        assert _hw(c, leader) == 1  # not counted: the record is on the leader alone
        current = fetch(topic_id)  # the same fetch for this incarnation is counted
        assert current["error"] == ErrorCode.NONE and current["topic_id"] == topic_id
        assert _hw(c, leader) == 2
    finally:
        c.resume(follower)
    # KIP-903: the real follower's fetches name its incarnation, and the leader records it
    # in its handle_fetch; this stand-in's fetch names none and is answered all the same
    named = {e["params"].get("follower_broker_epoch") for e in trace_events(c.data_dir)
             if e["kind"] == "handle_fetch" and e["node"] == leader and e["params"]["follower"] == follower}
    assert {registered, None} <= named
    assert all(epoch is None or epoch >= registered for epoch in named)  # a re-registration's is later
    zk.stop()


def test_a_leader_and_isr_in_the_current_epoch_with_another_decision_is_refused(make_cluster: Any) -> None:
    """Two brokers must never lead one partition in one epoch: a LeaderAndISR that repeats
    the follower's epoch but names it leader (or another ISR under the same zk_version) is
    refused, and the follower keeps following."""
    c = make_cluster(2, min_insync_replicas=2)
    zk = c.zk_client()
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1]})
    leader, follower = 0, 1
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send(TOPIC, "before", partition=0)
    st, version = _state(zk)
    holder, epoch = _controller(zk)
    base = {"controller_id": holder, "controller_epoch": epoch,
            "max_broker_epoch": _max_broker_epoch(zk, c), "init": False, "leaders": {}}
    entry = {"topic": TOPIC, "partition": 0, "leader_epoch": st.leader_epoch, "replicas": [0, 1],
             "zk_version": version, "topic_id": zk.exists(zkl.topic_path(TOPIC)).czxid}
    for forged in ({"leader": follower, "isr": [0, 1]}, {"leader": leader, "isr": [follower]}):
        err, resp = _send(c, follower, ApiKey.LEADER_AND_ISR,
                          dict(base, partitions=[dict(entry, **forged)]))
        assert err == ErrorCode.NONE
        assert resp["partitions"] == [[TOPIC, 0, int(ErrorCode.FENCED_LEADER_EPOCH)]], forged
    events = [e for e in trace_events(c.data_dir) if e["node"] == follower and e.get("topic") == TOPIC]
    assert [e["params"]["reason"] for e in events if e["kind"] == "reject_leader_and_isr"] == \
        ["stale_leader_epoch"] * 2
    assert not [e for e in events if e["kind"] == "become_leader"]
    # still following: an acks=all write (min ISR 2) needs its fetch
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send(TOPIC, "after", partition=0)
    assert _state(zk)[0].leader_epoch == st.leader_epoch
    zk.stop()


def test_a_malformed_control_request_raises_no_epoch_and_the_broker_epoch_is_mandatory(
        make_cluster: Any) -> None:
    """A malformed UpdateMetadata once raised the broker's controller epoch before it was
    read, and the broker refused the real controller forever after."""
    c = make_cluster(2)
    zk = c.zk_client()
    holder, epoch = _controller(zk)
    assert holder is not None and epoch is not None
    target = 1 - holder
    mbe = _max_broker_epoch(zk, c)
    newer = {"controller_id": 7, "controller_epoch": epoch + 5, "max_broker_epoch": mbe}
    state = {"topic": TOPIC, "partition": 0, "leader": 0, "leader_epoch": 99, "isr": [0],
             "replicas": [0, 1], "zk_version": 99}
    for api, body in ((ApiKey.UPDATE_METADATA, {"brokers": {"1": ["h", 1]}, "topics": {}}),
                      (ApiKey.LEADER_AND_ISR, {"partitions": [state], "leaders": {}}),
                      (ApiKey.STOP_REPLICA, {"delete": True, "partitions": [[TOPIC, 0]]})):
        err = _send_cut(c, target, api, dict(newer, **body))
        assert err == ErrorCode.INVALID_REQUEST, (api, body)
    # a control request must carry a broker epoch, and -1 is older than any registration
    current = {"controller_id": holder, "controller_epoch": epoch, "brokers": {}, "topics": {},
               "partial": True}
    err, _ = _send(c, target, ApiKey.UPDATE_METADATA, current)
    assert err == ErrorCode.INVALID_REQUEST
    for field in ("max_broker_epoch", "broker_epoch"):
        err, _ = _send(c, target, ApiKey.UPDATE_METADATA, dict(current, **{field: -1}))
        assert err == ErrorCode.STALE_BROKER_EPOCH
    # the broker still obeys the real controller: a new topic reaches its metadata
    err, meta = _send(c, target, ApiKey.METADATA, {})
    assert meta["controller_epoch"] == epoch
    with Admin(c.bootstrap) as admin:
        admin.create_topic("after", partitions=1, replication_factor=2)

    def knows_after() -> bool:
        err, meta = _send(c, target, ApiKey.METADATA, {})
        return err == ErrorCode.NONE and "after" in meta["topics"]

    wait_until(knows_after, 10, "the real controller's UpdateMetadata to be taken")
    assert not [e for e in trace_events(c.data_dir) if e["kind"] == "request_rejected"
                and e["node"] == target and e["params"]["controller_epoch"] == epoch
                and e["params"]["reason"] == "stale_controller_epoch"]
    zk.stop()


def test_an_abnormal_controller_znode_or_epoch_reruns_the_election(make_cluster: Any) -> None:
    """Seed 002: "if the data of this node is abnormal, then it will try to create a
    /controller node".  Overwritten ``/controller`` data once left the cluster without a
    controller, and a non-numeric ``/controller_epoch`` stopped elections for good."""
    c = make_cluster(3)
    zk = c.zk_client()
    holder, epoch = _controller(zk)
    assert holder is not None and epoch is not None
    zk.set(zkl.CONTROLLER, b"not a controller")
    wait_until(lambda: (_controller(zk)[1] or 0) > epoch, 15, "a controller elected again")
    holder2, epoch2 = _controller(zk)
    assert holder2 is not None and epoch2 is not None

    zk.set(zkl.CONTROLLER_EPOCH, b"garbage")
    c.kill(holder2)  # the next election must get past the unreadable epoch
    wait_until(lambda: _controller(zk)[0] not in (None, holder2), 15, "another controller")
    holder3, epoch3 = _controller(zk)
    assert epoch3 is not None and epoch3 > epoch2
    # and it acts as controller: a topic on the two live brokers takes acks=all writes
    live = sorted(b for b in c.configs if b != holder2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: live})
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send(TOPIC, "elected", partition=0)
    elects = {(e["node"], e["params"]["controller_epoch"]) for e in trace_events(c.data_dir)
              if e["kind"] == "controller_elect"}
    assert (holder3, epoch3) in elects and max(epoch for _, epoch in elects) == epoch3
    assert holder3 in live
    zk.stop()
