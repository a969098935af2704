"""conformance.judge.diagnose: a trace that is not a run of one variant, read as a run of the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.judge.diagnose import VARIANTS, explain, judge
from conformance.judge.replay import design_bug_events
from conformance.judge.replay import judge as replay_judge
from conformance.judge.words import REFINEMENT
from conformance.spark.order import causal_order, split_groups
from conformance.spark.verdict import judge_group, summary_line
from traces.reader import read_traces

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


def _groups(path: Path) -> list[list[dict]]:
    ordered, _ = causal_order(read_traces([path]).events)
    return [g for key, g in split_groups(ordered).items() if key[0] is not None]


def test_the_design_bug_trace_judged_against_kip320_is_explained_as_a_design_run_that_loses_data() -> None:
    events = design_bug_events()
    v = judge(events, "kip320")
    assert not v["conforms"] and v["property"] == REFINEMENT  # kip320 never takes that step
    assert events[v["first_bad"]]["kind"] == "become_leader"
    assert (v["explained_by"], v["explained_property"]) == ("design", "committed_durable")
    assert events[v["explained_at"]]["kind"] == "elect_leader"  # the truncated follower elected
    line = summary_line(judge_group("r", ("t", 0), events, judge, "kip320"))
    assert "as a run of design, it breaks committed_durable" in line


@pytest.mark.parametrize("config", ["kip101", "kip279"])
def test_the_other_fixes_are_not_the_explanation_either(config: str) -> None:
    v = replay_judge(design_bug_events(), config)
    assert not v["conforms"] and v["property"] == REFINEMENT


def test_a_conforming_trace_gets_no_diagnosis() -> None:
    [group, *_] = _groups(DATA / "recorded" / "leader-kill")
    v = judge(group, "kip320")
    assert v["conforms"] and "explained_by" not in v


def test_a_failure_on_a_property_is_explained_by_its_own_configuration() -> None:
    v = replay_judge(design_bug_events(), "design")
    assert v["property"] == "committed_durable"
    assert explain(design_bug_events(), "design", v) == {
        "explained_by": "design", "explained_property": "committed_durable", "explained_at": v["first_bad"]}


def test_a_trace_no_variant_allows_is_explained_by_the_rule_it_breaks() -> None:
    """A second controller in the same epoch is a step of no truncation variant."""
    bad = DATA / "nonconforming" / "not-enabled--second-controller-same-epoch"
    answers = [(g, replay_judge(g, "kip320")) for g in _groups(bad)]
    failing = [(g, v) for g, v in answers if not v["conforms"]]
    assert failing
    for g, v in failing:
        assert explain(g, "kip320", v) == {
            "explained_by": "kip320", "explained_property": REFINEMENT, "explained_at": v["first_bad"]}
        assert all(not replay_judge(g, other)["conforms"] for other in VARIANTS)
