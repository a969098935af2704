"""ISR changes through the controller (``model.actions.controller_isr``, the ``kafka39``
configuration): the leader proposes, the controller validates and writes, the leader applies
only the answer; the controller refuses a stale, fenced or ineligible proposal (KIP-841); the
leader's HW waits for the ISR it proposed (Kafka's maximal ISR), and without that rule the
checker finds an acknowledged write lost."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.actions import replication
from model.actions.common import replica
from model.config import named
from model.registry import Step, apply, explored
from model.state import (
    ALTER_REQUEST,
    ALTER_RESPONSE,
    FENCED_LEADER_EPOCH,
    FOLLOWER,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    LEADER,
    NONE,
    OK,
    STALE_BROKER_EPOCH,
    AlterPartition,
    State,
    initial,
)
from properties.checkers.bfs import check
from tests.pinned import pinned

CFG = named("kafka39", brokers=3, records=1, max_crashes=1)


def _step(s: State, action: str, *args: object) -> State:
    t = apply(s, CFG, Step(action, tuple(args)))
    assert t is not None, f"{action}{args} is not enabled"
    return t


def _only(s: State, kind: int) -> AlterPartition:
    [m] = [m for m in s.alter_partition if m.kind == kind]
    return m


def _fetch(s: State, f: int, receive: bool = True) -> State:
    """Follower f's fetch from leader 0: sent and handled, and its answer read if ``receive``."""
    s = _step(s, "send_fetch", f, 0)
    s = _step(s, "handle_fetch", next(m for m in s.fetches if m.follower == f))
    return _step(s, "receive_fetch", next(m for m in s.fetches if m.follower == f)) if receive else s


def _lagging() -> State:
    """Broker 0 leads p0 with ISR {0,1,2} and one record, which broker 1 has fetched and
    broker 2 has not: the HW waits for 2."""
    s = _step(initial(CFG), "produce", 0, 0)
    return _fetch(_fetch(s, 1), 1)


def test_the_leader_writes_no_isr_itself_under_alter_partition() -> None:
    s = _lagging()
    assert apply(s, CFG, Step("shrink_isr", (0, 0, 2))) is None
    kip320 = replace(CFG, alter_partition=0)
    assert apply(s, kip320, Step("shrink_isr", (0, 0, 2))) is not None
    assert {"propose_isr", "alter_partition", "apply_isr"} <= {e.name for e in explored(CFG)}
    assert not {"propose_isr", "alter_partition", "apply_isr"} & {e.name for e in explored(named("kip320"))}


def test_a_proposal_is_written_by_the_controller_and_applied_from_its_answer_only() -> None:
    s = _step(_lagging(), "propose_isr", 0, 0, 2)
    req = _only(s, ALTER_REQUEST)
    assert (req.isr, req.leader_epoch, req.zk_version) == ((0, 1), 1, 0)
    assert s.zk.partitions[0].isr == (0, 1, 2) and replica(s, 0, 0).isr == (0, 1, 2)
    assert apply(s, CFG, Step("propose_isr", (0, 0, 2))) is None, "one proposal at a time"
    s = _step(s, "alter_partition", 0, req)
    assert (s.zk.partitions[0].isr, s.zk.partitions[0].zk_version, s.zk.partitions[0].leader_epoch) == ((0, 1), 1, 1)
    assert replica(s, 0, 0).isr == (0, 1, 2), "the leader has not read the answer yet"
    answer = _only(s, ALTER_RESPONSE)
    assert (answer.error, answer.isr, answer.zk_version) == (OK, (0, 1), 1)
    s = _step(s, "apply_isr", answer)
    r = replica(s, 0, 0)
    assert (r.isr, r.zk_version, r.hw) == ((0, 1), 1, 1)  # the HW moves once 2 is out


def test_the_hw_waits_for_a_follower_the_leader_proposed_to_add() -> None:
    cfg = replace(CFG, records=2)
    s = _step(_lagging(), "propose_isr", 0, 0, 2)
    s = _step(s, "alter_partition", 0, _only(s, ALTER_REQUEST))
    s = _step(s, "apply_isr", _only(s, ALTER_RESPONSE))  # ISR {0,1}, HW 1
    s = _fetch(_fetch(s, 2), 2)  # broker 2 catches up to the HW
    s = _step(s, "propose_isr", 0, 0, 2)
    assert _only(s, ALTER_REQUEST).isr == (0, 1, 2)
    s = apply(s, cfg, Step("produce", (0, 0)))
    assert s is not None
    s = _fetch(_fetch(s, 1), 1)  # 1 has both records
    assert replica(s, 0, 0).isr == (0, 1) and replica(s, 0, 0).hw == 1, "the HW waits for 2, proposed to the ISR"


