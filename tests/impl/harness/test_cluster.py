"""Integration: real ZooKeeper, real broker processes, real signals.

Each test is named for the behaviour of seed 000 / seed 002 it demonstrates.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from typing import Any

import pytest
from impl_testing import trace_events, wait_until

from impl.harness.cluster import LocalCluster
from impl.node import zk as zkl
from impl.node.client import Admin, Consumer, Producer
from impl.node.wire import (
    API_VERSIONS,
    ApiKey,
    BlockingConnection,
    ErrorCode,
    decode_response,
    encode_request,
)
from traces.schema import validate

pytestmark = pytest.mark.integration


# -- helpers ----------------------------------------------------------------------------------
def controller_of(zk: Any) -> tuple[int, int]:
    """(controller broker id, /controller_epoch) as ZooKeeper says."""
    data, _ = zk.get(zkl.CONTROLLER)
    epoch, _ = zk.get(zkl.CONTROLLER_EPOCH)
    return int(json.loads(data)["brokerid"]), int(epoch.decode())


def state_of(zk: Any, topic: str, p: int) -> tuple[zkl.LeaderAndIsr, int]:
    data, stat = zk.get(zkl.leader_and_isr_path(topic, p))
    return zkl.LeaderAndIsr.from_json(data), stat.version


def local_partitions(c: LocalCluster, broker: int) -> set[str]:
    d = c.data_dir / f"broker-{broker}" / "logs"
    return {x.name for x in d.iterdir()} if d.exists() else set()


def request(c: LocalCluster, broker: int, api: ApiKey, body: dict[str, Any],
            timeout: float = 5.0) -> tuple[int, dict[str, Any]]:
    conn = BlockingConnection(*c.endpoint(broker), timeout=timeout)
    try:
        error, _, resp = conn.send(api, body)
        return error, resp
    finally:
        conn.close()


def read_all(c: LocalCluster, topic: str, idle: float = 1.0) -> list[bytes]:
    with Consumer(c.bootstrap) as consumer:
        return [v for _p, _o, v in consumer.consume(topic, True, idle)]


def assert_traces_valid(c: LocalCluster) -> list[dict[str, Any]]:
    """Every event validates against traces/SCHEMA.md; seq and clock grow per node."""
    events = trace_events(c.data_dir)
    assert events
    last: dict[int, tuple[int, int]] = {}
    for e in events:
        assert validate(e) is None, (validate(e), e)
        assert e["run"] == c.run_id
        if e["node"] in last:
            seq, clock = last[e["node"]]
            assert e["seq"] == seq + 1, e
            assert e["clock"] > clock, e
        last[e["node"]] = (e["seq"], e["clock"])
    return events


def pick_leader(c: LocalCluster, zk: Any) -> tuple[int, list[int]]:
    """A broker that is not the controller, and a replica list with it preferred."""
    ctrl, _ = controller_of(zk)
    leader = next(b for b in sorted(c.configs) if b != ctrl)
    return leader, [leader] + [b for b in sorted(c.configs) if b != leader]


# -- seed 002: controller election ------------------------------------------------------------
def test_exactly_one_controller_is_elected_and_a_new_one_with_a_higher_epoch_after_kill(
        make_cluster: Any) -> None:
    c = make_cluster(3)
    zk = c.zk_client()
    first, epoch = controller_of(zk)
    assert epoch >= 1
    for b in c.configs:  # every broker agrees on who the controller is
        wait_until(lambda b=b: c.metadata(b)["controller_id"] == first, 5, "metadata")
    elects = [e for e in trace_events(c.data_dir) if e["kind"] == "controller_elect"]
    assert [e["node"] for e in elects] == [first]
    assert elects[0]["params"]["controller_epoch"] == epoch

    t0 = time.monotonic()
    c.kill(first)
    second, new_epoch = wait_until(
        lambda: (lambda x: x if x[0] != first else None)(controller_of(zk)) if zk.exists(
            zkl.CONTROLLER) else None, 15, "a new controller")
    print(f"controller failover took {time.monotonic() - t0:.2f}s")
    assert second != first and new_epoch > epoch
    elects = wait_until(lambda: [e for e in trace_events(c.data_dir) if e["kind"] ==
                                 "controller_elect" and e["params"]["controller_epoch"] == new_epoch],
                        5, "the controller_elect event")
    assert [e["node"] for e in elects] == [second]
    survivors = [b for b in c.configs if b != first]
    for b in survivors:
        wait_until(lambda b=b: c.metadata(b)["controller_id"] == second, 10, "new metadata")
    zk.stop()
    assert_traces_valid(c)


# -- seed 000 A: broker failure ---------------------------------------------------------------
@pytest.mark.parametrize("rule", ["kip320", "hw"])
def test_kill_9_of_a_leader_moves_leadership_to_an_isr_member_and_keeps_every_acked_write(
        make_cluster: Any, rule: str) -> None:
    c = make_cluster(3, min_insync_replicas=2, truncation=rule)
    zk = c.zk_client()
    leader, replicas = pick_leader(c, zk)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("orders", assignment={0: replicas})
    acked = []
    with Producer(c.bootstrap, acks=-1) as producer:
        for i in range(40):
            producer.send("orders", f"before-{i}")
            acked.append(f"before-{i}".encode())
        before, _ = state_of(zk, "orders", 0)
        assert before.leader == leader and set(before.isr) == set(c.configs)

        t0 = time.monotonic()
        c.kill(leader)
        after = wait_until(lambda: (lambda s: s if s.leader not in (leader, -1) else None)(
            state_of(zk, "orders", 0)[0]), 15, "a new leader in ZooKeeper")
        elected = time.monotonic() - t0
        assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
        assert leader not in after.isr
        producer.send("orders", "after-0")  # retried until the new leader serves
        served = time.monotonic() - t0
        acked.append(b"after-0")
        for i in range(1, 20):
            producer.send("orders", f"after-{i}")
            acked.append(f"after-{i}".encode())
    print(f"leader failover: elected in ZK after {elected:.2f}s, serving after {served:.2f}s")
    got = read_all(c, "orders")
    assert [v for v in got if v in set(acked)] == acked  # all there, in order
    events = assert_traces_valid(c)
    elect = [e for e in events if e["kind"] == "elect_leader" and e["params"]["reason"] == "broker_change"]
    assert elect and elect[-1]["params"]["leader"] == after.leader
    zk.stop()


def test_acks_all_below_min_insync_is_refused_and_consumers_see_nothing_beyond_the_hw(
        make_cluster: Any) -> None:
    c = make_cluster(2, min_insync_replicas=2, replica_lag_time_ms=1000)
    zk = c.zk_client()
    leader, replicas = pick_leader(c, zk)
    follower = replicas[1]
    with Admin(c.bootstrap) as admin:
        admin.create_topic("q7", assignment={0: replicas})
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send("q7", "committed")
    c.pause(follower, wait_for_expiry=False)
    try:
        err, resp = request(c, leader, ApiKey.PRODUCE, {
            "topic": "q7", "partition": 0, "acks": 1, "values": [b"uncommitted"]})
        assert err == ErrorCode.NONE
        # seed 000 question 7: between HW and LEO a consumer gets an empty set ...
        err, resp = request(c, leader, ApiKey.FETCH, {
            "replica_id": -1, "topic": "q7", "partition": 0, "fetch_offset": 1})
        assert err == ErrorCode.NONE and resp["records"] == [] and resp["hw"] == 1
        # ... and beyond the LEO it gets OFFSET_OUT_OF_RANGE
        err, _ = request(c, leader, ApiKey.FETCH, {
            "replica_id": -1, "topic": "q7", "partition": 0, "fetch_offset": 5})
        assert err == ErrorCode.OFFSET_OUT_OF_RANGE
        # the silent follower leaves the ISR by a conditional ZK write; then acks=all is refused
        wait_until(lambda: state_of(zk, "q7", 0)[0].isr == (leader,), 10, "ISR shrink")
        err, resp = request(c, leader, ApiKey.PRODUCE, {
            "topic": "q7", "partition": 0, "acks": -1, "values": [b"x"]})
        assert err == ErrorCode.NOT_ENOUGH_REPLICAS
    finally:
        c.resume(follower)
    wait_until(lambda: set(state_of(zk, "q7", 0)[0].isr) == {leader, follower}, 15, "ISR expand")
    wait_until(lambda: {"shrink_isr", "expand_isr"} <= {e["kind"] for e in trace_events(c.data_dir)},
               5, "the ISR change events")  # written just after the ZooKeeper update
    assert_traces_valid(c)
    zk.stop()


# -- seed 000 question 3: the paused leader ------------------------------------------------
def test_leader_paused_while_a_new_leader_is_elected_cannot_commit_after_resume_and_steps_down(
        make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=1)
    zk = c.zk_client()
    old, replicas = pick_leader(c, zk)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("gc", assignment={0: replicas})
    with Producer(c.bootstrap, acks=-1) as producer:
        for i in range(5):
            producer.send("gc", f"v{i}")
    before, _ = state_of(zk, "gc", 0)

    c.pause(old)  # a long GC pause: its session expires, the controller moves leadership
    new = wait_until(lambda: (lambda s: s if s.leader not in (old, -1) else None)(
        state_of(zk, "gc", 0)[0]), 15, "a new leader")
    assert old not in new.isr
    c.resume(old)
    # the zombie still believes it leads with ISR {old, ...}: it must not acknowledge
    err, resp = request(c, old, ApiKey.PRODUCE, {
        "topic": "gc", "partition": 0, "acks": -1, "values": [b"zombie"], "timeout_ms": 3000},
        timeout=10)
    assert err != ErrorCode.NONE, resp
    # it learns it is no longer leader (failed conditional ISR write, or the controller's
    # LeaderAndISR once it re-registers) and ends up following the new leader
    def follows() -> bool:
        mine = [e for e in trace_events(c.data_dir)
                if e["node"] == old and e["topic"] == "gc"]
        return any(e["kind"] == "become_follower" and e["params"]["leader"] == new.leader
                   for e in mine)
    wait_until(follows, 20, "the old leader to follow the new one")
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send("gc", "after")
    got = read_all(c, "gc")
    assert b"zombie" not in got
    assert got[:5] == [f"v{i}".encode() for i in range(5)] and b"after" in got
    events = assert_traces_valid(c)
    mine = [e["kind"] for e in events if e["node"] == old and e["topic"] == "gc"]
    assert "become_follower" in mine
    # its session expired while it was frozen: it registered again with a newer broker epoch
    epochs = [e["params"]["broker_epoch"] for e in events if e["node"] == old
              and e["kind"] in ("broker_restart", "broker_reregister")]
    assert len(epochs) == 2 and epochs[1] > epochs[0]
    # and its log converges: the zombie record is truncated away on the old leader's disk
    wait_until(lambda: set(state_of(zk, "gc", 0)[0].isr) == {0, 1, 2}, 15, "old leader rejoins")
    assert before.leader_epoch < new.leader_epoch
    zk.stop()


# -- seed 000 B, F, H: admin operations ---------------------------------------------------------
def test_topic_create_add_remove_partitions_reassign_and_delete_leave_zookeeper_and_disks_consistent(
        make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=1)
    zk = c.zk_client()

    def check_consistent(topic: str) -> dict[int, list[int]]:
        data, _ = zk.get(zkl.topic_path(topic))
        parts = {int(p): r for p, r in json.loads(data)["partitions"].items()}
        for p, reps in parts.items():
            st, _ = state_of(zk, topic, p)
            assert st.leader in reps and set(st.isr) <= set(reps)
        for b in c.configs:
            want = {f"{topic}-{p}" for p, reps in parts.items() if b in reps}
            have = {d for d in local_partitions(c, b) if d.rsplit("-", 1)[0] == topic}
            assert have == want, (b, have, want)
        return parts

    with Admin(c.bootstrap) as admin:
        admin.create_topic("life", partitions=2, replication_factor=2)
        with Producer(c.bootstrap, acks=-1) as producer:
            for i in range(10):
                producer.send("life", f"r{i}")
        wait_until(lambda: _no_error(check_consistent, "life"), 10, "consistent after create")

        admin.add_partitions("life", 4)
        parts = wait_until(lambda: _no_error(check_consistent, "life"), 10, "consistent after add")
        assert sorted(parts) == [0, 1, 2, 3]
        assert not zk.get_children(zkl.PARTITIONS_ADD)

        admin.remove_partitions("life", [3])  # seed 000 H, on_partitions_remove
        parts = wait_until(lambda: _no_error(check_consistent, "life"), 10,
                           "consistent after remove")
        assert sorted(parts) == [0, 1, 2]
        assert zk.exists(zkl.partition_path("life", 3)) is None
        assert not zk.get_children(zkl.PARTITIONS_REMOVE)

        old = parts[0]
        target = [b for b in c.configs if b not in old] + [old[0]]
        admin.reassign("life", 0, target)
        parts = wait_until(lambda: _no_error(check_consistent, "life"), 15,
                           "consistent after reassignment")
        assert parts[0] == target
        assert not zk.get_children(zkl.REASSIGN)
        got = read_all(c, "life")
        assert sorted(got) == sorted(f"r{i}".encode() for i in range(10))

        admin.delete_topic("life")
        wait_until(lambda: not any(local_partitions(c, b) for b in c.configs), 10,
                   "every broker's partitions deleted")
        assert zk.exists(zkl.topic_path("life")) is None
        assert not zk.get_children(zkl.DELETE_TOPICS)
    wanted = {"topic_created", "partitions_added", "partitions_removed", "reassignment",
              "topic_deleted", "stop_replica"}
    wait_until(lambda: wanted <= {e["kind"] for e in trace_events(c.data_dir)}, 5,
               "the admin events")
    assert_traces_valid(c)
    zk.stop()


def _no_error(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args) or True
    except (AssertionError, Exception):  # noqa: B014 - polled until it holds
        return None


def test_broker_restarted_after_its_topic_was_deleted_deletes_the_local_partition(
        make_cluster: Any) -> None:
    c = make_cluster(3)
    zk = c.zk_client()
    victim, replicas = pick_leader(c, zk)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("gone", assignment={0: replicas})
        with Producer(c.bootstrap, acks=-1) as producer:
            producer.send("gone", "x")
        c.kill(victim)
        wait_until(lambda: state_of(zk, "gone", 0)[0].leader not in (victim, -1), 15, "failover")
        admin.delete_topic("gone")
    assert "gone-0" in local_partitions(c, victim)  # it was down: nobody told it
    c.restart(victim)
    c.wait_ready(30)
    assert "gone-0" not in local_partitions(c, victim)  # seed 000 E.4 / question 5
    stops = [e for e in trace_events(c.data_dir) if e["kind"] == "stop_replica"
             and e["node"] == victim]
    assert stops and stops[-1]["params"]["reason"] == "not_assigned_at_startup"
    restarts = [e for e in trace_events(c.data_dir)
                if e["kind"] == "broker_restart" and e["node"] == victim]
    assert len(restarts) == 2 and restarts[1]["params"]["broker_epoch"] > restarts[0]["params"]["broker_epoch"]
    assert_traces_valid(c)
    zk.stop()


# -- fencing and robustness ---------------------------------------------------------------------
def test_control_request_with_a_stale_controller_epoch_is_rejected(make_cluster: Any) -> None:
    c = make_cluster(2)
    zk = c.zk_client()
    ctrl, epoch = controller_of(zk)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("fence", assignment={0: [0, 1]})
    target = 1 - ctrl
    mbe = max(zk.exists(zkl.broker_path(b)).czxid for b in c.configs)  # seed 003: mandatory
    stale = {"controller_id": ctrl, "controller_epoch": epoch - 1, "max_broker_epoch": mbe, "init": False,
             "partitions": [{"topic": "fence", "partition": 0, "leader": target,
                             "leader_epoch": 99, "isr": [target], "replicas": [0, 1],
                             "zk_version": 9}], "leaders": {}}
    err, _ = request(c, target, ApiKey.LEADER_AND_ISR, stale)
    assert err == ErrorCode.STALE_CONTROLLER_EPOCH
    err, _ = request(c, target, ApiKey.STOP_REPLICA, {
        "controller_id": ctrl, "controller_epoch": epoch - 1, "max_broker_epoch": mbe, "delete": True,
        "partitions": [["fence", 0]]})
    assert err == ErrorCode.STALE_CONTROLLER_EPOCH
    assert "fence-0" in local_partitions(c, target)
    rejects = [e for e in trace_events(c.data_dir) if e["kind"] == "reject_leader_and_isr"]
    assert rejects and rejects[0]["params"]["reason"] == "stale_controller_epoch"
    assert rejects[0]["params"]["controller_epoch"] == epoch - 1
    st, _ = state_of(zk, "fence", 0)
    assert st.leader_epoch == 0  # nothing changed
    # a controller whose epoch moved on behind its back (a zombie) cannot write to ZooKeeper:
    # every controller transaction checks /controller_epoch's version; it resigns and the
    # election runs again with a higher epoch
    _, stat = zk.get(zkl.CONTROLLER_EPOCH)
    zk.set(zkl.CONTROLLER_EPOCH, str(epoch + 1).encode(), version=stat.version)
    txn = zk.transaction()
    txn.check(zkl.CONTROLLER_EPOCH, stat.version)
    txn.set_data(zkl.leader_and_isr_path("fence", 0), b"{}")
    with pytest.raises(zkl.TransactionFailed):
        zkl.commit_checked(txn)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("after", assignment={0: [0, 1]}, wait=20)
    events = assert_traces_valid(c)
    resigns = [e for e in events if e["kind"] == "controller_resign"]
    assert resigns and resigns[0]["params"] == {"controller_epoch": epoch, "reason": "epoch_fenced"}
    assert max(e["params"]["controller_epoch"] for e in events
               if e["kind"] == "controller_elect") >= epoch + 2
    zk.stop()


def test_garbage_bytes_get_an_error_or_a_closed_connection_and_the_broker_keeps_serving(
        make_cluster: Any) -> None:
    c = make_cluster(1)
    host, port = c.endpoint(0)
    metadata = encode_request(ApiKey.METADATA, API_VERSIONS[ApiKey.METADATA], 1, 0, {})
    attacks: list[tuple[bytes, ApiKey | None]] = [  # the bytes, and how to read an answer
        (os.urandom(64), None),
        (struct.pack(">I", 1 << 31) + b"\x00" * 16, None),  # oversized frame
        (struct.pack(">I", 3) + b"abc", None),  # shorter than a header
        (metadata[:-1] + b"\x09", ApiKey.METADATA),  # a body that does not parse
        (struct.pack(">I", 17) + struct.pack(">hhiq", 999, 0, 5, 0) + b"\x07", None),  # unknown api
        (encode_request(ApiKey.METADATA, 7, 1, 0, {}), ApiKey.METADATA),  # unsupported version
        (encode_request(ApiKey.PRODUCE, API_VERSIONS[ApiKey.PRODUCE], 1, 0,  # no record at all
                        {"topic": "t", "partition": 0, "values": []}), ApiKey.PRODUCE),
    ]
    for payload, api in attacks:
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            data = b""
            try:
                while chunk := s.recv(4096):
                    data += chunk
            except ConnectionResetError:
                data = b""
            if data:  # an error response, never a success
                _, _, error, _ = decode_response(data[4:], api)
                assert error != 0, payload
        meta = c.metadata(0)
        assert meta is not None and meta["controller_id"] == 0, payload
    assert c.procs[0].poll() is None


def test_cli_produces_and_consumes_through_the_bootstrap_broker(
        make_cluster: Any, capsys: Any, monkeypatch: Any) -> None:
    import io

    from impl.harness.cli import main as cli

    c = make_cluster(2)
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", cli.CLUSTER_COMMAND_MODULES)
    boot = ["--bootstrap", f"{c.endpoint(0)[0]}:{c.endpoint(0)[1]}"]
    assert cli.main(["topics", "create", "cli", "--partitions", "1",
                     "--replication-factor", "2", *boot]) == 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"alpha\nbeta\ngamma\n")))  # bytes underneath, as a real stdin
    assert cli.main(["produce", "cli", "--acks", "all", *boot]) == 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"delta\n")))
    assert cli.main(["produce", "cli", "--acks", "1", *boot]) == 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"epsilon\n")))
    assert cli.main(["produce", "cli", "--acks", "0", *boot]) == 0
    capsys.readouterr()
    assert cli.main(["consume", "cli", "--from-beginning", "--timeout", "1.5", *boot]) == 0
    assert capsys.readouterr().out.split() == ["alpha", "beta", "gamma", "delta", "epsilon"]
    assert cli.main(["topics", "describe", "cli", *boot]) == 0
    assert "leader_epoch 0" in capsys.readouterr().out
    assert cli.main(["consume", "missing", *boot]) == 2
    assert cli.main(["topics", "describe", "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 2


def test_leader_whose_conditional_isr_update_fails_stops_acting_as_leader(
        make_cluster: Any) -> None:
    """Seed 000 question 3's mechanism: the ISR write is conditional on the zk_version the
    leader was given; if the controller has written since, the leader learns it is deposed."""
    c = make_cluster(3, min_insync_replicas=1, replica_lag_time_ms=800)
    zk = c.zk_client()
    leader, replicas = pick_leader(c, zk)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("cas", assignment={0: replicas})
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send("cas", "v0")
    st, version = state_of(zk, "cas", 0)
    # a controller decision the leader never hears about (its LeaderAndISR is lost)
    other = replicas[1]
    deposed = zkl.LeaderAndIsr(other, st.leader_epoch + 1, st.isr, st.controller_epoch)
    moved = zk.set(zkl.leader_and_isr_path("cas", 0), deposed.to_json(), version=version)
    c.pause(replicas[2], wait_for_expiry=False)  # a lagging follower makes the leader try to shrink the ISR
    try:
        with Producer(c.bootstrap, acks=1) as producer:
            producer.send("cas", "v1")  # behind the leader's LEO now: a caught-up one never lags
        wait_until(lambda: any(e["kind"] == "isr_update_failed" and e["node"] == leader
                               for e in trace_events(c.data_dir)), 10, "isr_update_failed")
        err, _ = request(c, leader, ApiKey.PRODUCE, {
            "topic": "cas", "partition": 0, "acks": 1, "values": [b"late"]})
        assert err == ErrorCode.NOT_LEADER
    finally:
        c.resume(replicas[2])
    failed = [e for e in trace_events(c.data_dir) if e["kind"] == "isr_update_failed"]
    assert failed[0]["params"]["expected_zk_version"] == version
    assert failed[0]["zxid"] == moved.mzxid  # ordered after the write that deposed it
    assert state_of(zk, "cas", 0)[0] == deposed  # the failed write changed nothing
    assert_traces_valid(c)
    zk.stop()


def test_controlled_shutdown_moves_leadership_first_and_preferred_election_moves_it_back(
        make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=2)
    zk = c.zk_client()
    leader, replicas = pick_leader(c, zk)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("pref", assignment={0: replicas})
        with Producer(c.bootstrap, acks=-1) as producer:
            producer.send("pref", "a")
            assert c.stop_broker(leader) == 0  # SIGTERM: controlled shutdown, then exit
            st, _ = state_of(zk, "pref", 0)
            assert st.leader != leader and leader not in st.isr
            moved = [e for e in trace_events(c.data_dir) if e["kind"] == "elect_leader"
                     and e["params"]["reason"] == "controlled_shutdown"]
            assert moved and moved[-1]["params"]["leader"] == st.leader
            producer.send("pref", "b")
            c.restart(leader)
            wait_until(lambda: leader in state_of(zk, "pref", 0)[0].isr, 20, "rejoin the ISR")
            admin.elect_preferred("pref", 0)
            wait_until(lambda: state_of(zk, "pref", 0)[0].leader == leader, 10, "preferred leader")
            producer.send("pref", "c")
    assert read_all(c, "pref") == [b"a", b"b", b"c"]
    reasons = [e["params"]["reason"] for e in assert_traces_valid(c) if e["kind"] == "elect_leader"]
    assert "preferred" in reasons
    zk.stop()
