"""Integration: admin writes reach ZooKeeper only through the controller (seed 004, KIP-590).

Every path against a real cluster: a new client straight to the controller; a new-version
request to another broker (NOT_CONTROLLER, the client rediscovers); an old-version request
to another broker (forwarded once, its principal kept and charged); and an election between
the forwarding broker's discovery of the controller and its send.  Each broker's audit log
(``broker-N/admin-audit.jsonl``) is the witness of how often a request was forwarded.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from impl_testing import wait_until

from impl.harness.cluster import LocalCluster
from impl.node import zk as zkl
from impl.node.client import Admin
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode

pytestmark = pytest.mark.integration


def controller_id(zk: Any) -> int:
    data, _ = zk.get(zkl.CONTROLLER)
    return int(json.loads(data)["brokerid"])


def audit(c: LocalCluster, broker: int | None = None) -> list[dict[str, Any]]:
    out = []
    for b in ([broker] if broker is not None else sorted(c.configs)):
        path = Path(c.data_dir) / f"broker-{b}" / "admin-audit.jsonl"
        if path.exists():
            out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def send(c: LocalCluster, broker: int, api: ApiKey, body: dict[str, Any], version: int,
         timeout: float = 30.0) -> tuple[int, dict[str, Any]]:
    conn = BlockingConnection(*c.endpoint(broker), timeout=timeout)
    try:
        error, _, resp = conn.send(api, body, version=version)
        return error, resp
    finally:
        conn.close()


def test_new_admin_client_writes_through_the_controller_only(make_cluster):
    c = make_cluster(3)
    zk = c.zk_client()
    ctrl = controller_id(zk)
    with Admin(c.bootstrap, user="alice") as admin:
        admin.create_topic("direct", partitions=2, replication_factor=2)
        admin.add_partitions("direct", 3)
        admin.delete_topic("direct")
    events = audit(c)
    handled = [e for e in events if e["event"] == "handled"]
    assert [e["api"] for e in handled] == ["CREATE_TOPICS", "CREATE_PARTITIONS", "DELETE_TOPICS"]
    assert {e["broker"] for e in handled} == {ctrl}
    assert all(e["forwarded_by"] is None and e["user"] == "alice" for e in handled)
    assert not [e for e in events if e["event"] in ("forward", "not_controller")]
    zk.stop()


def test_new_version_request_to_a_non_controller_is_refused_and_the_client_rediscovers(
        make_cluster):
    c = make_cluster(3)
    zk = c.zk_client()
    ctrl = controller_id(zk)
    other = next(b for b in sorted(c.configs) if b != ctrl)
    error, resp = send(c, other, ApiKey.CREATE_TOPICS, {"topics": [{"topic": "refused"}]},
                       version=1)
    assert error == ErrorCode.NOT_CONTROLLER and resp["controller_id"] == ctrl
    assert zk.exists(zkl.topic_path("refused")) is None  # nothing written, nothing forwarded
    with Admin(c.bootstrap) as admin:
        admin.refresh()
        admin.controller_id = other  # a stale view: the client is told and rediscovers
        admin.create_topic("rediscovered", wait=0)
    assert zk.exists(zkl.topic_path("rediscovered")) is not None
    refused = [e for e in audit(c, other) if e["event"] == "not_controller"]
    assert len(refused) == 2
    assert not [e for e in audit(c) if e["event"] == "forward"]
    zk.stop()


def test_old_version_request_is_forwarded_once_and_charged_to_its_principal(make_cluster):
    # burst = 5 x 1 sample x 1 s = 5 mutations: 15 partitions leave K = -10, 2 s of throttle
    c = make_cluster(3, controller_quota_window_num=1)
    zk = c.zk_client()
    ctrl = controller_id(zk)
    other = next(b for b in sorted(c.configs) if b != ctrl)
    with Admin(c.bootstrap) as admin:
        admin.alter_quota("olduser", None, 5)
    conn = BlockingConnection(*c.endpoint(other), timeout=10)
    error, _, resp = conn.send(ApiKey.CREATE_TOPICS, {
        "topic": "legacy", "partitions": 15, "replication_factor": 1, "user": "olduser",
        "client_id": "old-tool"}, version=0)
    answered = time.monotonic()
    # an old client is never refused by the quota: accepted, and told how long it is throttled
    assert error == ErrorCode.NONE, resp
    assert resp["topic"] == "legacy" and len(resp["assignment"]) == 15
    assert 1900 <= resp["throttle_time_ms"] <= 2000
    # ... and its connection is muted for that long: the next request waits
    error, _, _ = conn.send(ApiKey.METADATA, {})
    assert error == ErrorCode.NONE and time.monotonic() - answered >= 1.5
    conn.close()
    forwards = [e for e in audit(c) if e["event"] == "forward"]
    assert len(forwards) == 1 and forwards[0]["broker"] == other
    assert forwards[0]["target"] == ctrl and forwards[0]["attempt"] == 1
    assert forwards[0]["user"] == "olduser" and forwards[0]["client_id"] == "old-tool"
    handled = [e for e in audit(c) if e["event"] == "handled" and e["api"] == "CREATE_TOPICS"]
    assert len(handled) == 1 and handled[0]["broker"] == ctrl
    assert handled[0]["forwarded_by"] == other
    assert handled[0]["forward_id"] == forwards[0]["forward_id"]
    assert handled[0]["user"] == "olduser" and handled[0]["client_id"] == "old-tool"
    # the bucket charged is the original principal's, not the forwarding broker's
    with Admin(c.bootstrap) as admin:
        metrics = admin.describe_quotas()["metrics"]
    assert set(metrics) == {"user=olduser"}
    assert metrics["user=olduser"]["throttle-time"] >= 1900
    zk.stop()


def test_quota_alteration_from_an_old_client_is_forwarded_and_only_the_controller_writes(
        make_cluster):
    c = make_cluster(3)
    zk = c.zk_client()
    ctrl = controller_id(zk)
    other = next(b for b in sorted(c.configs) if b != ctrl)
    entry = {"entries": [{"user": "u", "client_id": "c", "rate": 7.5}]}
    error, _ = send(c, other, ApiKey.ALTER_CLIENT_QUOTAS, entry, version=1)
    assert error == ErrorCode.NOT_CONTROLLER
    assert zk.exists("/config/quotas/users/u/clients/c") is None
    error, _ = send(c, other, ApiKey.ALTER_CLIENT_QUOTAS, entry, version=0)
    assert error == ErrorCode.NONE
    data, _ = zk.get("/config/quotas/users/u/clients/c")
    assert json.loads(data) == {"controller_mutation_rate": 7.5}
    writers = {e["broker"] for e in audit(c) if e["event"] == "handled"}
    assert writers == {ctrl}
    zk.stop()


def test_old_version_topic_requests_are_forwarded_in_the_new_format_and_errors_relayed(
        make_cluster):
    c = make_cluster(2)
    zk = c.zk_client()
    ctrl = controller_id(zk)
    other = 1 - ctrl
    error, resp = send(c, other, ApiKey.CREATE_TOPICS, {"topic": "old", "partitions": 1}, 0)
    assert error == ErrorCode.NONE and resp["topic"] == "old"
    # an old client that happens to reach the controller is served there, no hop
    error, resp = send(c, ctrl, ApiKey.CREATE_TOPICS, {"topic": "old", "partitions": 1}, 0)
    assert error == ErrorCode.TOPIC_ALREADY_EXISTS  # the old format: the request's own error
    error, resp = send(c, other, ApiKey.CREATE_TOPICS, {"topic": "old", "partitions": 1}, 0)
    assert error == ErrorCode.TOPIC_ALREADY_EXISTS and "exists" in resp["message"]
    wait_until(lambda: zk.exists(zkl.leader_and_isr_path("old", 0)), 10, "old's leader")
    error, resp = send(c, other, ApiKey.CREATE_PARTITIONS, {"topic": "old", "count": 3}, 0)
    assert error == ErrorCode.NONE and sorted(resp["added"]) == ["1", "2"]
    wait_until(lambda: zk.exists(zkl.leader_and_isr_path("old", 2)), 10, "the added partitions")
    error, _ = send(c, other, ApiKey.DELETE_TOPICS, {"topic": "old"}, 0)
    assert error == ErrorCode.NONE
    wait_until(lambda: not zk.exists(zkl.topic_path("old")), 10, "the deletion")
    error, _ = send(c, other, ApiKey.DELETE_TOPICS, {"topic": "old"}, 0)
    assert error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    forwards = [e for e in audit(c) if e["event"] == "forward"]
    assert [e["api"] for e in forwards] == ["CREATE_TOPICS", "CREATE_TOPICS", "CREATE_PARTITIONS",
                                            "DELETE_TOPICS", "DELETE_TOPICS"]
    assert {(e["broker"], e["target"], e["attempt"]) for e in forwards} == {(other, ctrl, 1)}
    handled = [e for e in audit(c) if e["event"] == "handled"]
    assert {e["broker"] for e in handled} == {ctrl} and len(handled) == 6
    zk.stop()


@pytest.mark.parametrize("election", ["resign", "kill"])
def test_election_between_discovery_and_forwarding_applies_the_request_exactly_once(
        make_cluster, election):
    """The forwarding broker has picked the controller and waits 1.5 s (a test hook) before
    sending; meanwhile the controller resigns (its /controller znode is deleted) or is
    killed.  The forwarded request is refused or undeliverable there, the forwarding broker
    retries against the new controller, and nobody ever forwards it a second time."""
    c = make_cluster(3, forward_delay_ms=1500)
    zk = c.zk_client()
    old = controller_id(zk)
    via = next(b for b in sorted(c.configs) if b != old)
    result: dict[str, Any] = {}

    def old_client() -> None:
        result["answer"] = send(c, via, ApiKey.CREATE_TOPICS, {
            "topic": "amid-election", "partitions": 2, "replication_factor": 2,
            "user": "carol"}, version=0)

    t = threading.Thread(target=old_client)
    t.start()
    wait_until(lambda: any(e["event"] == "forward" for e in audit(c, via)), 10,
               "the forwarding broker to pick the controller")
    if election == "resign":
        zk.delete(zkl.CONTROLLER)  # seed 002: deleting /controller triggers an election
    else:
        c.procs[old].kill()
    t.join(30)
    assert not t.is_alive()
    error, resp = result["answer"]
    [new] = wait_until(lambda: zk.exists(zkl.CONTROLLER) and [controller_id(zk)], 20,
                       "a new controller")
    assert error == ErrorCode.NONE, resp
    assert zk.exists(zkl.topic_path("amid-election")) is not None
    # every live broker's metadata names the new controller (cached from /controller)
    live = [b for b in sorted(c.configs) if election == "resign" or b != old]
    wait_until(lambda: all((c.metadata(b) or {}).get("controller_id") == new for b in live),
               10, "metadata naming the new controller")
    events = audit(c)
    forwards = [e for e in events if e["event"] == "forward"]
    fid = forwards[0]["forward_id"]
    # one forwarding broker, one request id; every hop starts at `via`, never at a receiver
    assert {e["broker"] for e in forwards} == {via}
    assert {e["forward_id"] for e in forwards} == {fid}
    assert forwards[0]["target"] == old
    # applied exactly once, by a controller other than the one that lost the election (or
    # by `via` itself if it won: then there was no hop left to make)
    handled = [e for e in events if e["event"] == "handled" and e["forward_id"] == fid]
    applied = [e for e in handled if e["errors"] == [0]]
    assert len(applied) == 1, events
    assert applied[0]["broker"] == new != old and applied[0]["user"] == "carol"
    if election == "resign":  # the old controller refused the forwarded request, once
        refused = [e for e in events if e["event"] == "not_controller"]
        assert [(e["broker"], e["forward_id"], e["forwarded_by"]) for e in refused] == \
            [(old, fid, via)]
    zk.stop()
