"""The judge covers a partition from before its life to the end of the trace: a deleted
topic is judged on (``delete_topic``), and so is a removed partition (``remove_partitions``,
seed 000 H) -- what follows is held to the model too.  Another partition's removal is no step
of this partition's model."""

from __future__ import annotations

import copy
from pathlib import Path

from conformance.judge.replay import judge
from conformance.spark.order import causal_order, split_groups
from traces.reader import read_traces

LEADER_KILL = Path(__file__).resolve().parents[2] / "traces" / "data" / "recorded" / "leader-kill"


def _group() -> list[dict]:
    ordered, _ = causal_order(read_traces([LEADER_KILL]).events)
    [(key, group)] = [(k, g) for k, g in split_groups(ordered).items() if k[0] is not None]
    return group


def _impossible(after: dict) -> dict:
    """A second election of the current leader epoch's leader with an older epoch: no model
    state allows it."""
    e = copy.deepcopy(next(x for x in _group() if x["kind"] == "elect_leader"))
    e["seq"], e["clock"] = after["seq"] + 1, after["clock"] + 1
    e["params"]["leader_epoch"] = 0
    return e


def _deleted(group: list[dict], kind: str, **params: object) -> dict:
    last = group[-1]
    topic = next(e["topic"] for e in group if e.get("topic"))
    return {**copy.deepcopy(last), "kind": kind, "topic": None, "partition": None, "zxid": None,
            "params": {"topic": topic, **params}, "post": {}, "seq": last["seq"] + 1, "clock": last["clock"] + 1}


def _before_the_stops(group: list[dict]) -> list[dict]:
    """The group up to the recording's closing stops (``stop_recorded``): a controller is
    still there to delete or remove."""
    first_stop = next((i for i, e in enumerate(group) if e["kind"] == "broker_stop"), len(group))
    return group[:first_stop]


def _controller(group: list[dict]) -> int:
    return next(e["node"] for e in reversed(group) if e["kind"] in ("elect_leader", "controller_elect"))


def test_events_after_the_topic_is_deleted_are_still_judged_against_its_partition() -> None:
    group = _before_the_stops(_group())
    assert judge(group)["conforms"]
    bad = _impossible(group[-1])
    assert not judge([*group, bad])["conforms"]  # the impossible step is caught ...
    gone = {**_deleted(group, "topic_deleted"), "node": _controller(group)}
    verdict = judge([*group, gone, {**bad, "seq": gone["seq"] + 1}])
    assert not verdict["conforms"] and verdict["first_bad"] == len(group) + 1  # ... after deletion too


def test_a_removed_partition_is_judged_on_and_another_partitions_removal_is_not_its_step() -> None:
    group = _before_the_stops(_group())
    p = next(e["partition"] for e in group if e.get("topic"))
    bad = _impossible(group[-1])
    controller = _controller(group)
    other = {**_deleted(group, "partitions_removed", partitions=[p + 1]), "node": controller}
    assert judge([*group, other])["conforms"]
    assert not judge([*group, other, {**bad, "seq": other["seq"] + 1}])["conforms"]
    mine = {**_deleted(group, "partitions_removed", partitions=[p]), "node": controller}
    assert judge([*group, mine])["conforms"]  # no replica recorded its StopReplica (yet): the event is the step itself
    verdict = judge([*group, mine, {**bad, "seq": mine["seq"] + 1}])
    assert not verdict["conforms"] and verdict["first_bad"] == len(group) + 1
    not_controller = {**mine, "node": next(b for b in {e["node"] for e in group if e["node"] >= 0} if b != controller)}
    assert not judge([*group, not_controller])["conforms"], "only the controller removes a partition"
