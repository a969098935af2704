"""Preferred-replica election in the model (``model.actions.preferred_election``): the controller
moves leadership back to the first assigned replica -- the lowest broker id, the model's AR
being sorted -- only when that replica is alive and in the ISR, by a conditional write with
leader_epoch + 1 and LeaderAndISR to the assigned replicas, as the implementation's
``impl.node.controller.preferred_election`` does.  Bounded by ``--preferred-elections``
(default 0), so every named configuration keeps its state space."""

from __future__ import annotations

import random

from conformance.judge.replay import events_from_steps, judge
from model.actions import Step
from model.config import named
from model.registry import apply, explored, successors
from model.state import State, initial
from properties.checkers.bfs import SearchOptions, check

CFG = named("kip320", max_crashes=1, records=1, preferred_elections=1)


def _leader_moved_off_broker_0(cfg=CFG) -> State:
    """Broker 0 (the preferred replica) crashes, 1 is elected, 0 comes back as its follower
    and is taken back into the ISR: leadership has drifted away from the preferred replica."""
    s = initial(cfg)
    for step in [Step("broker_crash", (0,)), Step("controller_elect", (1,)), Step("elect_leader", (1, 0, 1)),
                 Step("broker_restart", (0,))]:
        s = apply(s, cfg, step)
    request = next(m for m in s.leader_and_isr if m.to == 1 and m.leader == 1)
    s = apply(s, cfg, Step("become_leader", (request,)))
    s = apply(s, cfg, Step("truncate", (0, 0)))  # nothing to cut: it starts fetching
    s = apply(s, cfg, Step("send_fetch", (0, 0)))
    s = apply(s, cfg, Step("handle_fetch", (next(m for m in s.fetches if m.follower == 0),)))
    s = apply(s, cfg, Step("expand_isr", (1, 0, 0)))
    assert s.zk.partitions[0].leader == 1 and 0 in s.zk.partitions[0].isr
    return s


def test_the_preferred_replica_takes_the_lead_back_with_a_new_leader_epoch_and_the_same_isr() -> None:
    s = _leader_moved_off_broker_0()
    zb = s.zk.partitions[0]
    t = apply(s, CFG, Step("preferred_election", (1, 0)))
    assert t is not None
    zn = t.zk.partitions[0]
    assert (zn.leader, zn.leader_epoch, zn.isr, zn.zk_version) == (0, zb.leader_epoch + 1, zb.isr, zb.zk_version + 1)
    sent = set(t.leader_and_isr) - set(s.leader_and_isr)
    assert {m.to for m in sent} == set(zb.ar) and {(m.leader, m.leader_epoch) for m in sent} == {(0, zn.leader_epoch)}
    assert t.ghost.preferred_elections == 1


def test_a_preferred_replica_that_leads_is_down_out_of_the_isr_or_shutting_down_is_declined() -> None:
    """The controller takes the request and writes nothing: the step changes nothing (a
    self-loop no search takes), and it is not the controller's step at all elsewhere."""
    s = initial(CFG)
    assert apply(s, CFG, Step("preferred_election", (0, 0))) == s  # broker 0 already leads
    drifted = _leader_moved_off_broker_0()
    # broker 0's session gone, before the controller has taken it out of the ISR
    down = drifted._replace(zk=drifted.zk._replace(live=(1,)))
    assert apply(down, CFG, Step("preferred_election", (1, 0))) == down
    out = drifted._replace(zk=drifted.zk._replace(partitions=(drifted.zk.partitions[0]._replace(isr=(1,)),)))
    assert apply(out, CFG, Step("preferred_election", (1, 0))) == out
    # Kafka's preferredReplicaPartitionLeaderElection: live replicas, less those shutting down
    brokers = list(drifted.brokers)
    brokers[1] = brokers[1]._replace(shutting_down=(0,))
    stopping = drifted._replace(brokers=tuple(brokers))
    assert apply(stopping, CFG, Step("preferred_election", (1, 0))) == stopping
    assert apply(drifted, CFG, Step("preferred_election", (0, 0))) is None  # 0 is not the controller
    assert apply(drifted, CFG, Step("preferred_election", (1, 0))) not in (None, drifted)


def test_the_bound_counts_preferred_elections_and_defaults_to_none() -> None:
    s = _leader_moved_off_broker_0()
    assert apply(s, named("kip320", max_crashes=1, records=1), Step("preferred_election", (1, 0))) is None
    spent = s._replace(ghost=s.ghost._replace(preferred_elections=1))
    assert apply(spent, CFG, Step("preferred_election", (1, 0))) is None
    for name in ("design", "kip101", "kip279", "kip320", "unclean", "zombie"):
        assert "preferred_election" not in {e.name for e in explored(named(name))}
    assert "preferred_election" in {e.name for e in explored(CFG)}


def test_every_property_holds_with_one_preferred_election() -> None:
    result = check(CFG, SearchOptions(progress=None))
    assert result.holds and result.complete
    assert result.violation is None


def test_the_judge_accepts_exported_runs_with_preferred_elections() -> None:
    """Random runs of the model that take the action, exported as traces (the controller's
    ``elect_leader`` with reason ``preferred``), conform."""
    cfg = named("kip320", brokers=3, records=2, max_crashes=2, preferred_elections=2)
    taken = 0
    for seed in range(40):
        rnd = random.Random(seed)
        s, steps = initial(cfg), []
        for _ in range(40):
            options = list(successors(s, cfg))
            if not options:
                break
            preferred = [o for o in options if o[0].action == "preferred_election"]
            step, s = preferred[0] if preferred and rnd.random() < 0.7 else options[rnd.randrange(len(options))]
            steps.append(step)
        taken += sum(step.action == "preferred_election" for step in steps)
        events = events_from_steps(cfg, steps)
        verdict = judge(events, cfg.name)
        assert verdict["conforms"], verdict["reason"]
    assert taken > 0, "no walk took a preferred election"
