"""A non-conforming verdict shows the states the model allowed in the trace's own broker
numbering: a trace of brokers 1, 2 and 3 is judged by a model of brokers 0, 1 and 2, and the
reader compares what the model allowed with the events beside it, which name 1, 2 and 3."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.judge.observation import broker_ids
from conformance.spark.verdict import judge_run, load_judge
from traces.reader import read_traces

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "data" / "nonconforming" / "does-not-match--hw-above-leo"


def test_the_states_the_model_allowed_name_the_traces_brokers():
    events = read_traces([SAMPLE]).events
    ids = sorted(broker_ids(events))
    assert ids == [1, 2, 3]  # the sample numbers its brokers from 1: the model's are 0..2
    [bad] = [v for v in judge_run("r", events, load_judge(None), "kip320") if v["status"] != "conforms"]
    assert bad["possible_states"]
    for text in bad["possible_states"]:
        named = {int(b) for b in re.findall(r"broker (\d+) \[", text)}
        assert named == set(ids), text
        assert re.search(r"/controller=(\d+)", text).group(1) in {str(b) for b in ids}


def _election(reason: str, replicas: list[int]) -> dict:
    return {"kind": "elect_leader", "node": 3, "params": {"leader": replicas[0], "isr": replicas, "reason": reason,
                                                          "replicas": replicas}}


def test_with_a_preferred_election_the_first_replica_assigned_is_the_models_lowest_id():
    """The model's AR is sorted, its preferred replica the lowest id; Kafka's is the first
    replica of the assignment (here 2, of 2,1,3)."""
    created = _election("init", [2, 1, 3])
    assert broker_ids([created]) == {1: 0, 2: 1, 3: 2}, "no preferred election: the trace's order"
    assert broker_ids([created, _election("preferred", [2, 1, 3])]) == {2: 0, 1: 1, 3: 2}


def test_brokers_are_renamed_by_the_assignment_the_preferred_election_read() -> None:
    """A preferred election over an assignment
    out of id order (Kafka's first replica) renames that replica to the lowest id; one over an
    assignment in id order renames nothing, whatever order the partition was first assigned in
    (a reassignment reordered it since)."""
    reordered = [_election("init", [2, 0, 1]), _election("reassign", [0, 1, 2]), _election("preferred", [0, 1, 2])]
    assert broker_ids(reordered) == {0: 0, 1: 1, 2: 2, 3: 3}  # 3: the controller
    kafka = [_election("init", [2, 0, 1]), _election("preferred", [2, 0, 1])]
    assert broker_ids(kafka) == {2: 0, 0: 1, 1: 2, 3: 3}
    assert broker_ids([_election("init", [2, 0, 1])]) == {0: 0, 1: 1, 2: 2, 3: 3}  # no preferred election
