"""Every refusal says, in words, the rule or property broken, the field and the values.

Held over the deliberately broken samples (``conformance.broken_samples``) and every
mutation of ``conformance.mutations``: each refused group names a property (a safety
property, or ``REFINEMENT`` for a step no model step matches) and the configuration that
explains it, and its reason names the model's rule and the event's fields as words -- no
Python dict or repr a reader would have to parse.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from conformance.broken_samples import nonconforming
from conformance.judge.diagnose import judge
from conformance.judge.words import REFINEMENT, event_words, rule_words, value_words
from conformance.mutations import MUTATIONS
from conformance.spark.order import causal_order, split_groups
from conformance.spark.verdict import judge_group, summary_line
from model.registry import ACTIONS, REPLAYED
from properties.safety import BY_NAME
from traces.synthetic import generate_run

REPR = re.compile(r"\{'|': |\[\[|\bNone\b")
"""What a Python repr of a dict, a nested list or None looks like in a reason."""


def _cases() -> dict[str, list[dict[str, Any]]]:
    """The broken samples, and each mutation (but ``drop``, which the model may explain by
    unobserved internal steps) of the synthetic runs test_conform_mutations mutates."""
    cases = {f"sample {name}": events for name, events in nonconforming().items()}
    for seed in range(3):
        run = generate_run(f"m{seed}", partitions=3, records=4, kill_leader=True, seed=seed)
        for name, mutate in MUTATIONS.items():
            mutant = None if name == "drop" else mutate(run, random.Random(seed))
            if mutant is not None:
                cases[f"mutation {name} of run {seed}"] = mutant
    return cases


CASES = _cases()


def _refusals(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ordered, _ = causal_order(events)
    verdicts = [judge_group("r", key, group, judge, "kip320") for key, group in split_groups(ordered).items()]
    return [v for v in verdicts if v["status"] == "violates"]


def test_the_cases_cover_the_samples_and_the_mutations() -> None:
    assert sum(n.startswith("sample") for n in CASES) >= 4 and sum(n.startswith("mutation") for n in CASES) >= 4


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_refusal_names_the_rule_the_field_and_the_values_in_words(name: str) -> None:
    refusals = _refusals(CASES[name])
    assert refusals, f"{name}: nothing refused"
    names = {*BY_NAME, REFINEMENT}
    for v in refusals:
        reason = v["reason"]
        assert v["property"] in names, (name, v["property"])
        assert v["explained_by"] and v["explained_property"], (name, v)
        assert not REPR.search(reason), f"{name}: a repr in {reason!r}"
        kind = v["first_bad_kind"]
        if v["property"] == REFINEMENT:
            assert reason.startswith(f"{kind} by ") and f" breaks {rule_words(kind)}: " in reason, reason
            action = REPLAYED[kind]
            assert f"rule {action} (design section {ACTIONS[action].section})" in reason, reason
        # every field of the refused event, by name and value
        for field, value in json.loads(v["observed"]).get("params", {}).items():
            assert f"{field} {value_words(value)}" in reason, (field, reason)
        assert "{" not in summary_line(v).replace(reason, ""), summary_line(v)


def test_a_mismatch_names_the_field_and_both_values() -> None:
    [v] = _refusals(CASES["mutation hw_above_leo of run 0"])
    post = json.loads(v["observed"])["post"]
    assert post["hw"] > post["leo"]  # the mutation: an HW above the LEO
    assert f"post.hw is {post['hw']} where the model's step gives " in v["reason"], v["reason"]


def test_values_read_as_words() -> None:
    assert value_words([[1, 0, "v1"], [2, 0, "v2"]]) == '[offset 1 (epoch 0, "v1"); offset 2 (epoch 0, "v2")]'
    assert value_words(None) == "none" and value_words([1, 2]) == "[1, 2]"
    assert event_words({"node": 2, "kind": "send_fetch", "params": {"leader": 1},
                        "post": {"hw": 2}}) == "send_fetch by broker 2 (leader 1; afterwards hw 2)"
