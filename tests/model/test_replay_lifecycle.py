"""The judge covers a partition from its first leader to its removal (the model's partitions
are fixed): events after the controller finished removing the partition are not judged
against that partition's model.  A deleted topic is judged on (``delete_topic``): what
follows its deletion is held to the model too."""

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


def test_events_after_the_topic_is_deleted_are_still_judged_against_its_partition() -> None:
    group = _group()
    assert judge(group)["conforms"]
    bad = _impossible(group[-1])
    assert not judge([*group, bad])["conforms"]  # the impossible step is caught ...
    controller = next(e["node"] for e in reversed(group) if e["kind"] == "elect_leader")
    gone = {**_deleted(group, "topic_deleted"), "node": controller}
    verdict = judge([*group, gone, {**bad, "seq": gone["seq"] + 1}])
    assert not verdict["conforms"] and verdict["first_bad"] == len(group) + 1  # ... after deletion too


def test_only_the_removed_partitions_end_their_life() -> None:
    group = _group()
    p = next(e["partition"] for e in group if e.get("topic"))
    bad = _impossible(group[-1])
    other = _deleted(group, "partitions_removed", partitions=[p + 1])
    assert not judge([*group, other, {**bad, "seq": other["seq"] + 1}])["conforms"]
    mine = _deleted(group, "partitions_removed", partitions=[p])
    assert judge([*group, mine, {**bad, "seq": mine["seq"] + 1}])["conforms"]
