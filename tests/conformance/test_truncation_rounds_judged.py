"""A truncation in several OffsetsForLeaderEpoch rounds is judged as the model's one
``truncate`` step (``search.later_truncation_round``), by both judges.

The run is ``bench/mutation_paths/truncation_incomplete_round.json``: broker 0 (epochs 1, 3)
follows broker 1 (epochs 1, 2, 4), the leader answers its lookup of epoch 3 with epoch 2,
which broker 0 lacks, so broker 0 cuts to where its epoch 1 ends -- the model's cut -- and
asks again, as Kafka's follower does.  The second round's event cuts nothing more: the same
step seen again.  A second round that cuts elsewhere than the model's cut does not conform."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from conformance.judge.export import events_from_steps
from conformance.judge.replay import judge
from impl.harness.drive import from_json
from impl.harness.drive.paths import step_of
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import initial

PATH = Path(__file__).resolve().parents[2] / "bench" / "mutation_paths" / "truncation_incomplete_round.json"
FOLLOWER = 0


def _model_trace() -> list[dict]:
    cfg = named("kip320", brokers=3, records=3, max_epoch=4, max_crashes=2, preferred_elections=1)
    s, steps = initial(cfg), []
    for action, choose in from_json(PATH).steps:
        step = step_of(action, choose, s)
        assert isinstance(step, Step), action
        steps.append(step)
        s = apply(s, cfg, step)
        assert s is not None, step
    return events_from_steps(cfg, steps)


def _with_second_round(cut_by: int = 0) -> tuple[list[dict], int]:
    """The model's trace with the follower's last truncation recorded twice (the second
    round ``cut_by`` records below the first), and the second round's index."""
    events = _model_trace()
    first = max(i for i, e in enumerate(events) if e["kind"] == "truncate" and e["node"] == FOLLOWER)
    again = copy.deepcopy(events[first])
    again["params"]["truncated_to"] -= cut_by
    for e in events[first + 1:]:
        if e["node"] == FOLLOWER:
            e["seq"] += 1
    again["seq"] = events[first]["seq"] + 1
    return events[: first + 1] + [again] + events[first + 1:], first + 1


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
def test_a_second_round_at_the_models_cut_is_the_same_truncation(compiled: bool) -> None:
    events, second = _with_second_round()
    assert events[second]["params"]["truncated_to"] == events[second - 1]["params"]["truncated_to"] == 1
    v = judge(events, "kip320", compiled=compiled)
    assert v["conforms"], v["reason"]
    assert v["matched"] == v["total"] == len(events)


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
def test_a_second_round_that_cuts_elsewhere_than_the_model_does_not_conform(compiled: bool) -> None:
    events, second = _with_second_round(cut_by=1)
    v = judge(events, "kip320", compiled=compiled)
    assert not v["conforms"] and v["first_bad"] == second
    assert "truncated_to is 0 where the model's step gives 1" in v["reason"]


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
def test_a_lookup_after_the_follower_fetched_again_is_no_round_of_the_last_truncation(compiled: bool) -> None:
    """The last events are the follower's fetch and the leader's answer: the follower's
    fetch is in flight until it receives the answer, so a lookup recorded before that is a
    new truncation the model has no step for."""
    events = _model_trace()
    fetched = max(i for i, e in enumerate(events) if e["kind"] == "handle_fetch" and e["params"]["follower"] == FOLLOWER)
    first = max(i for i, e in enumerate(events) if e["kind"] == "truncate" and e["node"] == FOLLOWER)
    again = copy.deepcopy(events[first])
    again["seq"] = max(e["seq"] for e in events if e["node"] == FOLLOWER) + 1
    events.insert(fetched + 1, again)
    v = judge(events[: fetched + 2], "kip320", compiled=compiled)
    assert not v["conforms"] and v["first_bad"] == fetched + 1
