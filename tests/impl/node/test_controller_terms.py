"""Seed 002 and seed 003 inside the controller, with real ZooKeeper and no broker processes.

Two :class:`impl.node.controller.Controller` objects run in this process against one chroot, each
with a minimal host broker (ZooKeeper client, id, config, trace recorder), and with
recording channels instead of TCP -- so a test can look at exactly which payload object
went to which broker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from impl_testing import wait_until

from impl.node import zk as zkl
from impl.node.auth.zookeeper import ZkAcl
from impl.node.config import BrokerConfig
from impl.node.controller import Controller
from impl.node.wire import ApiKey, EncodedBody, decode_encoded_body
from traces.recorder import TraceRecorder

pytestmark = pytest.mark.integration


class RecordingChannel:
    """Stands in for a ControllerChannel: keeps what would have been sent."""

    def __init__(self, broker: int, epoch: int) -> None:
        self.broker, self.epoch, self.host, self.port = broker, epoch, "127.0.0.1", 1
        self.sent: list[tuple[ApiKey, Any]] = []

    def send(self, api: ApiKey, body: Any, epoch: int | None = None) -> None:
        self.sent.append((api, body))

    def close(self) -> None:
        pass


def make_controller(zk_chroot: str, acl: ZkAcl | None, tmp_path: Path, broker_id: int,
                    **settings: Any) -> Controller:
    config = BrokerConfig(broker_id=broker_id, port=1, zookeeper=zk_chroot, data_dir=tmp_path,
                          reassign_interval_s=0.2, **settings)
    zk = zkl.connect(zk_chroot, session_timeout=4.0, acl=acl)
    zkl.ensure_layout(zk, acl)
    elected: list[int] = []  # the epochs its broker was told it won

    def on_controller_elected(epoch: int, announce: Callable[[], None] = lambda: None) -> None:
        elected.append(epoch)
        announce()

    host = SimpleNamespace(zk=zk, id=broker_id, config=config, elected=elected,
                           recorder=TraceRecorder(tmp_path / f"broker-{broker_id}.jsonl", "t", broker_id),
                           on_controller_elected=on_controller_elected)
    return Controller(host)  # type: ignore[arg-type]


def controller_id(zk: Any) -> int:
    data, _ = zk.get(zkl.CONTROLLER)
    return int(json.loads(data)["brokerid"])


@pytest.fixture
def controllers(zk_chroot: str, zookeeper: zkl.EmbeddedZooKeeper, tmp_path: Path) -> Any:
    made: list[Controller] = []

    def make(broker_id: int, **settings: Any) -> Controller:
        c = make_controller(zk_chroot, zookeeper.acl, tmp_path, broker_id, **settings)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()
        c.zk.stop()
        c.zk.close()


@pytest.fixture
def recording_controller(controllers: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An active controller (broker 1) over simulated brokers registered in ZooKeeper, whose
    channels record what they would send."""
    monkeypatch.setattr("impl.node.controller.requests.ControllerChannel",
                        lambda _c, broker, _h, _p, epoch: RecordingChannel(broker, epoch))

    def start(brokers: tuple[int, ...]) -> Controller:
        c = controllers(1)
        for b in brokers:
            c.zk.create(zkl.broker_path(b), zkl.encode({"host": "127.0.0.1", "port": 1}), ephemeral=True)
        c.start()
        c._post("elect")
        wait_until(lambda: c.active and set(c.live) == set(brokers), 10, f"controller with brokers {brokers}")
        return c

    return start


