"""Controlled shutdown as Kafka 2.7 does it, in the model.

* The controller remembers which brokers asked to shut down (``Broker.shutting_down``,
  Kafka's ``shuttingDownBrokerIds``) and no election chooses one of them.
* A shutting-down follower gets StopReplica without delete instead of LeaderAndISR: it stops
  fetching, so its leader cannot put it back into the ISR it has just left.

The story that keeps the last replica leading: brokers 2, then 1, then 0 of a [0,1,2] partition shut down.
"""

from __future__ import annotations

import random

import pytest

from model.actions import Step, shutting_down
from model.config import named
from model.registry import apply, successors
from model.state import FOLLOWER, NONE, initial

THREE = named("kip320", brokers=3, max_crashes=0, max_shutdowns=3, max_epoch=8)


def _step(cfg, s, action, *args):
    t = apply(s, cfg, Step(action, args))
    assert t is not None, (action, args)
    return t


def _deliver_all(cfg, s):
    """Deliver every pending StopReplica, and every LeaderAndISR its addressee accepts."""
    for m in list(s.stop_replica):
        s = _step(cfg, s, "stop_replica", m)
    for m in list(s.leader_and_isr):
        for action in ("become_leader", "become_follower"):
            t = apply(s, cfg, Step(action, (m,)))
            if t is not None:
                s = t
                break
    return s


def _new_leaders(s, cfg):
    """(step, new leader) of every enabled step that writes a new leader to ZooKeeper."""
    out = []
    for step, t in successors(s, cfg):
        zb, za = s.zk.partitions[0], t.zk.partitions[0]
        if za.leader != zb.leader and za.leader >= 0:
            out.append((step, za.leader, shutting_down(t)))
    return out


@pytest.mark.parametrize("order", [(2, 1, 0), (0, 2, 1), (1, 0, 2)])
def test_brokers_shut_down_one_after_another_and_none_that_asked_is_ever_elected(order) -> None:
    """The issue's story (2, then 1, then 0 of a [0,1,2] partition led by 0), and orders in
    which the leader asks first, so that later shutdowns must move the lead again: at every
    point, no enabled step writes a leader that has asked; each shutdown that can move takes
    its broker out of the ISR; the last in-sync replica stays (it cannot leave)."""
    cfg = THREE
    s = initial(cfg)  # leader 0, ISR [0,1,2]; broker 0 is also the controller
    for b in order:
        for step, leader, asked in _new_leaders(s, cfg):
            assert leader not in asked, (step, leader, asked)
        moves = [st.args for st, _ in successors(s, cfg) if st.action == "controlled_shutdown" and st.args[2] == b]
        zn = s.zk.partitions[0]
        assert bool(moves) == (b in zn.isr and len(zn.isr) > 1)
        for args in moves:
            assert args[3] not in (*shutting_down(s), b)
        if moves:
            s = _deliver_all(cfg, _step(cfg, s, "controlled_shutdown", *moves[0]))
            assert b not in s.zk.partitions[0].isr and b in shutting_down(s)
    zn = s.zk.partitions[0]
    assert zn.isr == (zn.leader,) == (order[-1],)


def test_a_shutting_down_follower_gets_stop_replica_not_leader_and_isr_and_does_not_rejoin() -> None:
    cfg = THREE
    s = initial(cfg)  # leader 0, ISR [0,1,2]
    t = _step(cfg, s, "controlled_shutdown", 0, 0, 2, 0)
    zn = t.zk.partitions[0]
    assert (zn.leader, zn.leader_epoch, zn.isr) == (0, 2, (0, 1))
    sent = {m.to for m in t.leader_and_isr if m.leader_epoch == 2}
    assert sent == {0, 1}, "no LeaderAndISR to the broker shutting down"
    [stop] = t.stop_replica
    assert (stop.to, stop.delete, stop.leader_epoch) == (2, False, 2)
    u = _deliver_all(cfg, t)
    r = u.brokers[2].replicas[0]
    assert r.role == NONE and r.log == s.brokers[2].replicas[0].log, "stopped, log kept"
    assert apply(u, cfg, Step("send_fetch", (2, 0))) is None
    assert apply(u, cfg, Step("expand_isr", (0, 0, 2))) is None
    assert u.brokers[1].replicas[0].role == FOLLOWER


def test_a_stopped_broker_is_no_longer_shutting_down_and_may_lead_again_after_it_returns() -> None:
    cfg = THREE
    s = _deliver_all(cfg, _step(cfg, initial(cfg), "controlled_shutdown", 0, 0, 2, 0))
    s = _step(cfg, s, "broker_stop", 2)
    assert shutting_down(s) == ()
    s = _step(cfg, s, "broker_restart", 2)
    assert 2 not in shutting_down(s)


def test_a_new_controller_starts_with_nobody_shutting_down() -> None:
    cfg = named("kip320", brokers=3, max_crashes=1, max_shutdowns=1)
    s = _step(cfg, initial(cfg), "controlled_shutdown", 0, 0, 2, 0)
    assert shutting_down(s) == (2,)
    s = _step(cfg, s, "broker_crash", 0)  # the controller dies; broker 2 asks the next one again
    s = _step(cfg, s, "controller_elect", 1)
    assert shutting_down(s) == ()


def test_random_runs_with_every_broker_shutting_down_never_elect_one_that_asked() -> None:
    """Seeded walks through the three-broker model with three shutdowns (the whole space is
    beyond a test): every step that writes a new leader chooses a broker that has not asked
    to stop."""
    cfg = named("kip320", brokers=3, records=1, max_crashes=1, max_shutdowns=3, max_epoch=8)
    rng = random.Random(20)
    elections = 0
    for _ in range(600):
        s = initial(cfg)
        for _ in range(40):
            options = list(successors(s, cfg))
            if not options:
                break
            step, t = options[rng.randrange(len(options))]
            zb, za = s.zk.partitions[0], t.zk.partitions[0]
            if za.leader != zb.leader and za.leader >= 0:
                elections += 1
                assert za.leader not in shutting_down(t), (step, za.leader, shutting_down(t))
            s = t
    assert elections > 400
