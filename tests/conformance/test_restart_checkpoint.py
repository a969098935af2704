"""A restart's checkpointed HW, as the trace shows it, selects the model's choice.

Under ``startup_from_controller`` (``kafka26``, ``kafka39``) the model's ``broker_restart``
chooses the HW the replication-offset checkpoint held, 0 .. the HW the broker had: one
state per choice, ordered lowest first, which the judge's bound on the states it carries
cuts (a real run: 489 choices, past ``MAX_STATES``).  A ``broker_restart`` carrying
``checkpointed_hw`` ("topic-partition" -> HW, what Kafka logs as it loads the log) keeps
the one choice it names.  Here the bound is 1 on a model run whose follower had HW 3 and
restarts with checkpoint 2: only the observed checkpoint lets the judge reach the
``become_follower`` that shows HW 2."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from conformance.judge.export import events_from_steps
from conformance.judge.observation import checkpoint_of
from conformance.judge.replay import judge
from model.actions import Step
from model.config import Config, named
from model.registry import successors
from model.state import State, initial

CFG = replace(named("kafka26"), brokers=3, records=5, max_crashes=2)


def _take(s: State, cfg: Config, steps: list[Step], action: str, args: Any = None, who: int | None = None) -> State:
    """The first successor by ``action`` whose arguments are ``args`` (or whose first
    argument's broker, or fetch follower, is ``who``), appended to ``steps``."""
    for step, t in successors(s, cfg):
        if step.action != action:
            continue
        first = step.args[0]
        if args is not None and step.args != args:
            continue
        if who is not None and getattr(first, "follower", first) != who:
            continue
        steps.append(step)
        return t
    raise AssertionError(f"no {action} step")


def _fetch_round(s: State, steps: list[Step], f: int) -> State:
    for action in ("send_fetch", "handle_fetch", "receive_fetch"):
        s = _take(s, CFG, steps, action, who=f)
    return s


def _restart_trace() -> list[dict[str, Any]]:
    """Leader 0 appends 3 records, both followers replicate them, follower 1 learns HW 3,
    is killed, restarts with checkpoint 2, and follows leader 0 again (HW 2)."""
    s, steps = initial(CFG), []
    for _ in range(3):
        s = _take(s, CFG, steps, "produce", who=0)
    for f in (1, 2, 1, 2, 1):
        s = _fetch_round(s, steps, f)
    assert s.brokers[1].replicas[0].hw == 3
    s = _take(s, CFG, steps, "broker_crash", args=(1,))
    s = _take(s, CFG, steps, "broker_restart", args=(1, 2))
    s = _take(s, CFG, steps, "on_broker_startup", who=0)
    s = _take(s, CFG, steps, "become_follower")
    assert s.brokers[1].replicas[0].hw == 2
    return events_from_steps(CFG, steps)


def _with_checkpoint(events: list[dict[str, Any]], loaded: dict[str, int] | None) -> list[dict[str, Any]]:
    """The trace with its last ``broker_restart`` carrying ``loaded`` (as the adapter gives it)."""
    last = max(i for i, e in enumerate(events) if e["kind"] == "broker_restart")
    out = list(events)
    if loaded is not None:
        out[last] = {**events[last], "params": {**events[last]["params"], "checkpointed_hw": loaded}}
    return out


@pytest.fixture(scope="module")
def trace() -> list[dict[str, Any]]:
    return _restart_trace()


def test_without_the_checkpoint_the_bound_drops_the_true_hw(trace: list[dict[str, Any]]) -> None:
    v = judge(_with_checkpoint(trace, None), "kafka26", limit=1)
    assert not v["conforms"]
    assert trace[v["first_bad"]]["kind"] == "become_follower"


def test_the_observed_checkpoint_selects_the_restart_that_loaded_it(trace: list[dict[str, Any]]) -> None:
    v = judge(_with_checkpoint(trace, {"t-0": 2, "other-0": 7}), "kafka26", limit=1)
    assert v["conforms"], v["reason"]


def test_another_partitions_checkpoint_leaves_every_choice(trace: list[dict[str, Any]]) -> None:
    """Only the group's own partition is read: another's HW selects nothing (the bound cuts again)."""
    v = judge(_with_checkpoint(trace, {"other-0": 2}), "kafka26", limit=1)
    assert not v["conforms"] and trace[v["first_bad"]]["kind"] == "become_follower"
    assert judge(_with_checkpoint(trace, {"other-0": 2}), "kafka26")["conforms"]


def test_a_checkpoint_above_the_hw_the_broker_had_is_refused_at_the_restart(trace: list[dict[str, Any]]) -> None:
    v = judge(_with_checkpoint(trace, {"t-0": 4}), "kafka26")
    assert not v["conforms"]
    assert trace[v["first_bad"]]["kind"] == "broker_restart"
    assert "checkpointed_hw" in v["reason"]


def test_a_wrong_checkpoint_is_caught_at_the_follower_line(trace: list[dict[str, Any]]) -> None:
    v = judge(_with_checkpoint(trace, {"t-0": 1}), "kafka26")
    assert not v["conforms"] and trace[v["first_bad"]]["kind"] == "become_follower"


def test_checkpoint_of_reads_the_groups_partition() -> None:
    e = {"kind": "broker_restart", "params": {"broker_epoch": 5, "checkpointed_hw": {"a-b-1": 9, "a-b-0": 3}}}
    assert checkpoint_of(e, ("a-b", 1))["params"] == {"broker_epoch": 5, "checkpointed_hw": 9}
    assert checkpoint_of(e, ("c", 0))["params"] == {"broker_epoch": 5}
    assert checkpoint_of(e, None)["params"] == {"broker_epoch": 5}
    plain = {"kind": "broker_restart", "params": {"broker_epoch": 5}}
    assert checkpoint_of(plain, ("c", 0)) is plain