def test_a_former_controller_backs_off_and_its_watches_remove_themselves(controllers: Any) -> None:
    first = controllers(1)
    first.start()
    first._post("elect")
    wait_until(lambda: first.active, 10, "broker 1 to become controller")
    # it registers its watches just after it becomes active: wait for them, bounded
    wait_until(lambda: first.watches == len(Controller.CONTROLLER_WATCHES), 10,
               "the controller's watches")
    second = controllers(2)
    second.start()
    time.sleep(0.3)
    assert not second.active and second.watches == 0  # only the controller watches

    # the controller id changes under it (seed 002: /controller deleted, another broker
    # wins -- the sitting controller does not campaign while it believes it is active)
    epoch = first.epoch
    first.zk.delete(zkl.CONTROLLER)
    wait_until(lambda: second.active, 10, "broker 2 to win the new election")
    assert controller_id(first.zk) == 2 and second.epoch == epoch + 1
    # its broker learns the new epoch in the election's step, before any request of the new
    # controller reaches it, so the deposed controller's requests in flight are refused
    assert second.broker.elected == [epoch + 1] and first.broker.elected == [epoch]
    wait_until(lambda: not first.active, 10, "the former controller to back off")

    # the next change on a watched path finds the former controller's watches retired
    posted: list[str] = []
    post = first._post
    first._post = lambda name, arg=None: (posted.append(name), post(name, arg))[1]  # type: ignore[method-assign]
    first.zk.create(f"{zkl.BROKER_IDS}/9", b'{"host": "127.0.0.1", "port": 1}', ephemeral=True)
    first.zk.create(f"{zkl.TOPICS}/t", b'{"partitions": {}}')
    for path in (zkl.DELETE_TOPICS, zkl.PARTITIONS_ADD, zkl.PARTITIONS_REMOVE, zkl.REASSIGN,
                 zkl.PREFERRED, zkl.ISR_CHANGE):
        first.zk.create(f"{path}/x", b"")
    wait_until(lambda: first.watches == 0, 10, "the former controller's watches to go")
    wait_until(lambda: second.watches == len(Controller.CONTROLLER_WATCHES), 10,
               "the new controller's watches")
    time.sleep(0.3)
    watched = {event for _, event in Controller.CONTROLLER_WATCHES}
    assert not watched & set(posted)  # it queued nothing for the changes


def test_update_metadata_is_encoded_once_and_the_same_bytes_go_to_every_broker(
        controllers: Any) -> None:
    c = controllers(1)
    c.active, c.epoch = True, 4
    c.live = {b: ("127.0.0.1", 9000 + b, 100 + 7 * b) for b in range(5)}
    c.channels = {b: RecordingChannel(b, c.live[b][2]) for b in c.live}  # type: ignore[misc]
    c._send_update_metadata({("t", 0): None})
    payloads = [ch.sent[0][1] for ch in c.channels.values()]  # type: ignore[attr-defined]
    assert all(p is payloads[0] for p in payloads) and isinstance(payloads[0], EncodedBody)
    body = decode_encoded_body(ApiKey.UPDATE_METADATA, payloads[0])
    assert body["max_broker_epoch"] == 128 and "broker_epoch" not in body
    assert (body["controller_id"], body["controller_epoch"]) == (1, 4)


def test_without_caching_each_broker_gets_its_own_request_with_its_own_broker_epoch(
        controllers: Any) -> None:
    """The KIP-380 format, kept behind ``cache_update_metadata=False`` to measure against."""
    c = controllers(1, cache_update_metadata=False)
    c.active, c.epoch = True, 4
    c.live = {b: ("127.0.0.1", 9000 + b, 100 + 7 * b) for b in range(3)}
    c.channels = {b: RecordingChannel(b, c.live[b][2]) for b in c.live}  # type: ignore[misc]
    c._send_update_metadata({("t", 0): None})
    bodies = {b: ch.sent[0][1] for b, ch in c.channels.items()}  # type: ignore[attr-defined]
    assert {b: body["broker_epoch"] for b, body in bodies.items()} == {0: 100, 1: 107, 2: 114}
    assert len({id(body) for body in bodies.values()}) == 3


