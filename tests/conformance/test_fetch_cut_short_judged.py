"""The judge takes a fetch answer cut short -- what fit in the leader's byte limits, the HW
the leader's -- as the model's step under any configuration (``search.answer_config``),
and still holds the follower to its cap: the HW it takes is at most its new LEO."""

from __future__ import annotations

import copy

from conformance.judge.export import events_from_steps
from conformance.judge.replay import judge
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import FETCH_REQUEST, FETCH_RESPONSE, initial

A, B = 0, 1


def _cut_short_trace() -> list[dict]:
    """Leader A takes two records while B, silent, is out of the ISR; B fetches from 0 and
    is answered one record with the HW 2, then the next one."""
    cfg = named("kip320", fetch_max_records=1)
    s, steps = initial(cfg), []
    plan = [("produce", (A, 0)), ("shrink_isr", (A, 0, B)), ("produce", (A, 0))] + 2 * [
        ("send_fetch", (B, 0)), ("handle_fetch", FETCH_REQUEST), ("receive_fetch", FETCH_RESPONSE)]
    for action, args in plan:
        if isinstance(args, int):
            args = (next(m for m in s.fetches if m.kind == args and m.follower == B),)
        step = Step(action, args)
        s = apply(s, cfg, step)
        steps.append(step)
    return events_from_steps(cfg, steps)


def _receive(events: list[dict]) -> dict:
    return next(e for e in events if e["kind"] == "receive_fetch")


def test_answers_of_one_record_conform_to_the_configuration_without_the_knob() -> None:
    events = _cut_short_trace()
    first = _receive(events)
    assert len(first["params"]["records"]) == 1 and first["params"]["leader_hw"] == 2
    assert (first["post"]["hw"], first["post"]["leo"]) == (1, 1)
    v = judge(events, "kip320")
    assert v["conforms"], v["reason"]
    assert v["matched"] == v["total"] == len(events)


def test_a_follower_that_takes_the_leaders_hw_past_its_leo_does_not_conform() -> None:
    events = copy.deepcopy(_cut_short_trace())
    bad = _receive(events)
    bad["post"]["hw"] = 2
    v = judge(events, "kip320")
    assert not v["conforms"] and v["first_bad"] == events.index(bad)
