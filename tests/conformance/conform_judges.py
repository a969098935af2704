"""Small but real judges for testing the job's plumbing before the model's judge exists.

Each has the interface of ``conformance.judge.replay.judge``.  They are imported by the tests and
pickled by value (``cloudpickle.register_pickle_by_value``) so Spark's Python workers,
which do not have ``tests/`` on their path, can run them.
"""

from __future__ import annotations

from typing import Any


def _answer(events, bad: int | None, reason: str | None = None, prop: str | None = None,
            states: list[str] | None = None) -> dict[str, Any]:
    return {"conforms": bad is None, "matched": len(events) if bad is None else bad,
            "total": len(events), "first_bad": bad, "reason": reason, "property": prop,
            "possible_states": states or [], "bound": 0}


def hw_within_leo(events: list[dict[str, Any]], config: str = "kip320") -> dict[str, Any]:
    """Every observed post-state has HW <= LEO, and leader epochs a node holds never go back."""
    epochs: dict[int, int] = {}
    for i, e in enumerate(events):
        post = e["post"]
        if "hw" in post and "leo" in post and post["hw"] > post["leo"]:
            return _answer(events, i, f"hw {post['hw']} above leo {post['leo']}", "HighWatermarkWithinLog",
                           [f"node {e['node']}: hw <= {post['leo']}"])
        if "leader_epoch" in post:
            if post["leader_epoch"] < epochs.get(e["node"], -1):
                return _answer(events, i, "leader epoch went back", "MonotonicLeaderEpoch",
                               [f"node {e['node']}: leader_epoch >= {epochs[e['node']]}"])
            epochs[e["node"]] = post["leader_epoch"]
    return _answer(events, None)


def causal(events: list[dict[str, Any]], config: str = "kip320") -> dict[str, Any]:
    """The group is in causal order: per-node seq increases, zxids never go back."""
    last: dict[int, int] = {}
    zxid = -1
    for i, e in enumerate(events):
        if e["seq"] <= last.get(e["node"], -1):
            return _answer(events, i, f"node {e['node']} seq {e['seq']} after {last[e['node']]}", "ProgramOrder")
        last[e["node"]] = e["seq"]
        if e["zxid"] is not None:
            if e["zxid"] < zxid:
                return _answer(events, i, "zxid went back", "ZxidOrder")
            zxid = e["zxid"]
    return _answer(events, None)


def explodes(events: list[dict[str, Any]], config: str = "kip320") -> dict[str, Any]:
    """A judge with a bug: the job must report it as an error verdict, not die."""
    raise RuntimeError("judge bug")
