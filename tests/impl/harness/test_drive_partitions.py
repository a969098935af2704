"""``epochal drive`` runs the model's partitions added and removed (seed 000 H) on real
brokers: ``add_partitions`` is the admin client's CreatePartitions with the model's AR,
``remove_partitions`` its RemovePartitions, and their LeaderAndISR and StopReplica(delete) are
held and delivered by the model's own steps.  Only partition 0 may have followers -- the
implementation's follower fetches every partition it follows from one leader in one request,
which the relay cannot hold apart -- so an added partition has one replica, and a path that
would give it a follower is refused as bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from impl.harness.cli.main import main
from impl.harness.drive import Driver, ModelRun
from impl.harness.drive.driver import one_follower_partition
from impl.harness.drive.generate import generate, outcome, search
from impl.node.admin_writes import AdminError, AdminWrites
from impl.node.wire import ErrorCode
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import State, initial

KNOBS = {"partition_changes": 2}  # one partition added, then one removed
PAIRS = {("add_partitions", "taken"), ("remove_partitions", "taken")}


def _args(*a: object):
    return lambda s: a


def _lai(to: int, p: int):
    def choose(s: State) -> tuple:
        zn = s.zk.partitions[p]
        return next((m,) for m in s.leader_and_isr
                    if m.to == to and m.partition == p and m.leader_epoch == zn.leader_epoch)
    return choose


def _stop(to: int, p: int):
    return lambda s: next((m,) for m in s.stop_replica if m.to == to and m.partition == p)


# Partition 1 added with broker 1 alone (its leader), a write to it; then partition 0 -- the
# cluster's first, replicated on both brokers -- removed, and its StopReplica(delete)
# delivered to each: the topic is left with partition 1 alone.
PARTITIONS_RUN = ModelRun("partitions", [
    ("add_partitions", _args(0, 1, (1,), 1)), ("become_leader", _lai(1, 1)), ("produce", _args(1, 1)),
    ("remove_partitions", _args(0, 0)), ("stop_replica", _stop(0, 0)), ("stop_replica", _stop(1, 0)),
], brokers=2)

# A failover with both partitions on broker 1: the new controller tells broker 1 of both in
# one LeaderAndISR (the model's two messages, taken together); partition 0 removed while
# broker 0 is down, which deletes its copy when it starts (seed 000 E 4).
FAILOVER_RUN = ModelRun("partitions-failover", [
    ("add_partitions", _args(0, 1, (1,), 1)), ("become_leader", _lai(1, 1)), ("produce", _args(1, 1)),
    ("broker_crash", _args(0)), ("controller_elect", _args(1)), ("elect_leader", _args(1, 0, 1)),
    ("become_leader", _lai(1, 0)), ("produce", _args(1, 0)),
    ("remove_partitions", _args(1, 0)), ("stop_replica", _stop(1, 0)), ("broker_restart", _args(0)),
], brokers=2)


def _model_end(run: ModelRun) -> State:
    cfg = named("kip320", brokers=2, **KNOBS)
    s = initial(cfg)
    for action, choose in run.steps:
        t = apply(s, cfg, Step(action, tuple(choose(s))))
        assert t is not None, action
        s = t
    return s


def test_the_driven_partition_runs_are_ones_the_model_takes_to_their_end() -> None:
    s = _model_end(PARTITIONS_RUN)
    assert [bool(zn.ar) for zn in s.zk.partitions] == [False, True, False]
    assert [e.value for e in s.brokers[1].replicas[1].log] == [1]
    s = _model_end(FAILOVER_RUN)
    assert not s.zk.partitions[0].ar and s.zk.partitions[1].leader == 1 and not s.brokers[0].replicas[0].log


@pytest.mark.integration
def test_a_partition_added_written_to_and_another_removed_follow_the_model(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "cluster", knobs=KNOBS).run(PARTITIONS_RUN)
    assert report.verdict == "followed" and report.exit_code == 0, report.divergence
    assert [s.action for s in report.steps if s.outcome == "followed"] == [a for a, _ in PARTITIONS_RUN.steps]
    # the comparison after each step reads every created partition: 1 alone at the end
    last = report.steps[-1].zookeeper
    assert set(last["partitions"]) == {1} and last["partitions"][1]["ar"] == [1]
    added = report.steps[0].zookeeper["partitions"]
    assert set(added) == {0, 1} and added[1]["leader"] == 1


@pytest.mark.integration
@pytest.mark.slow
def test_a_failover_tells_a_broker_of_both_partitions_in_one_request_and_the_driver_takes_both(
        tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "cluster", knobs=KNOBS).run(FAILOVER_RUN)
    assert report.verdict == "followed" and report.exit_code == 0, report.divergence
    assert report.transitions > len(FAILOVER_RUN.steps)  # the failover's request, delivered first
    assert set(report.steps[-1].zookeeper["partitions"]) == {1}


# The topic's only partition removed -- the model lets the administrator remove every
# partition of a topic, and so does the implementation's admin -- its StopReplica(delete)
# delivered to both replicas, then a partition added under the fresh id 1, not the removed 0.
LAST_RUN = ModelRun("last", [
    ("remove_partitions", _args(0, 0)), ("stop_replica", _stop(0, 0)), ("stop_replica", _stop(1, 0)),
    ("add_partitions", _args(0, 1, (1,), 1)), ("become_leader", _lai(1, 1)),
], brokers=2)


@pytest.mark.integration
@pytest.mark.slow
def test_removing_the_topics_last_partition_and_adding_one_again_follow_the_model(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "cluster", knobs=KNOBS).run(LAST_RUN)
    assert report.verdict == "followed" and report.exit_code == 0, report.divergence
    assert [s.action for s in report.steps if s.outcome == "followed"] == [a for a, _ in LAST_RUN.steps]
    assert report.steps[0].zookeeper["partitions"] == {}  # the topic with no partitions
    last = report.steps[-1].zookeeper["partitions"]
    assert set(last) == {1} and last[1]["ar"] == [1] and last[1]["leader"] == 1


def _path(tmp_path: Path, steps: list[dict]) -> str:
    f = tmp_path / "path.json"
    f.write_text(json.dumps({"steps": steps, "config": {"brokers": 2}}))
    return str(f)


def test_an_added_partition_with_a_follower_is_refused_as_bad_input(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    f = _path(tmp_path, [{"action": "add_partitions", "args": [0, 1, [0, 1], 0]}])
    code = main(["drive", "--config", "kip320", "--path", f, "--partition-changes", "1", "--data-dir",
                 str(tmp_path / "cluster")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "step 1 add_partitions: partition 1 would have followers ([0, 1])" in err
    assert not (tmp_path / "cluster").exists()  # refused before any process started
    # the same partition with one replica is not refused for that reason
    assert one_follower_partition(_model_end(ModelRun("one", [("add_partitions", _args(0, 1, (1,), 1))]))) is None


def test_a_path_changing_partitions_without_the_knob_is_refused(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    f = _path(tmp_path, [{"action": "add_partitions", "args": [0, 1, [1], 1]},
                         {"action": "remove_partitions", "args": [0, 0]}])
    code = main(["drive", "--config", "kip320", "--path", f])
    err = capsys.readouterr().err
    assert code == 2 and "action add_partitions needs --partition-changes 1" in err
    assert len(err.strip().splitlines()) == 1


def test_the_generated_cases_add_a_partition_with_one_replica_and_remove_the_last_one() -> None:
    cfg = named("kip320", brokers=2, **KNOBS)
    cases, _, _ = search(cfg, max_states=3000)
    assert PAIRS <= {c.pair for c in cases}
    for case in cases:
        s = initial(cfg)
        for step in case.steps:
            t = apply(s, cfg, step)
            assert t is not None and one_follower_partition(t) is None
            last = (step.action, outcome(step, s, t, cfg))
            s = t
        assert last == case.pair
    # with one change only, the removal the model allows is of the topic's last partition,
    # which the implementation's admin takes too: generated
    one = {c.pair for c in search(named("kip320", brokers=2, partition_changes=1), max_states=3000)[0]}
    assert {("add_partitions", "taken"), ("remove_partitions", "taken")} <= one


@pytest.mark.slow
@pytest.mark.longest
def test_the_generated_cases_with_partition_changes_are_followed_and_cover_their_pairs(tmp_path: Path) -> None:
    report = generate("kip320", budget_s=240, data_dir=tmp_path, max_states=3000, knobs=KNOBS)
    assert report.exit_code == 0, [c for c in report.cases if c["verdict"] != "followed"]
    assert PAIRS | {("stop_replica", "deleted")} <= set(report.covered_pairs)
    assert set(report.covered_pairs) == set(report.pairs)


def test_create_partitions_takes_the_new_partitions_replicas_in_id_order_from_the_fresh_id() -> None:
    """The admin's side of the mapping: CreatePartitions' ``assignments`` (Kafka's) name the
    replicas of each partition added, numbered from the topic's fresh id; a count that does
    not match, an empty list or a repeated broker is refused."""
    assert AdminWrites._given_assignments([[1], [0, 1]], 3, 2) == {"3": [1], "4": [0, 1]}
    for given, count in (([[1]], 2), ([[]], 1), ([[1, 1]], 1), ([[-1]], 1), ("1", 1)):
        with pytest.raises(AdminError) as exc:
            AdminWrites._given_assignments(given, 3, count)
        assert exc.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
