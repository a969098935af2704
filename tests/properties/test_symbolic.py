"""The z3 encoding (``properties.checkers.symbolic``): proofs succeed, BMC's counterexample replays in the
explicit model, the fixed configuration has none, and -- what keeps the two models from
drifting apart -- on states the explicit model reaches, the z3 relation allows exactly the
explicit successors and every property evaluates the same.
"""

from __future__ import annotations

import pytest
import z3

from impl.harness.cli.main import main
from model.config import named
from properties.checkers.bfs import replay
from properties.checkers.scenarios import play
from properties.checkers.symbolic import (
    COVERED,
    Encoding,
    bmc,
    differential,
    proofs,
    prove,
    sample_states,
)
from properties.safety import all_violations

# The durability lemmas proved by induction for kip320 (``symbolic.durability``).
DURABILITY_PROVED = {"live_is_up", "leader_epochs_positive", "log_slots_clean", "leader_is_zk_leader",
                     "pending_leadership", "acked_committed", "truncation_keeps_common_prefix"}


@pytest.mark.parametrize("name", ["design", "kip320"])
def test_inductive_proofs(name):
    verdicts = {v.name: v for v in prove(named(name), 2)}
    base = {*proofs.LEMMAS, *proofs.STATE_GOALS, *proofs.STEP_GOALS}
    assert base >= {"hw_le_leo", "isr_well_formed", "one_leader_per_epoch",
                    "single_controller", "epoch_monotonic", "q3_stale_leader_frozen"}
    assert [n for n in base if verdicts[n].status != "proved"] == []
    failed = [v for v in verdicts.values() if v.status != "proved"]
    assert all(v.cti[0] == "counterexample to induction:" for v in failed if "Init" not in v.detail)
    if name == "kip320":
        assert {n for n, v in verdicts.items() if v.status == "proved"} >= DURABILITY_PROVED
    else:  # the design truncates to its own HW: below what it shares with the leader
        assert "committed_durable" in {v.name for v in failed}
        cut = verdicts["truncation_keeps_common_prefix"]
        assert cut.status == "failed" and any(line.startswith("  action: truncate(") for line in cut.cti)


class _CutsBelowTheHw(Encoding):
    """A broken truncation rule: the follower truncates its whole log, committed records too."""

    def _truncation_point(self, s: dict, f: int, ld: int):
        return z3.IntVal(0)


def test_a_truncation_below_the_hw_fails_the_proof_with_a_readable_cti():
    verdicts = {v.name: v for v in prove(named("kip320"), 2, encoding=_CutsBelowTheHw)}
    cut = verdicts["truncation_keeps_common_prefix"]
    assert cut.status == "failed" and cut.detail == "not preserved by: truncate"
    text = "\n".join(cut.cti)
    assert "pre-state:" in text and "action: truncate(" in text and "post-state (what changed):" in text
    after = text.split("post-state (what changed):")[1]
    assert "log [] leo 0" in after  # the follower's log, cut to nothing
    assert {n for n, v in verdicts.items() if v.status == "proved"} >= DURABILITY_PROVED - {"truncation_keeps_common_prefix"}


def test_proofs_at_three_brokers():
    base = {*proofs.LEMMAS, *proofs.STATE_GOALS, *proofs.STEP_GOALS}
    assert all(v.status == "proved" for v in prove(named("kip101"), 3) if v.name in base)


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
    base = {*proofs.LEMMAS, *proofs.STATE_GOALS, *proofs.STEP_GOALS}
    failed = {v.name: v.detail for v in prove(cfg, 2) if v.status != "proved" and v.name in base}
    assert set(failed) == {"single_controller"}
    assert "become_leader" in failed["single_controller"]


def test_every_safety_property_has_a_symbolic_formula():
    """The ``prop_*`` formulas are held to ``properties.safety`` by ``differential`` on sampled
    states; this makes sure none is left out (``epoch_monotonic`` is a step formula)."""
    from properties.checkers.symbolic import STATE_PROPERTIES
    from properties.safety import BY_NAME

    assert set(STATE_PROPERTIES) | {"epoch_monotonic"} == set(BY_NAME)
