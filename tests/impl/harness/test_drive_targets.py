"""Generated cases over every configuration and knob (``impl.harness.drive.targets``): every
named configuration and every admin knob the driver runs is a target, each sample is after the
pairs its configuration adds, and -- on real brokers, in the slow suite -- the sample of every
target follows the model and covers those pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from impl.harness.cli.drive import DRIVE_KNOBS
from impl.harness.drive.generate import search, walk
from impl.harness.drive.targets import TARGETS, found, generate_every, sample_focus
from model.config import DRIVABLE, NAMED, named

SAMPLE_STATES = 10_000  # the preferred election's path (10 steps) is past 3,000 states


def test_every_named_configuration_and_every_admin_knob_the_driver_runs_is_generated() -> None:
    assert set(DRIVABLE) <= {t.config for t in TARGETS if not t.knobs or t.config == "zombie"}
    assert {"kafka26", "kafka39", "kafka26-unclean", "kafka39-unclean"} <= set(NAMED) - set(DRIVABLE)  # Kafka's own rules: judged, not driven
    admin = {k.field for k in DRIVE_KNOBS} - {"max_crashes", "max_pauses"}  # the failures the configurations bound
    assert admin == {k for t in TARGETS for k in t.knobs if t.config == "kip320"}
    assert len({t.name for t in TARGETS}) == len(TARGETS)


# kip101's and kip279's samples are design's case (a rule changed: the first path): their
# searches, seconds each, would be run here to be checked for nothing design's does not show
def test_each_sample_is_after_the_pairs_its_configuration_adds() -> None:
    focus = {t.name: sample_focus(t, SAMPLE_STATES) for t in TARGETS if t.name not in ("kip101", "kip279")}
    assert focus["kip320"] is None and focus["design"] is None  # a rule changed, not the steps
    assert ("controller_resign", "write_refused") in focus["zombie"]
    assert ("elect_leader", "unclean") in focus["unclean"]
    assert ("delete_topic", "taken") in focus["deletion"]
    assert ("add_partitions", "taken") in focus["partition-change"]
    assert ("controlled_shutdown", "moved") in focus["shutdown"]
    assert ("preferred_election", "taken") in focus["preferred-election"]
    assert ("reassign_complete", "taken") in focus["reassignment"]
    assert {("handle_fetch", "answered_hw_ahead"), ("receive_fetch", "appended_hw_capped")} <= focus["fetch-cut-short"]
    assert focus["incarnation"] == {("become_leader", "other_incarnation"), ("become_follower", "other_incarnation")}
    assert {("broker_expire", "broker"), ("broker_expire", "controller"), ("broker_reregister", "taken")} <= focus["expiry"]


def test_a_leader_and_isr_onto_a_deleted_incarnations_records_is_an_outcome_of_its_own() -> None:
    """A paused leader keeps the deleted incarnation's records; the new incarnation's
    LeaderAndISR meets them (the broker drops them first: ``topic_identity``)."""
    cfg = named("zombie", brokers=2, deletions=1)
    cases = {c.pair: c.steps for c in found("incarnation", SAMPLE_STATES)}  # the sample's search
    for action in ("become_leader", "become_follower"):
        (s, _), step, result = walk(cfg, cases[(action, "other_incarnation")])[-1]
        m = step.args[0]
        assert result == "other_incarnation" and step.action == action
        assert s.brokers[m.to].replicas[m.partition].log and s.brokers[m.to].replicas[m.partition].topic_id < m.topic_id
    # a LeaderAndISR onto an empty replica, or one of its own incarnation, is taken
    assert all(p[1] != "other_incarnation" for p in cases if p[0] not in ("become_leader", "become_follower"))


# Driven in full, every pair covered, by test_drive.py's generated cases of kip320 with a
# preferred election allowed, and by test_drive_partitions.py's of kip320 with two partition
# changes (its search's pairs hold the partition changes' sample: below): their samples here
# would drive pairs those runs cover again.
DRIVEN_IN_FULL_ELSEWHERE = ("kip320", "preferred-election", "partition-change")
PARTITION_CHANGES_DRIVEN = named("kip320", brokers=2, partition_changes=2), 3000  # test_drive_partitions.py's


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("target", [t for t in TARGETS if t.name not in DRIVEN_IN_FULL_ELSEWHERE],
                         ids=lambda t: t.name)
def test_the_sample_of_each_targets_generated_cases_follows_the_model(target, tmp_path: Path) -> None:
    every = generate_every(90, sample=True, data_dir=tmp_path, max_states=SAMPLE_STATES, targets=(target,))
    (_, r), = every.reports
    assert r.cases and all(c["verdict"] in ("followed", "model_refused") for c in r.cases), r.cases
    assert set(r.focus) <= set(r.covered_pairs), set(r.focus) - set(r.covered_pairs)
    assert every.exit_code == 0


def test_the_targets_driven_in_full_elsewhere_are_targets() -> None:
    assert set(DRIVEN_IN_FULL_ELSEWHERE) <= {t.name for t in TARGETS}


def test_the_partition_changes_sample_is_inside_what_their_full_drive_covers() -> None:
    """The pairs the partition changes' sample would drive are pairs of the search whose every
    path test_drive_partitions.py drives (and checks each pair covered and followed)."""
    target = next(t for t in TARGETS if t.name == "partition-change")
    cfg, max_states = PARTITION_CHANGES_DRIVEN
    assert named(target.config, brokers=target.brokers, **target.knobs) == cfg
    assert sample_focus(target, SAMPLE_STATES) <= {c.pair for c in search(cfg, max_states)[0]}


def test_guided_fuzzing_runs_every_drivable_named_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from impl.harness.drive import targets

    calls: list[tuple[str, float, int]] = []
    monkeypatch.setattr(targets, "fuzz", lambda name, budget, seed, **_: calls.append((name, budget, seed)) or name)
    assert targets.guided_every(30, seed=4) == list(DRIVABLE)
    assert calls == [(name, 30, 4) for name in DRIVABLE]


def test_drive_refuses_a_configuration_of_apache_kafkas_own_rules_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from impl.harness.cli.main import main

    assert main(["drive", "--config", "kafka39", "--scenario", "kafka_1211"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Apache Kafka's own rules" in err[0] and "kip320" in err[0]
