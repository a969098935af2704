"""The native search's reassignments, session expiries and refused LeaderAndISR requests are
the model's (``properties/checkers/native/reassign.c``, ``expire.c``; the StopReplica of a
reassignment in ``shutdown.c``): whole searches of each family reach the same states,
transitions, depth and verdict natively and in Python, a sample of their states expands
alike step by step, the refusal -- a self-loop no search takes -- refuses exactly the
requests the model refuses, and a rule mutated in the C is caught by these comparisons.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import replace

import pytest

from model.actions import reject_leader_and_isr
from model.config import Config, named
from model.registry import successors
from model.state import initial
from properties.checkers import native
from properties.checkers.bfs import SearchOptions, check
from properties.checkers.native import (
    check_native,
    decode,
    encode,
    native_rejects,
)
from tests.properties.test_native import _searches_and_expands_alike

# nearly every test here compiles the search or runs its binary
pytestmark = pytest.mark.integration


REASSIGNMENTS = named("kip320", records=1, max_crashes=0, reassignments=1)
"""A reassignment as the only admin action and no failure: small enough for Python both ways."""

EXPIRIES = named("kip320", records=1, max_crashes=0, max_expiries=1)
"""A running broker's session expiry as the only failure: deregistered, it still leads or follows."""

FAMILIES = [
    REASSIGNMENTS,
    # two: a replica set shrunk and grown again, so a deleted replica (its leader epoch
    # kept) is brought back by a LeaderAndISR -- and the order of the controller's channel
    # kept alike (without it both found a deleted replica taking an older LeaderAndISR)
    named("kip320", records=1, max_crashes=0, reassignments=2),
    # Kafka's reassignment in phases (Config.reassign_phases): the start's own epoch, the
    # completion that keeps the ISR, and the removed replicas' own ISR writes that end it
    named("kafka26", records=1, max_crashes=0, reassignments=1),
    EXPIRIES,
    named("unclean", records=1, max_expiries=1),
    # a replication factor below the broker count: a broker outside the AR holds no replica
    named("kip320", brokers=3, replication_factor=2, records=1, max_crashes=1),
    # a reassignment's StopReplica beside a controlled shutdown's, and beside a topic deletion's
    pytest.param(named("unclean", records=1, reassignments=1, max_shutdowns=1), marks=pytest.mark.slow),
    pytest.param(named("kip320", records=1, max_crashes=0, reassignments=1, deletions=1), marks=pytest.mark.slow),
    pytest.param(named("design", records=1, reassignments=1), marks=pytest.mark.slow),
]


def _figures(cfg: Config, options: SearchOptions) -> tuple[tuple, tuple]:
    a, b = check(cfg, options), check_native(cfg, options)
    return (a.states, a.transitions, a.depth, a.holds), (b.states, b.transitions, b.depth, b.holds)


@pytest.mark.parametrize("cfg", FAMILIES, ids=lambda c: c.describe().split(":")[0] + "-" + "-".join(
    f"{k}{getattr(c, k)}" for k in ("reassignments", "max_expiries", "max_shutdowns", "replication_factor", "max_crashes") if getattr(c, k)))
def test_each_family_searches_alike_natively_and_in_python(tmp_path, cfg):
    """Reduced and not: the same states, transitions, depth and verdict (and counterexample),
    and a seeded sample of the native states expands exactly as in Python."""
    _searches_and_expands_alike(tmp_path, cfg, cfg.describe())


def test_a_reassignment_searches_alike_without_symmetry():
    """Every broker named as it is: the AR and RAR the C keeps are the model's, not merely
    their orbits."""
    for reduction in (False, True):
        python, ours = _figures(REASSIGNMENTS, SearchOptions(symmetry=False, reduction=reduction))
        assert ours == python


def test_a_reassignment_to_a_broker_outside_the_assignment_searches_alike_within_eight_steps():
    """Three brokers, two of them assigned: a reassignment may move the partition to the third
    (a LeaderAndISR to a broker that held no replica, a StopReplica to one that did)."""
    cfg = named("kip320", brokers=3, replication_factor=2, records=1, max_crashes=0, reassignments=1)
    for reduction in (False, True):
        python, ours = _figures(cfg, SearchOptions(reduction=reduction, max_depth=8))
        assert ours == python


