"""The judge's budget: a judgement that runs out of it answers *inconclusive*, naming where
it stopped, instead of going on (or being read as a violation)."""

from __future__ import annotations

import re
from typing import Any

from conformance.judge.diagnose import judge as diagnosing_judge
from conformance.judge.replay import Budget, judge
from conformance.kafka.adapter import adapt, to_records
from conformance.spark.order import causal_order, split_groups
from conformance.spark.report import INCONCLUSIVE, Outcome, exit_code
from conformance.spark.verdict import judge_group, summary_line
from model.registry import REPLAYED
from tests.conformance.kafka.test_adapter import RUN


def _group() -> list[dict[str, Any]]:
    """The committed real Kafka run's one partition group, causally ordered."""
    ordered, _ = causal_order(to_records(adapt(RUN), "kafka"))
    (group,) = [g for key, g in split_groups(ordered).items() if key[0] is not None]
    return group


def test_a_state_budget_stops_at_the_same_event_every_time() -> None:
    events = _group()
    unbounded = judge(events, memo=False)
    assert not unbounded.get("inconclusive")
    first = judge(events, memo=False, budget=Budget(states=10))
    again = judge(events, memo=True, budget=Budget(states=10))
    assert first == again
    assert first["inconclusive"] and not first["conforms"] and first["first_bad"] is None
    at = first["matched"]
    assert 0 < at < unbounded["matched"]
    m = re.fullmatch(r"inconclusive: (\d+) possible states carried, over the budget of 10 before event (\d+) "
                     r"\((\w+)\)", first["reason"])
    assert m and int(m[2]) == at and m[3] == events[at]["kind"]
    assert first["possible_states"]
    # exactly that many states: the budget holds through event ``at``
    assert judge(events, budget=Budget(states=int(m[1])))["matched"] > at


def test_a_budget_large_enough_changes_nothing() -> None:
    events = _group()
    assert judge(events, budget=Budget(seconds=600, states=10**9)) == judge(events)


def test_a_spent_clock_is_inconclusive_at_the_first_model_event() -> None:
    events = _group()
    answer = judge(events, budget=Budget(seconds=0.0))
    first_model = next(i for i, e in enumerate(events) if e["kind"] in REPLAYED)
    assert answer["inconclusive"] and answer["matched"] == first_model
    assert "over the budget of 0s" in answer["reason"]


def test_the_job_reads_inconclusive_as_neither_verdict() -> None:
    events = _group()

    def budgeted(evs: list[dict[str, Any]], config: str) -> dict[str, Any]:
        return diagnosing_judge(evs, config, budget=Budget(states=10))

    v = judge_group("kafka", ("orders", 0), events, budgeted, "kip320")
    assert v["status"] == "inconclusive" and not v["conforms"] and v["first_bad"] is None
    assert v["explained_by"] is None  # no other variant is judged without the budget
    assert summary_line(v) == v["reason"] and v["reason"].startswith("inconclusive: ")
    assert exit_code(Outcome(exit_code=0, groups=1, inconclusive=1), strict=False) == INCONCLUSIVE
