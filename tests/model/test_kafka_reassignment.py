"""Kafka's reassignment in phases (``Config.reassign_phases``, every Kafka configuration):
KIP-455's ``onPartitionReassignment`` in ZooKeeper mode bumps the leader epoch as the move
starts, completes it with the ISR kept, and takes the removed replicas out of the ISR by a
write of their own, which ends the move -- three leader epochs where seed 000 F has one
(the Divergences table of docs/kafka.md, a real run in
``tests/conformance/kafka/fixtures/reassign-39``)."""

from __future__ import annotations

import pytest

from model.actions import reassign_complete
from model.config import named
from model.registry import Step, apply
from model.state import FETCH_REQUEST, LeaderAndIsr, State, StopReplica, initial
from properties.checkers.bfs import check
from properties.safety import all_violations
from tests.pinned import pinned

# 3 brokers, partition 0 assigned to {0,1} led by 0; broker 2 holds no replica
KAFKA = named("kafka26", brokers=3, replication_factor=2, records=2, reassignments=1, max_epoch=4)
SEED = named("kip320", brokers=3, replication_factor=2, records=2, reassignments=1)


def _step(s: State, cfg, name: str, *args) -> State:
    t = apply(s, cfg, Step(name, args))
    assert t is not None, f"{name}{args} not enabled"
    assert not all_violations(s, t), all_violations(s, t)
    return t


def _lai(s: State, to: int, epoch: int) -> LeaderAndIsr:
    return next(m for m in s.leader_and_isr if m.to == to and m.leader_epoch == epoch)


def _started(cfg) -> State:
    """The move of {0,1} (led by 0) to {1,2} started."""
    return _step(initial(cfg), cfg, "reassign_start", 0, 0, (1, 2))


def _caught_up(s: State, cfg) -> State:
    """The leader takes the start's LeaderAndISR if it was sent one (Kafka's new epoch), the
    new replica 2 takes its own, fetches and joins the ISR."""
    epoch = s.zk.partitions[0].leader_epoch
    if any(m.to == 0 and m.leader_epoch == epoch for m in s.leader_and_isr):
        s = _step(s, cfg, "become_leader", _lai(s, 0, epoch))
    s = _step(s, cfg, "become_follower", _lai(s, 2, epoch))
    s = _step(s, cfg, "truncate", 2, 0)
    s = _step(s, cfg, "send_fetch", 2, 0)
    s = _step(s, cfg, "handle_fetch", next(m for m in s.fetches if m.kind == FETCH_REQUEST and m.follower == 2))
    return _step(s, cfg, "expand_isr", 0, 0, 2)


def test_kafkas_start_bumps_the_leader_epoch_and_tells_every_replica() -> None:
    s, zb = _started(KAFKA), initial(KAFKA).zk.partitions[0]
    zn = s.zk.partitions[0]
    assert (zn.leader, zn.leader_epoch, zn.isr, zn.zk_version) == (0, zb.leader_epoch + 1, (0, 1), zb.zk_version + 1)
    assert (zn.ar, zn.rar) == ((0, 1, 2), (1, 2))
    assert {m.to for m in s.leader_and_isr if m.leader_epoch == zn.leader_epoch} == {0, 1, 2}
    seed = _started(SEED).zk.partitions[0]
    assert (seed.leader_epoch, seed.zk_version) == (zb.leader_epoch, zb.zk_version), "seed 000 F: no write"


def test_a_target_already_in_the_isr_starts_without_an_epoch() -> None:
    """A shrink (or a reordering) is complete at once: Kafka goes straight to the completion."""
    s = _step(initial(KAFKA), KAFKA, "reassign_start", 0, 0, (0,))
    zn = s.zk.partitions[0]
    assert (zn.leader_epoch, zn.rar) == (initial(KAFKA).zk.partitions[0].leader_epoch, (0,))
    assert s.leader_and_isr == initial(KAFKA).leader_and_isr


def test_the_completion_keeps_the_isr_and_the_removal_is_a_write_of_its_own() -> None:
    s = _caught_up(_started(KAFKA), KAFKA)
    assert reassign_complete(s, KAFKA, 0, 0, 0) is None, "0 is removed: it cannot stay leader"
    s = _step(s, KAFKA, "reassign_complete", 0, 0, 1)
    zn = s.zk.partitions[0]
    first = initial(KAFKA).zk.partitions[0].leader_epoch  # the start made first + 1
    assert (zn.leader, zn.leader_epoch, zn.isr, zn.ar, zn.rar) == (1, first + 2, (0, 1, 2), (0, 1, 2), (1, 2))
    assert {m.to for m in s.leader_and_isr if m.leader_epoch == first + 2} == {1, 2} and not s.stop_replica
    s = _step(s, KAFKA, "elect_leader", 0, 0, 1, 0)  # Kafka's OfflineReplica transition of 0
    zn = s.zk.partitions[0]
    assert (zn.leader, zn.leader_epoch, zn.isr, zn.ar, zn.rar) == (1, first + 3, (1, 2), (1, 2), ())
    assert s.stop_replica == (StopReplica(0, 0, first + 3, s.zk.controller_epoch),)
    assert {m.to for m in s.leader_and_isr if m.leader_epoch == first + 3} == {1, 2}


def test_the_seed_completes_in_one_write() -> None:
    s = _caught_up(_started(SEED), SEED)
    t = reassign_complete(s, SEED, 0, 0, 1)
    assert t is not None
    zn = t.zk.partitions[0]
    assert (zn.leader_epoch, zn.isr, zn.ar, zn.rar) == (initial(SEED).zk.partitions[0].leader_epoch + 1, (1, 2), (1, 2), ())


def test_a_move_that_only_adds_ends_with_its_completion() -> None:
    """Nothing to take out of the ISR: Kafka writes the target alone right after."""
    s = _step(initial(KAFKA), KAFKA, "reassign_start", 0, 0, (0, 1, 2))
    s = _step(_caught_up(s, KAFKA), KAFKA, "reassign_complete", 0, 0, 0)
    zn = s.zk.partitions[0]
    assert (zn.isr, zn.ar, zn.rar) == ((0, 1, 2), (0, 1, 2), ()) and not s.stop_replica


def test_no_removal_write_before_the_target_leads() -> None:
    """The removed replicas leave the ISR only once the completion moved the leader into RAR."""
    s = _caught_up(_started(KAFKA), KAFKA)
    assert apply(s, KAFKA, Step("elect_leader", (0, 0, 0))) is None
    assert all(apply(s, KAFKA, Step("elect_leader", (0, 0, leader, 0))) is None for leader in (-1, 0, 1))


@pytest.mark.slow
def test_exhaustive_check_of_kafkas_phases_holds_every_property() -> None:
    """The small bounds of ``test_reassignment.py``'s exhaustive check (2 brokers, partition
    on {0}, two records, one crash, one reassignment) with Kafka's phases: every property
    holds, in more states than without them.  Measured: 108,159 states, about 20 s of CPU."""
    cfg = named("kip320", brokers=2, replication_factor=1, records=2, max_crashes=1, reassignments=1,
                reassign_phases=True)
    r = check(cfg)
    assert r.holds, r.violation and r.violation.text()
    without = pinned("kip320", "two brokers, replication factor 1, one crash, one reassignment", "states")
    assert r.states > without, "the phases add states: the epoch of the start, the removal's own write"