def test_every_control_request_carries_the_max_live_broker_epoch(controllers: Any) -> None:
    c = controllers(1)
    c.active, c.epoch = True, 2
    c.live = {0: ("h", 1, 50), 1: ("h", 2, 90), 2: ("h", 3, 70)}
    c.channels = {b: RecordingChannel(b, c.live[b][2]) for b in c.live}  # type: ignore[misc]
    c._stop_replicas({0: [("t", 0)], 2: [("t", 1)]}, delete=False)
    sent = [ch.sent[0][1] for ch in c.channels.values() if ch.sent]  # type: ignore[attr-defined]
    assert [s["max_broker_epoch"] for s in sent] == [90, 90]
    assert c.max_broker_epoch() == 90


def test_the_controller_detects_a_bounced_broker_by_its_new_epoch(
        recording_controller: Any) -> None:
    """A broker that restarts between two reads of ``/brokers/ids`` keeps its id but gets a
    new czxid: the controller treats it as a new broker (a fresh channel, every partition
    it replicates sent again), not as the same one."""
    c = recording_controller((5, 6))
    zk = c.zk
    zk.create(zkl.topic_path("t"), zkl.encode({"partitions": {"0": [5, 6]}}))
    wait_until(lambda: zk.exists(zkl.leader_and_isr_path("t", 0)), 10, "leader of t-0")
    first = c.channels[6]
    e_old = c.live[6][2]

    # the bounce: one transaction deletes and re-creates the registration, so the
    # controller never sees broker 6 missing -- only its epoch changes
    txn = zk.transaction()
    txn.delete(zkl.broker_path(6))
    txn.create(zkl.broker_path(6), zkl.encode({"host": "127.0.0.1", "port": 1}), ephemeral=True)
    zkl.commit_checked(txn)
    wait_until(lambda: c.live.get(6, ("", 0, e_old))[2] != e_old, 10, "the new epoch")
    wait_until(lambda: any(api == ApiKey.LEADER_AND_ISR for api, _ in c.channels[6].sent), 10,
               "LeaderAndISR to the new incarnation")
    fresh = c.channels[6]
    assert fresh is not first and fresh.epoch == zk.exists(zkl.broker_path(6)).czxid > e_old
    body = next(b for api, b in fresh.sent if api == ApiKey.LEADER_AND_ISR)
    assert [(e["topic"], e["partition"]) for e in body["partitions"]] == [("t", 0)]
    assert body["max_broker_epoch"] == fresh.epoch


def test_a_decision_from_a_stale_context_is_refused_by_zookeeper_and_redone_from_a_fresh_read(
        recording_controller: Any) -> None:
    """The controller decides from its in-memory context, but writes conditionally on the
    zk_version it cached.  Here the leader shrank the ISR to itself behind the controller's
    back (no ISR-change notice yet) and then died: the context still says ISR {5, 6, 7}, so
    the first decision is broker 6 -- an unclean choice in truth.  ZooKeeper refuses that
    write (the version moved); the controller re-reads and, with no live ISR member and
    unclean election off, writes leader -1."""
    c = recording_controller((5, 6, 7))
    zk = c.zk
    zk.create(zkl.topic_path("t"), zkl.encode({"partitions": {"0": [5, 6, 7]}}))
    wait_until(lambda: ("t", 0) in c.states, 10, "leader of t-0 in the context")
    cached, version = c.states[("t", 0)]
    assert (cached.leader, cached.isr) == (5, (5, 6, 7))

    shrunk = zkl.LeaderAndIsr(5, cached.leader_epoch, (5,), cached.controller_epoch)
    zk.set(zkl.leader_and_isr_path("t", 0), shrunk.to_json(), version=version)
    zk.delete(zkl.broker_path(5))

    def state() -> zkl.LeaderAndIsr:
        data, _ = zk.get(zkl.leader_and_isr_path("t", 0))
        return zkl.LeaderAndIsr.from_json(data)

    wait_until(lambda: state().leader_epoch > cached.leader_epoch, 10, "a new leader epoch")
    assert (state().leader, state().isr) == (-1, (5,))
    wait_until(lambda: c.states[("t", 0)][0] == state(), 5, "the context to hold the written state")


