"""``epochal drive`` runs the model's admin actions on real brokers: a preferred-replica
election, a topic deleted (StopReplica to its live replicas) and created again under a new
topic id, a controlled shutdown and the clean stop after it -- each an admin client's request
to the controller, the broker's ControlledShutdown request, a SIGTERM, or the delivery of the
StopReplica the relay holds -- and judges every step of them as it judges the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from path_choosers import fetch_of, given, leader_and_isr_to, stop_replica_to

from impl.harness.cli.main import main
from impl.harness.drive import Driver, ModelRun, scenario
from impl.harness.drive.generate import controller_would_choose, outcome, search
from model.config import named
from model.registry import ACTIONS, apply
from model.state import initial

ADMIN = {"preferred_election", "delete_topic", "stop_replica", "create_topic", "controlled_shutdown", "broker_stop",
         "reassign_start", "reassign_complete"}
KNOBS = {"deletions": 1, "preferred_elections": 1, "max_shutdowns": 1, "reassignments": 1}







# Broker 1 leads after a failover, broker 0 comes back and into the ISR: the preferred
# election moves the leadership back to 0; then the topic is deleted (its LeaderAndISR still
# in flight: the channel delivers it first) and created again, and the new incarnation takes
# a write; then broker 0 shuts down in a controlled way (its leadership moves to 1, it gets
# StopReplica without delete) and stops; last, the partition is reassigned to broker 1 alone
# (the switch comes at the controller's admin scan, which the driver permits).  Every admin
# action of the model, 2 brokers, one cluster.
ADMIN_RUN = ModelRun("admin", [
    ("broker_crash", given(0)), ("controller_elect", given(1)), ("elect_leader", given(1, 0, 1)),
    ("become_leader", leader_and_isr_to(1)), ("broker_restart", given(0)), ("truncate", given(0, 0)),
    ("send_fetch", given(0, 0)), ("handle_fetch", fetch_of(0)), ("expand_isr", given(1, 0, 0)),
    ("preferred_election", given(1, 0)),
    ("delete_topic", given(1, 0)), ("stop_replica", stop_replica_to(0)), ("stop_replica", stop_replica_to(1)),
    ("create_topic", given(1, 0, (0, 1), 0)), ("become_leader", leader_and_isr_to(0)), ("become_follower", leader_and_isr_to(1)),
    ("produce", given(0, 0)), ("controlled_shutdown", given(1, 0, 0, 1)), ("stop_replica", stop_replica_to(0)),
    ("become_leader", leader_and_isr_to(1)), ("broker_stop", given(0)),
    ("reassign_start", given(1, 0, (1,))), ("reassign_complete", given(1, 0, 1)), ("become_leader", leader_and_isr_to(1)),
], brokers=2)


def test_the_admin_run_is_one_the_model_takes_to_its_end() -> None:
    cfg = named("kip320", brokers=2, **KNOBS)
    s = initial(cfg)
    for action, choose in ADMIN_RUN.steps:
        from impl.harness.drive.paths import step_of

        step = step_of(action, choose, s)
        assert step is not None, action
        t = apply(s, cfg, step)
        assert t is not None, step
        s = t
    zn = s.zk.partitions[0]
    assert zn.topic_id == 1 and s.brokers[0].replicas[0].log and zn.leader == 1 and zn.ar == (1,)


@pytest.mark.integration
@pytest.mark.slow  # the default suite keeps to about six minutes
def test_a_preferred_election_deletion_re_creation_controlled_shutdown_and_reassignment_follow_the_model(
        tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "cluster",
                    knobs=KNOBS).run(ADMIN_RUN)
    assert report.verdict == "followed" and report.exit_code == 0, report.divergence
    done = {s.action for s in report.steps if s.outcome in ("followed", "inserted")}
    assert ADMIN <= done


def _generated_pairs(cfg, max_states: int) -> set:
    cases, _, _ = search(cfg, max_states=max_states)
    for case in cases:  # each case ends in its pair, and only creations the controller would make
        s = initial(cfg)
        for step in case.steps:
            t = apply(s, cfg, step)
            assert t is not None and controller_would_choose(step, s)
            last = (step.action, outcome(step, s, t, cfg))
            s = t
        assert last == case.pair
    return {c.pair for c in cases}


def test_with_the_knobs_the_generated_cases_take_every_admin_action_the_driver_runs() -> None:
    driven = {name for name, e in ACTIONS.items() if e.coverage.driver.supported}
    assert ADMIN <= driven
    pairs = _generated_pairs(named("kip320", brokers=2, deletions=1, max_shutdowns=1, reassignments=1), 3000)
    assert ADMIN - {"preferred_election"} <= {a for a, _ in pairs}
    assert {("stop_replica", "deleted"), ("stop_replica", "stopped"), ("stop_replica", "refused"),
            ("controlled_shutdown", "moved"), ("controlled_shutdown", "stopped_only"),
            ("reassign_start", "taken"), ("reassign_complete", "taken")} <= pairs
    # a preferred election needs a leader moved off and its preferred replica back in sync
    # (10 steps): a deeper search, with that knob alone
    assert ("preferred_election", "taken") in _generated_pairs(named("kip320", brokers=2, preferred_elections=1),
                                                              10_000)
    plain = {c.pair for c in search(named("kip320", brokers=2), max_states=3000)[0]}
    assert not {a for a, _ in plain} & ADMIN  # without the knobs, none


def test_the_admin_knobs_are_checked_and_a_run_needing_one_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["drive", "--config", "kip320", "--scenario", "topic_recreation", "--deletions", "7"])
    err = capsys.readouterr().err
    assert code == 2 and "--deletions must be between 0 and 2" in err and len(err.strip().splitlines()) == 1
    code = main(["drive", "--config", "kip320", "--generate", "guided", "--budget", "5", "--deletions", "1"])
    assert code == 2 and "go with --scenario" in capsys.readouterr().err
    # a run whose admin action the configuration does not allow: bad input, no cluster started
    code = main(["drive", "--config", "kip320", "--scenario", "topic_recreation"])
    assert code == 2 and "action delete_topic needs --deletions 1" in capsys.readouterr().err


@pytest.mark.slow
def test_a_replica_down_while_its_topic_is_deleted_and_created_again_discards_its_old_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 000 question 5 with topic ids (KIP-516): broker 1 is down through the deletion
    and the re-creation; at its restart it recovers the new topic id and keeps nothing of
    the old incarnation -- the model's run to the step the model itself refuses."""
    code = main(["drive", "--config", "kip320", "--scenario", "topic_recreation", "--deletions", "1",
                 "--json", "--quiet", "--data-dir", str(tmp_path / "cluster")])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["outcome"] == "model_refused", report["divergence"]
    followed = [s["action"] for s in report["steps"] if s["outcome"] == "followed"]
    assert {"delete_topic", "stop_replica", "create_topic", "broker_restart"} <= set(followed)


@pytest.mark.integration
@pytest.mark.slow
def test_the_design_without_topic_ids_diverges_from_an_implementation_with_them_at_the_named_step(
        tmp_path: Path) -> None:
    """The model as seed 000 wrote it ("no partition version is needed": topic_ids off)
    keeps the restarted broker's log of the deleted incarnation; the implementation, which
    names every incarnation, does not -- a divergence that names the step, what the
    implementation did and what the model allowed."""
    report = Driver("kip320", data_dir=tmp_path / "cluster",
                    knobs={"deletions": 1, "topic_ids": False}).run(scenario("topic_recreation"))
    assert report.verdict == "diverged" and report.exit_code == 1
    d = report.divergence
    assert d is not None and d["step"] == 16 and d["action"] == "broker_restart"
    assert "broker 1" in d["implementation_did"] and d["model_allowed"]
