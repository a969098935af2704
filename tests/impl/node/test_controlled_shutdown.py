"""Integration: controlled shutdown as Kafka 2.7 does it, on real processes.

Brokers ask, one after another, to shut down (the ControlledShutdown request a broker sends
at SIGTERM, here sent while it still runs -- the window in which it has asked but not yet
left): no election may choose a broker that has asked, and a follower that has asked gets
StopReplica, not LeaderAndISR, so it stops fetching and its leader does not put it back into
the ISR it has just left.  Then the brokers really stop, in the same order.

The controller is a fourth broker outside the partition, so that the stops do not move it
(a new controller would not know who had asked, as in Kafka).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from impl_testing import trace_events, wait_until

from conformance.judge.replay import judge
from conformance.spark.order import causal_order, split_groups
from impl.node import zk as zkl
from impl.node.client import Admin, Producer
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode
from traces.reader import read_traces

pytestmark = pytest.mark.integration

TOPIC = "shutdown"


def _state(zk: Any) -> zkl.LeaderAndIsr:
    return zkl.LeaderAndIsr.from_json(zk.get(zkl.leader_and_isr_path(TOPIC, 0))[0])


def _elections(c: Any, ctrl: int) -> list[dict[str, Any]]:
    """The controller's elect_leader events of the partition, in the order it wrote them."""
    return [e for e in trace_events(c.data_dir) if e["kind"] == "elect_leader"
            and e["node"] == ctrl and e.get("topic") == TOPIC]


def _ask_to_shut_down(c: Any, zk: Any, ctrl: int, broker: int) -> dict[str, Any]:
    epoch = zk.exists(zkl.broker_path(broker)).czxid
    conn = BlockingConnection(*c.endpoint(ctrl), timeout=10)
    try:
        error, _, resp = conn.send(ApiKey.CONTROLLED_SHUTDOWN,
                                   {"broker_id": broker, "broker_epoch": epoch})
    finally:
        conn.close()
    assert error == ErrorCode.NONE
    return resp


def _isr_never_holds(zk: Any, brokers: set[int], seconds: float) -> None:
    """For ``seconds`` (longer than the replica lag time, in which a fetching follower would
    be back), ZooKeeper's ISR holds none of ``brokers``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        isr = set(_state(zk).isr)
        assert not isr & brokers, f"{sorted(isr & brokers)} back in the ISR {sorted(isr)}"
        time.sleep(0.1)


def _judged(c: Any) -> dict[str, Any]:
    """The model's verdict (kip320) on the run's trace of the partition."""
    ordered, _ = causal_order(read_traces([c.data_dir / "traces"]).events)
    group = split_groups(ordered)[(TOPIC, 0)]
    return judge(group)


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_controlled_shutdown_of_brokers_2_1_0_never_elects_one_that_asked_and_none_rejoins_the_isr(
        make_cluster: Any) -> None:
    c = make_cluster(4, min_insync_replicas=1)
    zk = c.zk_client()
    ctrl = int(zkl.decode(zk.get(zkl.CONTROLLER)[0])["brokerid"])
    r0, r1, r2 = [b for b in sorted(c.configs) if b != ctrl]  # the partition's brokers 0, 1, 2
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [r0, r1, r2]})
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send(TOPIC, "a", partition=0)
    assert _state(zk).leader == r0 and _state(zk).isr == (r0, r1, r2)

    asked: set[int] = set()
    for broker, isr_after, remaining in ((r2, (r0, r1), []), (r1, (r0,), []),
                                         (r0, (r0,), [[TOPIC, 0]])):
        seen = len(_elections(c, ctrl))
        resp = _ask_to_shut_down(c, zk, ctrl, broker)
        asked.add(broker)
        assert resp["remaining_leaderships"] == remaining
        # r0 leads alone: it cannot leave, and no broker that asked may replace it
        _isr_never_holds(zk, asked - {r0}, 3.0)
        assert _state(zk).isr == isr_after and _state(zk).leader == r0
        for e in _elections(c, ctrl)[seen:]:
            assert e["params"]["leader"] not in asked, e

    # then they stop, in the same order: the followers cleanly, r0 as abruptly as a crash
    # (it still leads), after which the partition has no leader rather than one that asked
    seen = len(_elections(c, ctrl))
    assert c.stop_broker(r2) == 0
    assert c.stop_broker(r1) == 0
    assert _state(zk).leader == r0 and _state(zk).isr == (r0,)
    assert c.stop_broker(r0) == 3
    wait_until(lambda: _state(zk).leader == -1, 15, "no leader once r0 is gone")
    assert _state(zk).isr == (r0,)  # kept for r0's return: no unclean election
    assert all(e["params"]["leader"] in (-1, r0) for e in _elections(c, ctrl)[seen:])
    followers_stopped = [e for e in trace_events(c.data_dir) if e["kind"] == "stop_replica"
                         and e["node"] in (r1, r2) and e.get("topic") == TOPIC]
    assert followers_stopped and not any(e["params"]["delete"] for e in followers_stopped)
    verdict = _judged(c)
    assert verdict["conforms"], verdict["reason"]
    zk.stop()


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_when_each_leader_asks_in_turn_the_lead_moves_only_to_brokers_that_have_not_asked(
        make_cluster: Any) -> None:
    """The partition assigned [2,1,0], so each broker asks while it leads: 2's shutdown moves
    the lead to 1, 1's (with 2 still up, still asking) to 0 -- never back to 2 -- and 0, alone
    in the ISR, keeps it.  The model judges the run's trace as one it allows."""
    c = make_cluster(4, min_insync_replicas=1)
    zk = c.zk_client()
    ctrl = int(zkl.decode(zk.get(zkl.CONTROLLER)[0])["brokerid"])
    r0, r1, r2 = [b for b in sorted(c.configs) if b != ctrl]
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [r2, r1, r0]})
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send(TOPIC, "a", partition=0)
    assert _state(zk).leader == r2 and _state(zk).isr == (r0, r1, r2)

    asked: set[int] = set()
    for broker, leader_after, isr_after in ((r2, r1, (r0, r1)), (r1, r0, (r0,)), (r0, r0, (r0,))):
        seen = len(_elections(c, ctrl))
        resp = _ask_to_shut_down(c, zk, ctrl, broker)
        asked.add(broker)
        assert resp["remaining_leaderships"] == ([[TOPIC, 0]] if broker == r0 else [])
        _isr_never_holds(zk, asked - {r0}, 3.0)
        assert (_state(zk).leader, _state(zk).isr) == (leader_after, isr_after)
        for e in _elections(c, ctrl)[seen:]:
            assert e["params"]["leader"] not in asked, e
    stopped = {e["node"] for e in trace_events(c.data_dir) if e["kind"] == "stop_replica"
               and e.get("topic") == TOPIC and e["params"]["delete"] is False}
    assert {r1, r2} <= stopped, "each old leader, now a follower that asked, gets StopReplica"
    verdict = _judged(c)
    assert verdict["conforms"], verdict["reason"]
    zk.stop()
