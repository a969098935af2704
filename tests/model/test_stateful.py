"""Hypothesis stateful search (``model.fuzz``): the model's actions as rules, ``properties``
as invariants, failures shrunk to a readable step list.

Budgets are the ``ci`` profile's (derandomized, so each run sees the same examples).
Measured gap, stated here so nobody mistakes silence for coverage: Hypothesis does *not*
find the design's KAFKA-1211 data loss (11 steps, a crash inside the one-step window
between a committing fetch and its response) within any budget tried -- none in 4,000
``deep`` runs at 2 brokers nor 3,000 at 3 brokers.  The exhaustive checker and BMC
(``tests/model/test_symbolic.py``) find it; here the durability check is exercised on the
unclean-election loss, which Hypothesis finds and shrinks to 6 steps.

Swarm testing was tried and does not close the gap.  Hypothesis (6.170) already swarms
over rules: ``RuleBasedStateMachine`` draws per-run ``FeatureFlags`` that switch rules off
for a whole run.  An explicit per-run swarm on top (each action left out with
probability 1/3 or 1/2) found nothing in 5 seeds x 100 ``ci`` runs each; with a fault-free
warm-up of ``pace`` steps added, 1,500 ``deep`` runs (seed 1, ~140 s) found nothing with
the swarm (1/3) nor without it.  Plain
random walks (80 steps, same config) show why: only ~5% of walks reach a committing fetch
at all, ~2-8% of those crash the follower in the one-step window, and the two-crash
budget is then usually gone or the restarted follower re-fetches before the leader
crashes -- 0 hits in 3,000 walks at max_crashes=2, 1-2 in 3,000 at max_crashes=4.
The swarm change was therefore not kept.
"""

from __future__ import annotations

import pytest

from impl.cli import main
from model.actions import EXPLORED
from model.checker import replay
from model.fuzz import DURABILITY, PROFILES, fuzz_config, machine_for, run
from properties import all_violations


def test_rules_are_the_models_actions():
    machine = machine_for(fuzz_config("kip320"))
    for a in EXPLORED:
        assert hasattr(getattr(machine, a.name), "hypothesis_stateful_rule"), a.name


def test_profiles():
    assert PROFILES["ci"].derandomize and PROFILES["ci"].database is None and PROFILES["ci"].deadline is None
    assert PROFILES["deep"].max_examples > PROFILES["ci"].max_examples


@pytest.fixture(scope="module")
def unclean_found():
    return run(fuzz_config("unclean", brokers=2, partitions=1, records=2, max_epoch=4, max_crashes=2), "ci", steps=15)


def test_finds_and_shrinks_a_durability_violation(unclean_found):
    v = unclean_found.violation
    assert v is not None
    assert v.property in DURABILITY
    assert len(v.steps) <= 8
    text = v.text()
    assert text.splitlines()[0].startswith(f"VIOLATION of {v.property}")
    assert "  1. " in text and "UNCLEAN election" in text


def test_shrunk_steps_replay_in_the_explicit_model(unclean_found):
    v = unclean_found.violation
    states = replay(unclean_found.config, [s for s, _ in v.steps])
    assert v.property in [name for name, _ in all_violations(states[-2], states[-1])]


def test_kip320_at_fuzz_scale_finds_nothing_in_the_ci_budget():
    cfg = fuzz_config("kip320", brokers=5, partitions=2, records=6, max_epoch=8, max_crashes=4)
    r = run(cfg, "ci")
    assert r.violation is None, r.violation and r.violation.text()


@pytest.mark.slow
@pytest.mark.xfail(reason="measured: random search, swarm or not, does not reach KAFKA-1211 (see module docstring)", strict=False)
def test_design_durability_loss_in_deep_budget():
    r = run(fuzz_config("design", brokers=2, partitions=1, records=2, max_epoch=3, max_crashes=2), "deep", seed_value=1, max_examples=1000)
    assert r.violation is not None and r.violation.property in DURABILITY


def test_cli_exit_codes(capsys):
    assert main(["fuzz", "--config", "kip320", "--brokers", "2", "--partitions", "1", "--max-examples", "10"]) == 0
    assert "OK: no property violation found" in capsys.readouterr().out
    assert main(["fuzz", "--config", "kip320", "--brokers", "9"]) == 2
    assert main(["fuzz", "--config", "kip320", "--records", "40"]) == 2
