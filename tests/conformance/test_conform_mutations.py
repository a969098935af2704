"""Mutants of conforming runs stay valid traces (so the judge, not the validator, must catch
them); against the model's judge every behaviour-changing mutant is flagged."""

from __future__ import annotations

import random

import pytest

from conformance.judge import replay
from conformance.mutations import MUTATIONS
from conformance.spark.order import causal_order
from conformance.spark.verdict import judge_run
from traces.schema import validate
from traces.synthetic import generate_run

RUNS = [generate_run(f"m{i}", partitions=3, records=4, kill_leader=True, seed=i) for i in range(3)]


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_every_mutation_yields_a_valid_trace_in_causal_order(name):
    applied = 0
    for i, run in enumerate(RUNS):
        mutant = MUTATIONS[name](run, random.Random(i))
        if mutant is None:
            continue
        applied += 1
        assert mutant != [{k: v for k, v in e.items() if not k.startswith("_")} for e in run]
        assert [validate(e) for e in mutant] == [None] * len(mutant)
        per_node: dict[int, list[int]] = {}
        for e in mutant:
            per_node.setdefault(e["node"], []).append(e["seq"])
        assert all(s == list(range(len(s))) for s in per_node.values())
        _, forced = causal_order(mutant)
        assert not forced
    assert applied, f"{name} found no place to apply in the sample runs"


# ``drop`` is left out: dropping a fetch or the last event is a behaviour the model can
# explain (unobserved internal steps within the bound), so not every drop must fail.
@pytest.mark.parametrize("name", ["duplicate", "swap", "bump_epoch", "hw_above_leo",
                                  "stale_leader_commits", "second_controller"])
def test_the_model_judge_flags_mutants_that_change_behaviour(name):
    applied = 0
    for i, run in enumerate(RUNS):
        assert all(v["conforms"] for v in judge_run(run[0]["run"], run, replay.judge, "kip320")), \
            "the unmutated synthetic run must conform first"
        mutant = MUTATIONS[name](run, random.Random(i))
        if mutant is not None:
            applied += 1
            verdicts = judge_run(run[0]["run"], mutant, replay.judge, "kip320")
            assert not all(v["conforms"] for v in verdicts), f"{name} mutant of run {i} judged conforming"
    assert applied, f"no run could be mutated by {name}"