def test_a_new_topic_costs_one_read_and_a_partial_update_metadata_of_its_own_partitions(
        recording_controller: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 000 B reads the new topic's assignment only, and brokers get UpdateMetadata for
    the new partitions only (they merge it): a creation's cost does not grow with the
    cluster -- what keeps a quota-limited creation load from delaying failover (seed 001)."""
    c = recording_controller((5, 6))
    zk = c.zk
    zk.create(zkl.topic_path("old"), zkl.encode({"partitions": {"0": [5, 6], "1": [6, 5]}}))
    wait_until(lambda: ("old", 1) in c.states, 10, "topic old")

    reads: list[str] = []
    get_async = c.zk.get_async
    monkeypatch.setattr(c.zk, "get_async", lambda path, *a: (reads.append(path), get_async(path, *a))[1])
    for ch in c.channels.values():
        ch.sent.clear()  # type: ignore[attr-defined]
    zk.create(zkl.topic_path("new"), zkl.encode({"partitions": {"0": [6, 5]}}))
    wait_until(lambda: ("new", 0) in c.states, 10, "topic new")
    wait_until(lambda: any(api == ApiKey.UPDATE_METADATA for api, _ in c.channels[5].sent), 10, "UM")
    assert zkl.topic_path("old") not in reads and zkl.topic_path("new") in reads
    [um] = [b for api, b in c.channels[5].sent if api == ApiKey.UPDATE_METADATA]  # type: ignore[attr-defined]
    body = decode_encoded_body(ApiKey.UPDATE_METADATA, um)
    assert body["partial"] is True and set(body["topics"]) == {"new"}
    assert body["topics"]["new"]["0"]["leader"] == 6


def test_an_isr_change_notice_rereads_only_the_partitions_it_names(
        recording_controller: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A leader's ISR change arrives as a notice naming its partitions (seed 000 G); the
    controller re-reads those and sends UpdateMetadata for them alone -- a burst of ISR
    changes must not make a broker failure wait behind a read of every partition."""
    c = recording_controller((5, 6))
    zk = c.zk
    zk.create(zkl.topic_path("t"), zkl.encode({"partitions": {str(p): [5, 6] for p in range(4)}}))
    wait_until(lambda: all(("t", p) in c.states for p in range(4)), 10, "topic t")

    st, version = c.states[("t", 2)]
    zk.set(zkl.leader_and_isr_path("t", 2),
           zkl.LeaderAndIsr(st.leader, st.leader_epoch, (5,), st.controller_epoch).to_json(), version=version)
    reads: list[str] = []
    get_async = c.zk.get_async
    monkeypatch.setattr(c.zk, "get_async", lambda path, *a: (reads.append(path), get_async(path, *a))[1])
    for ch in c.channels.values():
        ch.sent.clear()  # type: ignore[attr-defined]
    zk.create(f"{zkl.ISR_CHANGE}/change-", zkl.encode([["t", 2]]), sequence=True)
    wait_until(lambda: any(api == ApiKey.UPDATE_METADATA for api, _ in c.channels[6].sent), 10, "UM")
    assert [r for r in reads if r.endswith("leaderAndISR")] == [zkl.leader_and_isr_path("t", 2)]
    [um] = [b for api, b in c.channels[6].sent if api == ApiKey.UPDATE_METADATA]  # type: ignore[attr-defined]
    body = decode_encoded_body(ApiKey.UPDATE_METADATA, um)
    assert body["partial"] is True and body["topics"] == {"t": {"2": {
        "leader": 5, "leader_epoch": st.leader_epoch, "isr": [5], "replicas": [5, 6]}}}
    assert c.states[("t", 2)][0].isr == (5,)
    assert zk.get_children(zkl.ISR_CHANGE) == []
