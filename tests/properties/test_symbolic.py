"""The z3 encoding (``properties.checkers.symbolic``): proofs succeed, BMC's counterexample replays in the
explicit model, the fixed configuration has none, and -- what keeps the two models from
drifting apart -- on states the explicit model reaches, the z3 relation allows exactly the
explicit successors and every property evaluates the same.
"""

from __future__ import annotations

import pytest

from impl.harness.cli.main import main
from model.config import named
from properties.checkers.bfs import replay
from properties.checkers.scenarios import play
from properties.checkers.symbolic import COVERED, bmc, differential, prove, sample_states
from properties.safety import all_violations


@pytest.mark.parametrize("name", ["design", "kip320"])
def test_inductive_proofs(name):
    verdicts = prove(named(name), 2)
    assert {v.name for v in verdicts} >= {"hw_le_leo", "isr_well_formed", "one_leader_per_epoch",
                                          "single_controller", "epoch_monotonic", "q3_stale_leader_frozen"}
    assert [v for v in verdicts if v.status != "proved"] == []


def test_proofs_at_three_brokers():
    assert all(v.status == "proved" for v in prove(named("kip101"), 3))


# BMC starts after the first 7 steps of the KAFKA-1211 scenario (the record committed, the
# follower crashed); every interleaving of the next 4 steps is then searched.  Solver time
# grows ~5x per depth, so this keeps the CI run in seconds (``epochal prove`` goes deeper).
PREFIX = 7


def _prefix(cfg):
    out = play("kafka_1211", cfg)
    return [s for s, _ in out.steps[:PREFIX]], out.states[PREFIX]


def test_bmc_design_counterexample_replays():
    cfg = named("design")
    prefix, start = _prefix(cfg)
    k, steps, times = bmc(cfg, 4, start=start)
    assert k == 4 and len(times) == 4
    states = replay(cfg, prefix + steps)
    names = [n for n, _ in all_violations(states[-2], states[-1])]
    assert "committed_durable" in names


def test_bmc_kip320_none():
    cfg = named("kip320")
    prefix, start = _prefix(cfg)
    k, _, times = bmc(cfg, 4, start=start)
    assert k is None and len(times) == 4


@pytest.mark.parametrize("name", ["design", "kip320"])  # 300 states each: test_differential_deep
def test_differential(name):
    cfg = named(name)
    states = sample_states(cfg, 40)
    assert differential(cfg, states) == []


@pytest.mark.whole_space  # bench/bench_whole_space.py: about a minute per configuration
@pytest.mark.parametrize("name", ["design", "kip101", "kip279", "kip320"])
def test_differential_deep(name):
    cfg = named(name)
    assert differential(cfg, sample_states(cfg, 300, explore=20000)) == []


def test_covered_actions_are_model_actions():
    from model.registry import ACTIONS

    assert set(COVERED) <= set(ACTIONS)


def test_prove_cli(capsys):
    assert main(["prove", "--config", "kip320", "--depth", "3"]) == 3  # durability is bounded-checked, not proved
    out = capsys.readouterr().out
    assert "proved" in out and "holds to depth 3" in out
    assert main(["prove", "--config", "zombie"]) == 2
    assert main(["prove", "--brokers", "5"]) == 2


def test_proofs_are_not_vacuous():
    """Without controller- and broker-epoch fencing a broker may act on a superseded
    controller's request: the induction must fail, and name the actions that break it."""
    from dataclasses import replace

    cfg = replace(named("kip320"), fence_controller_epoch=False, fence_broker_epoch=False)
    failed = {v.name: v.detail for v in prove(cfg, 2) if v.status != "proved"}
    assert set(failed) == {"single_controller"}
    assert "become_leader" in failed["single_controller"]


def test_every_safety_property_has_a_symbolic_formula():
    """The ``prop_*`` formulas are held to ``properties.safety`` by ``differential`` on sampled
    states; this makes sure none is left out (``epoch_monotonic`` is a step formula)."""
    from properties.checkers.symbolic import STATE_PROPERTIES
    from properties.safety import BY_NAME

    assert set(STATE_PROPERTIES) | {"epoch_monotonic"} == set(BY_NAME)
