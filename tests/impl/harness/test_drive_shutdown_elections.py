"""No election picks a broker in controlled shutdown -- driven on real brokers.

Broker 1 asks to stop (``controlled_shutdown``): the controller takes it out of the ISR and
notes it as shutting down.  A reassignment to RAR (1, 2) then sends it LeaderAndISR (Kafka
sends one to every replica a reassignment names, shutting down or not), so it fetches again
and its leader puts it back into the ISR -- still shutting down.  Three elections follow
while it is, each of which would pick broker 1 were it electable:

* the **reassignment's**: the leader (0) leaves, and broker 1 is RAR's first member; the model
  and Kafka's ``reassignPartitionLeaderElection`` (live replicas without those shutting
  down) elect broker 2;
* a **preferred-replica election**: broker 1 is now the preferred replica (AR (1, 2)), in the
  ISR and alive; the controller declines -- nothing is written;
* the **crash** of the leader (2): broker 1 is the only live ISR member; no clean leader is
  left, and the partition stays leaderless rather than led by a broker on its way out.

One run, each election its own step: with any of the three exclusions removed, the run
diverges at that election's step."""

from __future__ import annotations

from pathlib import Path

import pytest
from path_choosers import fetch_of, given, leader_and_isr_to, stop_replica_to

from impl.harness.drive import Driver, ModelRun
from impl.harness.drive.paths import step_of
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import NO_LEADER, State, initial

KNOBS = {"max_shutdowns": 1, "reassignments": 1, "preferred_elections": 1, "max_epoch": 4}
STOPPING = 1  # the broker in controlled shutdown throughout







ELECTIONS = ("reassign_complete", "preferred_election", "elect_leader")

SHUTTING_DOWN_RUN = ModelRun("elections_while_shutting_down", [
    # broker 1 shuts down: out of the ISR, StopReplica without delete
    ("controlled_shutdown", given(0, 0, STOPPING, 0)), ("become_leader", leader_and_isr_to(0)), ("become_follower", leader_and_isr_to(2)),
    ("stop_replica", stop_replica_to(STOPPING)),
    # a reassignment names it: it follows again and its leader takes it back into the ISR
    ("reassign_start", given(0, 0, (1, 2))), ("become_follower", leader_and_isr_to(STOPPING)), ("truncate", given(1, 0)),
    ("send_fetch", given(1, 0)), ("handle_fetch", fetch_of(1)), ("expand_isr", given(0, 0, 1)),
    # the three elections, broker 1 still shutting down and in the ISR
    ("reassign_complete", given(0, 0, 2)), ("become_leader", leader_and_isr_to(2)), ("become_follower", leader_and_isr_to(STOPPING)),
    ("preferred_election", given(0, 0)),
    ("broker_crash", given(2)), ("elect_leader", given(0, 0, NO_LEADER)),
], brokers=3)


def _model_states() -> list[tuple[str, State, State]]:
    cfg = named("kip320", brokers=3, **KNOBS)
    s, out = initial(cfg), []
    for action, choose in SHUTTING_DOWN_RUN.steps:
        step = step_of(action, choose, s)
        assert step is not None, action
        t = apply(s, cfg, step)
        assert t is not None, step
        out.append((action, s, t))
        s = t
    return out


def test_each_election_happens_while_broker_1_is_shutting_down_and_in_the_isr() -> None:
    taken = [(s, t) for action, s, t in _model_states() if action in ELECTIONS]
    assert len(taken) == len(ELECTIONS)
    for s, _ in taken:
        zn = s.zk.partitions[0]
        assert s.brokers[0].shutting_down == (STOPPING,) and STOPPING in zn.isr and STOPPING in s.zk.live
    (_, switched), (before, after), (_, crashed) = taken
    assert switched.zk.partitions[0].leader == 2  # RAR (1, 2): not its first member, 1
    assert before.zk.partitions[0].ar[0] == STOPPING and after == before  # declined: nothing written
    assert crashed.zk.partitions[0].leader == NO_LEADER


def test_the_model_lets_no_election_choose_the_broker_shutting_down() -> None:
    cfg = named("kip320", brokers=3, **KNOBS)
    states = {action: s for action, s, _ in _model_states() if action in ELECTIONS}
    assert apply(states["reassign_complete"], cfg, Step("reassign_complete", (0, 0, STOPPING))) is None
    assert apply(states["elect_leader"], cfg, Step("elect_leader", (0, 0, STOPPING))) is None


@pytest.mark.integration  # about 11 s: in the default suite, as the zombie run is
def test_no_election_on_real_brokers_picks_a_broker_in_controlled_shutdown(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "cluster", knobs=KNOBS).run(SHUTTING_DOWN_RUN)
    d = report.divergence or {}
    assert report.verdict == "followed" and report.exit_code == 0, \
        f"step {d.get('step')} {d.get('action')}: {d.get('implementation_did')}; the model allowed: {d.get('model_allowed')}"
    done = [s.action for s in report.steps if s.outcome == "followed"]
    assert all(a in done for a in ELECTIONS)