@pytest.mark.parametrize("cfg", [
    # a paused controller's requests taken after a new one is elected (seed 002 unfenced)
    replace(named("zombie", records=1), fence_controller_epoch=False, fence_broker_epoch=False),
    # a crashed broker's requests kept for its next incarnation (seed 003 unfenced)
    replace(named("kip320", records=1, max_crashes=1), fence_broker_epoch=False)],
    ids=["zombie-unfenced", "kip320-no-broker-epoch-fencing"])
def test_without_fencing_the_searches_alike(tmp_path, cfg):
    """``--no-fencing``: requests of an older controller epoch or broker incarnation are taken,
    kept rather than forgotten, and not dropped by the reduction's normal form."""
    _searches_and_expands_alike(tmp_path, cfg, cfg.describe())


def _walk(cfg: Config, seed: int, length: int) -> list:
    rnd = random.Random(seed)
    s, run = initial(cfg), [initial(cfg)]
    for _ in range(length):
        options = list(successors(s, cfg))
        if not options:
            break
        s = options[rnd.randrange(len(options))][1]
        run.append(s)
    return run


def test_decode_inverts_encode_for_a_pending_reassignment_and_an_expiry():
    cfg = named("kip320", reassignments=2, max_expiries=1)
    seen = {s for seed in range(8) for s in _walk(cfg, seed, 25)}
    assert any(s.zk.partitions[0].rar for s in seen) and any(s.ghost.expiries for s in seen)
    assert any(m.delete and m.leader_epoch >= 0 for s in seen for m in s.stop_replica)  # a reassignment's
    assert all(decode(encode(s)) == s for s in seen)


def test_the_native_refusal_of_a_leader_and_isr_is_the_models():
    """Each walked state with every request sent along its walk so far (most of them long
    stale: forgotten by the model, refused by a broker that receives them again): the
    native ``reject_leader_and_isr`` refuses exactly the ones the model refuses."""
    cfg = named("kip320", deletions=1, topic_ids=False, max_pauses=1, reassignments=1)
    states, refused = [], 0
    for seed in range(10):
        sent: set = set()
        for s in _walk(cfg, seed, 30):
            sent |= set(s.leader_and_isr)
            states.append(s._replace(leader_and_isr=tuple(sorted(sent))))
    answers = native_rejects(cfg, [encode(s) for s in states])
    for s, got in zip(states, answers, strict=True):
        want = [reject_leader_and_isr(s, cfg, m) is not None for m in s.leader_and_isr]
        assert got == want, s
        refused += sum(want)
    assert 0 < refused < sum(len(s.leader_and_isr) for s in states)  # both answers are exercised


MUTANTS = [
    # the completion before RAR has caught up with the ISR
    ("reassign.c", "if (!rar || (rar & ~zn->isr) ||", "if (!rar ||", REASSIGNMENTS),
    # the ISR written keeps the replicas the reassignment removes
    pytest.param("reassign.c", "if (!C.reassign_phases) zn->isr &= rar;", "", REASSIGNMENTS, marks=pytest.mark.slow),
    # a reassignment's StopReplica only stops the replica, keeping its log
    pytest.param("shutdown.c", "        deleted_replica(r);\n    return 1;", "        replica_stops(r);\n    return 1;", REASSIGNMENTS, marks=pytest.mark.slow),
    # an expired session leaves /controller in place (its registration alone goes)
    pytest.param("expire.c", "deregister(s, b);", "s->live &= (u8)~(1 << b);", EXPIRIES, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("unit", "rule", "mutated", "cfg"), MUTANTS, ids=["rar-not-in-isr", "isr-keeps-removed",
                                                                            "stop-keeps-log", "expiry-keeps-controller"])
def test_a_mutated_rule_is_caught(monkeypatch, tmp_path, unit, rule, mutated, cfg):
    """The comparisons above fail for a C rule changed in one place: each mutant's search
    differs from the model's in its figures, or finds a counterexample the model cannot
    take (its replay through the model fails)."""
    src = tmp_path / "src"
    shutil.copytree(native.SOURCE_DIR, src)
    text = (src / unit).read_text()
    assert text.count(rule) == 1
    (src / unit).write_text(text.replace(rule, mutated))
    monkeypatch.setattr(native, "SOURCE_DIR", src)
    monkeypatch.setenv("EPOCHAL_CACHE", str(tmp_path / "cache"))
    try:
        python, ours = _figures(cfg, SearchOptions(reduction=True))
    except RuntimeError as e:
        assert "replay could not reproduce" in str(e)
    else:
        assert ours != python
