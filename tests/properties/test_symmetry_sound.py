"""Symmetry reduction never changes a verdict: for every named configuration (small bounds)
the search finds a violation with the reduction exactly when it finds one without it, and a
counterexample found under the reduction replays through the model."""

from __future__ import annotations

import importlib

import pytest

from model.config import NAMED, named
from properties.checkers.bfs import SearchOptions, check
from properties.checkers.symmetry import canonical
from tests.searched import searched

SMALL = {"records": 1, "max_epoch": 3, "max_crashes": 1}
BUDGET = 40_000


def _verdicts(cfg, reduction: bool = False):
    with_sym = check(cfg, SearchOptions(symmetry=True, reduction=reduction, max_states=BUDGET))
    without = check(cfg, SearchOptions(symmetry=False, max_states=BUDGET))
    return with_sym, without


@pytest.mark.parametrize("name", sorted(NAMED))
def test_the_verdict_is_the_same_with_and_without_symmetry(name: str) -> None:
    cfg = named(name, **{k: v for k, v in SMALL.items() if k != "max_crashes" or NAMED[name].max_crashes})
    with_sym, without = _verdicts(cfg)
    assert (with_sym.violation is None) == (without.violation is None)
    if with_sym.violation is not None:
        assert with_sym.violation.property == without.violation.property
    elif with_sym.complete and without.complete:
        assert with_sym.states <= without.states


ADMIN = ("partition_changes", "preferred_elections", "reassignments", "max_shutdowns", "deletions")


@pytest.mark.parametrize("reduction", [False, True])
@pytest.mark.parametrize("knob", ADMIN)
def test_the_verdict_is_the_same_with_and_without_symmetry_for_each_admin_action(knob: str, reduction: bool) -> None:
    cfg = named("kip320", records=1, max_crashes=0, **{knob: 1})
    with_sym = check(cfg, SearchOptions(symmetry=True, reduction=reduction, max_states=BUDGET))
    # the search without symmetry is the same for both reductions: searched once per process
    without = searched(cfg, SearchOptions(symmetry=False, max_states=BUDGET))
    assert (with_sym.violation is None) == (without.violation is None)
    if with_sym.complete and without.complete:
        assert with_sym.states <= without.states


def _ignores_the_isr(ar, leader, isr, live):
    """A wrong preferred-replica rule: the first replica of the AR takes over whenever it is
    alive, in the ISR or not -- an unclean election that can lose committed records."""
    if not ar or ar[0] == leader or ar[0] not in live:
        return None
    return ar[0]


@pytest.mark.parametrize("reduction", [False, True])
def test_a_preferred_election_mutant_is_reported_with_a_replayed_counterexample_under_symmetry(monkeypatch: pytest.MonkeyPatch, reduction: bool) -> None:
    monkeypatch.setattr(importlib.import_module("model.actions.preferred_election"), "preferred_leader", _ignores_the_isr)
    cfg = named("kip320", preferred_elections=1)
    with_sym, without = _verdicts(cfg, reduction)
    assert without.violation is not None
    assert with_sym.violation is not None
    assert with_sym.violation.property == without.violation.property
    assert with_sym.violation.states[-1].ghost.preferred_elections == 1
    if not reduction:  # with it, counterexamples are shortest in the reduced graph
        assert len(with_sym.violation.steps) == len(without.violation.steps)


def test_while_a_preferred_election_may_happen_broker_names_are_kept() -> None:
    from model.state import initial

    cfg = named("kip320", preferred_elections=1)
    s = initial(cfg)
    spent = s._replace(ghost=s.ghost._replace(preferred_elections=1))
    assert canonical(s, cfg).zk.partitions == s.zk.partitions
    assert canonical(spent, cfg) == canonical(spent)
