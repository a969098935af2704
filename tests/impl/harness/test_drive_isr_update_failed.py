"""``epochal drive`` runs the model's ``isr_update_failed`` on real brokers (seed 000,
question 3): a leader whose zk_version a controller's election has moved past attempts its
conditional ISR write, the write fails, and the leader stops acting as leader.  The
controller's LeaderAndISR to it is held by the relay meanwhile, so the leader learns of the
election only through its own write failing.  Then the stepped-down leader refuses the
LeaderAndISR of its old epoch that a controller failover sent it before the election (the
finding of docs/conformance.md, "A stepped-down leader took its old epoch again")."""

from __future__ import annotations

from pathlib import Path

import pytest
from path_choosers import fetch_of, given, leader_and_isr_to

from impl.harness.drive import OPERATIONS, Driver, DriveReport, ModelRun
from impl.harness.drive.operations import isr_write_attempt
from impl.harness.drive.paths import step_of
from model.config import named
from model.registry import apply
from model.state import State, initial

# Broker 1 crashes; the controller (broker 0, also the leader) takes it out of the ISR at a
# new leader epoch, and its LeaderAndISR to itself is held.  The leader, still at the old
# zk_version, tries to take the follower out of the ISR too: the write fails, and it stops
# serving the partition (the operation asks it, with a consumer's fetch).
TWO_BROKERS = ModelRun("isr_update_failed", [
    ("broker_crash", given(1)), ("elect_leader", given(0, 0, 0)), ("isr_update_failed", given(0, 0)),
], brokers=2)

# The same, but broker 1 fetched at the leader's LEO before it crashed: the leader has no
# change to propose (a follower at its LEO never lags), so only the harness-only isr_write_as_is
# makes it attempt the write.
NO_CHANGE = ModelRun("isr_update_failed with no change to propose", [
    ("send_fetch", given(1, 0)), ("handle_fetch", fetch_of(1)), ("broker_crash", given(1)),
    ("elect_leader", given(0, 0, 0)), ("isr_update_failed", given(0, 0)),
], brokers=2)

# Broker 1 leads (epoch 2) under controller 2.  Controller 2 crashes and broker 0 takes over:
# its failover sends broker 1 the partition as it stands (leader 1, epoch 2), held by the
# relay; its election for broker 2 then writes epoch 3, the LeaderAndISR of which waits in
# the channel behind the failover's.  Broker 1's ISR write fails and it steps down.  Then
# the epoch-3 LeaderAndISR is delivered, the failover's first (the model has forgotten that
# one: stale at once): the stepped-down leader must refuse epoch 2, and lead again at 3.
AFTER_A_FAILOVER = ModelRun("isr_update_failed after a failover", [
    ("broker_crash", given(0)), ("controller_elect", given(2)), ("elect_leader", given(2, 0, 1)),
    ("become_leader", leader_and_isr_to(1)), ("broker_restart", given(0)), ("on_broker_startup", given(2, 0)),
    ("broker_crash", given(2)), ("controller_elect", given(0)), ("elect_leader", given(0, 0, 1)),
    ("isr_update_failed", given(1, 0)), ("become_leader", leader_and_isr_to(1)),
], brokers=3)


def _model_run(run: ModelRun) -> list[tuple[State, State]]:
    """The run's steps in the model: every one enabled."""
    cfg = named("kip320", brokers=run.brokers)
    s, out = initial(cfg), []
    for action, choose in run.steps:
        step = step_of(action, choose, s)
        t = apply(s, cfg, step) if step is not None else None
        assert t is not None, action
        out.append((s, t))
        s = t
    return out


def test_the_leader_is_made_to_attempt_the_shrink_its_dead_follower_calls_for() -> None:
    """The write the driver asks for is the one the implementation would make on its own
    (the follower that never fetched in this term lags), not the harness-only one."""
    for run, leader, lagging in ((TWO_BROKERS, 0, 1), (AFTER_A_FAILOVER, 1, 2)):
        cfg = named("kip320", brokers=run.brokers)
        s, t = _model_run(run)[[a for a, _ in run.steps].index("isr_update_failed")]
        assert isr_write_attempt(s, cfg, leader, 0) == ("shrink_isr", lagging)
        assert s.zk.partitions[0].zk_version != s.brokers[leader].replicas[0].zk_version
        assert t.brokers[leader].replicas[0].role != s.brokers[leader].replicas[0].role


def test_a_leader_with_no_change_to_propose_is_given_the_harness_only_write() -> None:
    """The model lets a leader behind ZooKeeper fail its write whether or not it has a change
    to make; with its follower caught up it has none, and the driver grants ``isr_write_as_is``."""
    cfg = named("kip320", brokers=2)
    s, _ = _model_run(NO_CHANGE)[-1]
    assert isr_write_attempt(s, cfg, 0, 0) == ("isr_write_as_is", None)


def _drive(run: ModelRun, tmp_path: Path) -> DriveReport:
    assert "isr_update_failed" in OPERATIONS
    report = Driver("kip320", data_dir=tmp_path / "cluster").run(run)
    assert report.verdict == "followed" and report.exit_code == 0, report.divergence
    assert [s.action for s in report.steps if s.n] == [a for a, _ in run.steps]
    return report


def _failed(report: DriveReport) -> list[str]:
    step = next(s for s in report.steps if s.action == "isr_update_failed")
    return [e for e in step.events if e.startswith("isr_update_failed by broker")]


@pytest.mark.integration
def test_a_leader_behind_zookeeper_fails_its_isr_write_and_steps_down_on_real_brokers(tmp_path: Path) -> None:
    report = _drive(TWO_BROKERS, tmp_path)
    assert len(_failed(report)) == 1 and "'expected_zk_version': 0" in _failed(report)[0]
    # the failed write changed nothing: ZooKeeper holds the controller's election
    last = report.steps[-1].zookeeper
    assert last["leader"] == 0 and last["isr"] == [0]


@pytest.mark.integration
@pytest.mark.slow
def test_a_leader_with_no_change_to_propose_fails_the_harness_only_write_and_steps_down(tmp_path: Path) -> None:
    report = _drive(NO_CHANGE, tmp_path)
    assert len(_failed(report)) == 1 and "'isr': [0, 1]" in _failed(report)[0]  # the ISR as it stood
    assert report.steps[-1].operation.startswith("permit(") and report.steps[-1].zookeeper["isr"] == [0]


@pytest.mark.integration
@pytest.mark.slow
def test_a_leader_that_stepped_down_refuses_the_failovers_leader_and_isr_of_its_old_epoch(tmp_path: Path) -> None:
    report = _drive(AFTER_A_FAILOVER, tmp_path)
    assert len(_failed(report)) == 1
    last = report.steps[-1]
    refused = [e for e in last.events if e.startswith("reject_leader_and_isr by broker 1")]
    taken = [e for e in last.events if e.startswith("become_leader by broker 1")]
    assert refused and len(taken) == 1, last.events
    inserted = [s for s in report.steps if s.outcome == "inserted"]
    assert inserted and all(s.action == "leader_and_isr" for s in inserted)
