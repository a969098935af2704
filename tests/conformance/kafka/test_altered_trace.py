"""The committed real Kafka run with one event altered: the judge refuses that event, by
index and kind, and every event before it -- the unaltered prefix -- still matches."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from conformance.judge.replay import judge
from conformance.judge.words import REFINEMENT
from conformance.kafka.adapter import adapt, to_records
from conformance.spark.order import causal_order, split_groups
from tests.conformance.kafka.test_adapter import RUN

Event = dict[str, Any]


def _group() -> list[Event]:
    ordered, _ = causal_order(to_records(adapt(RUN), "kafka"))
    (group,) = [g for key, g in split_groups(ordered).items() if key[0] is not None]
    return group


def _epoch_backwards(e: Event) -> None:
    e["params"]["leader_epoch"] -= 1
    e["post"]["leader_epoch"] -= 1


def _hw_above_leo(e: Event) -> None:
    e["post"]["hw"] = e["post"]["leo"] + 1


ALTERATIONS: dict[str, tuple[Callable[[Event], bool], Callable[[Event], None]]] = {
    "become_leader's epoch going backwards": (lambda e: e["kind"] == "become_leader", _epoch_backwards),
    "receive_fetch's HW above its LEO": (lambda e: e["kind"] == "receive_fetch" and bool(e["params"]["records"]),
                                         _hw_above_leo),
    "handle_fetch's HW above the leader's LEO": (lambda e: e["kind"] == "handle_fetch" and e["post"]["leo"] > 1,
                                                 _hw_above_leo),
}


@pytest.mark.parametrize("name", sorted(ALTERATIONS))
def test_the_judge_refuses_the_altered_event(name: str) -> None:
    which, alter = ALTERATIONS[name]
    events = _group()
    unaltered = judge(events)
    at = next(i for i, e in enumerate(events) if which(e))
    assert at < unaltered["matched"]  # the event conformed as Kafka logged it
    altered = copy.deepcopy(events)
    alter(altered[at])
    v = judge(altered)
    assert not v["conforms"] and not v.get("inconclusive")
    assert v["first_bad"] == at and v["matched"] == at  # the prefix before it still matched
    assert v["reason"].startswith(f"{events[at]['kind']} by broker {events[at]['node']}")
    assert v["property"] == REFINEMENT and f" breaks rule {events[at]['kind']} (design section " in v["reason"]