@pytest.mark.parametrize(("change", "error"), [
    ("version", INVALID_UPDATE_VERSION),
    ("epoch", FENCED_LEADER_EPOCH),
    ("broker_epoch", STALE_BROKER_EPOCH),
])
def test_the_controller_refuses_a_stale_proposal_and_the_leader_keeps_leading(change: str, error: int) -> None:
    s = _step(_lagging(), "propose_isr", 0, 0, 2)
    req = _only(s, ALTER_REQUEST)
    stale = {"version": req._replace(zk_version=7), "epoch": req._replace(leader_epoch=0),
             "broker_epoch": req._replace(broker_epoch=9)}[change]
    s = s._replace(alter_partition=(stale,))
    t = _step(s, "alter_partition", 0, stale)
    assert t.zk == s.zk, "nothing written"
    answer = _only(t, ALTER_RESPONSE)
    assert answer.error == error
    u = _step(t, "apply_isr", answer)
    assert replica(u, 0, 0).role == LEADER and replica(u, 0, 0).isr == (0, 1, 2)
    assert not u.alter_partition


def test_a_broker_shutting_down_never_rejoins_the_isr() -> None:
    """KIP-841: the controller refuses an ISR naming a broker it knows to be shutting down."""
    cfg = replace(CFG, max_shutdowns=1)
    s = initial(cfg)
    s = apply(s, cfg, Step("controlled_shutdown", (0, 0, 2, 0)))
    assert s is not None and 2 not in s.zk.partitions[0].isr and 2 in s.brokers[0].shutting_down
    zn = s.zk.partitions[0]  # the leader proposes once it took the controller's new epoch
    proposal = AlterPartition(ALTER_REQUEST, 0, 0, zn.leader_epoch, (0, 1, 2), zn.zk_version, s.brokers[0].broker_epoch)
    t = apply(s._replace(alter_partition=(proposal,)), cfg, Step("alter_partition", (0, proposal)))
    assert t is not None and _only(t, ALTER_RESPONSE).error == INELIGIBLE_REPLICA
    assert t.zk.partitions[0] == s.zk.partitions[0]


def test_a_dead_broker_is_ineligible_too() -> None:
    s = _step(initial(CFG), "broker_crash", 2)
    zn = s.zk.partitions[0]
    proposal = AlterPartition(ALTER_REQUEST, 0, 0, zn.leader_epoch, (0, 2), zn.zk_version, s.brokers[0].broker_epoch)
    t = _step(s._replace(alter_partition=(proposal,)), "alter_partition", 0, proposal)
    assert _only(t, ALTER_RESPONSE).error == INELIGIBLE_REPLICA and t.zk == s.zk


def test_kafka39_holds_every_property_at_small_bounds() -> None:
    r = check(named("kafka39", records=1, max_crashes=1))
    assert r.holds, r.violation
    assert r.states == pinned("kafka39", "one record, one crash", "states")


def test_without_the_maximal_isr_the_checker_finds_a_committed_record_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deliberately broken rule: the leader's HW over its committed ISR only, ignoring a
    follower it proposed to add.  The controller writes the larger ISR, the leader dies, the
    follower that never had the record is elected."""
    monkeypatch.setattr(replication, "maximal_isr", lambda s, b, p, r: r.isr)
    r = check(named("kafka39", records=1, max_crashes=1))
    assert r.violation is not None
    assert r.violation.property == "committed_durable"
    assert len(r.violation.steps) == pinned("kafka39", "one record, one crash, HW over the committed ISR only",
                                            "counterexample steps")
    actions = [step.action for step, _ in r.violation.steps]
    assert "alter_partition" in actions and "broker_crash" in actions
    assert actions.index("produce") < max(i for i, a in enumerate(actions) if a == "alter_partition")


def test_a_restarted_broker_waits_for_the_controller_with_its_checkpointed_hw() -> None:
    """Kafka's broker start (``startup_from_controller``): no partition state read from
    ZooKeeper; the controller's startup LeaderAndISR, of the epoch the broker's log already
    knows, is applied; the HW is the checkpoint's, at most the one it had."""
    s = _fetch(_fetch(_fetch(_lagging(), 2), 2), 1)  # every replica has the record, the HW is 1
    assert replica(s, 1, 0).hw == 1
    s = _step(s, "broker_crash", 1)
    assert apply(s, CFG, Step("broker_restart", (1,))) is None
    t = _step(s, "broker_restart", 1, 0)
    r = replica(t, 1, 0)
    assert (r.role, r.hw, r.leo, r.leader_epoch) == (NONE, 0, 1, 1)
    t = _step(t, "on_broker_startup", 0, 1)
    [m] = [m for m in t.leader_and_isr if m.to == 1]
    assert m.leader_epoch == r.leader_epoch
    t = _step(t, "become_follower", m)
    assert replica(t, 1, 0).role == FOLLOWER and replica(t, 1, 0).leader == 0
    kip320 = named("kip320", brokers=3, records=1, max_crashes=1)
    u = apply(s, kip320, Step("broker_restart", (1,)))
    assert u is not None and replica(u, 1, 0).role == FOLLOWER, "seed 000 E: the broker reads ZooKeeper itself"
