"""The native search with more than one partition id held to the Python model: partitions
added and removed (seed 000 H, ``native/partitions.c``) and topics of two partitions.

Every rule of the compiled search takes its partition; these searches run both ways and
compare states, transitions, depth and verdict, and expand a seeded sample of the states
natively and in Python (``tests/properties/test_native.py`` does the same for one
partition).  The larger spaces of partition changes are checked against the Python
checker's pinned figures (``docs/pinned-counts.md``), which its own tests pin.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from model.config import named
from properties.checkers.bfs import SearchOptions, check
from properties.checkers.native import (
    NARROW_BROKERS,
    NARROW_PARTITION_IDS,
    check_native,
    decode,
    native_expansions,
)
from tests.pinned import pinned
from tests.properties.test_native import _python_expansion, _reached, _searches_and_expands_alike

pytestmark = pytest.mark.integration

SMALL = {"records": 1, "max_crashes": 0}

# (configuration, knobs): whole spaces both ways, reduced and not, and a sample of each (the
# default suite: a topic of two partitions, and the partition changes' pinned figures below)
FAMILIES = [("kip320", {"partitions": 2, **SMALL}),
            pytest.param("kip320", {"partition_changes": 1, **SMALL}, marks=pytest.mark.slow),
            # an unclean election's label kept per partition
            pytest.param("unclean", {"partition_changes": 1, "records": 1, "max_epoch": 2}, marks=pytest.mark.slow),
            # AlterPartition and Kafka's broker rules, per partition
            pytest.param("kafka39", {"partitions": 2, "max_epoch": 2, **SMALL}, marks=pytest.mark.slow),
            pytest.param("kafka26", {"partition_changes": 1, "records": 1, "max_crashes": 1, "max_epoch": 1},
                         marks=[pytest.mark.slow, pytest.mark.longest]),
            # a preferred election of each partition (the identity renaming while one may happen)
            pytest.param("design", {"partitions": 2, "preferred_elections": 1, "max_epoch": 2, **SMALL},
                         marks=pytest.mark.slow)]


@pytest.mark.parametrize(("name", "knobs"), FAMILIES, ids=lambda v: v if isinstance(v, str) else "+".join(v))
def test_each_partition_family_searches_alike_natively_and_in_python(tmp_path, name, knobs):
    _searches_and_expands_alike(tmp_path, named(name, **knobs), name + "/" + "+".join(knobs))


@pytest.mark.parametrize(("name", "knobs", "depth"), [
    ("kip320", {"partitions": 3, **SMALL}, 7),
    # a controlled shutdown moves one partition at a time; the clean stop waits for every ISR
    ("kip320", {"partitions": 2, "max_shutdowns": 1, **SMALL}, 7),
    # a topic deletion and re-creation, and a reassignment, of either partition
    ("kip320", {"partitions": 2, "deletions": 1, **SMALL}, 7),
    ("kip320", {"partitions": 2, "reassignments": 1, **SMALL}, 7),
    pytest.param("design", {"partition_changes": 1, "max_shutdowns": 1, "max_epoch": 2, **SMALL}, 8,
                 marks=pytest.mark.slow),
    pytest.param("kip320", {"partition_changes": 2, "records": 1, "max_crashes": 1}, 8, marks=pytest.mark.slow)],
    ids=["three-partitions", "shutdown-two-partitions", "deletion-two-partitions", "reassignment-two-partitions",
         "shutdown-partition-change", "two-fresh-ids"])
def test_more_partition_ids_search_alike_within_a_few_steps(name, knobs, depth):
    """Three partition ids (all there at the start, or two added as fresh ids), and controlled
    shutdowns, topic deletions and reassignments beside a second partition: the runs of up to
    ``depth`` steps both ways, reduced and not."""
    cfg = named(name, **knobs)
    for reduction in (False, True):
        options = SearchOptions(reduction=reduction, max_depth=depth)
        a, b = check(cfg, options), check_native(cfg, options)
        assert (b.states, b.transitions, b.checked_depth, b.violation) == (a.states, a.transitions, a.checked_depth, None)
        assert a.violation is None


def test_five_partition_ids_search_alike_in_the_wide_build():
    """Three partitions and two changes, the model's most: the wide build (``WIDE_FLAGS``),
    its runs of up to four steps both ways, and of eight reduced."""
    cfg = named("kip320", partitions=3, partition_changes=2, **SMALL)
    assert cfg.partition_ids > NARROW_PARTITION_IDS
    _alike_to_depths(cfg, ((False, 4), (True, 8)))


def test_five_brokers_search_alike_in_the_wide_build():
    """The model's most brokers, in the wide build too (``NARROW_BROKERS`` is the usual
    build's): the runs of up to four steps both ways, and of ten reduced -- the
    canonical renaming chosen among up to 120 candidates."""
    cfg = named("kip320", brokers=5, records=1, max_crashes=1)
    assert cfg.brokers > NARROW_BROKERS
    _alike_to_depths(cfg, ((False, 4), (True, 10)))


def _alike_to_depths(cfg, runs) -> None:
    """Both searches cut at each (reduction, depth): the same states and transitions, no violation."""
    for reduction, depth in runs:
        options = SearchOptions(reduction=reduction, max_depth=depth)
        a, b = check(cfg, options), check_native(cfg, options)
        assert (b.states, b.transitions, b.checked_depth, b.violation) == (a.states, a.transitions, depth, None)
        assert a.checked_depth == depth and a.violation is None


REUSE = named("kip320", partition_changes=2, reuse_partition_ids=1, records=1, max_crashes=1, max_epoch=1)


@pytest.mark.slow
@pytest.mark.parametrize("knobs", [{}, {"partition_identity": 1}, {"topic_ids": False}],
                         ids=["reused", "identity", "no-topic-ids"])
def test_reused_partition_ids_search_alike_within_eight_steps(tmp_path, knobs):
    """Ids added again, with and without their own identity, and without topic ids (where a
    removed replica's refused requests are kept): the runs of up to eight steps both ways,
    and a sample of their states expanded both ways."""
    cfg = replace(REUSE, **knobs)
    options = SearchOptions(max_depth=8)
    a, b = check(cfg, options), check_native(cfg, options)
    assert (b.states, b.transitions, b.checked_depth, b.holds) == (a.states, a.transitions, a.checked_depth, a.holds)
    states, _ = _reached(cfg, tmp_path, max_depth=8)
    sample = random.Random("+".join(knobs)).sample(states, min(400, len(states)))
    for enc, got in zip(sample, native_expansions(cfg, sample), strict=True):
        assert got == _python_expansion(decode(enc), cfg, True, False)


# -- the Python checker's pinned figures, natively ----------------------------------------

LOSS = "partition changes 2, ids reused, no identity, one record, one crash, epoch 1"


@pytest.mark.slow
def test_the_pinned_partition_change_count_natively():
    r = check_native(named("kip320", partition_changes=1, records=1, max_crashes=1))
    bound = "partition changes 1, one record, one crash"
    assert r.holds and (r.states, r.depth) == (pinned("kip320", bound, "states"), pinned("kip320", bound, "depth"))


def test_without_identity_the_native_search_finds_the_removed_record_served():
    """The shortest counterexample, found natively and replayed through the Python model."""
    r = check_native(REUSE)
    assert r.violation is not None and r.violation.property == "deleted_not_served"
    assert len(r.violation.steps) == pinned("kip320", LOSS, "counterexample steps")
    assert [step.action for step, _ in r.violation.steps][-1] == "add_partitions"


def test_with_identity_the_pinned_runs_natively():
    depth = pinned("kip320", LOSS, "counterexample steps")
    r = check_native(replace(REUSE, partition_identity=1), SearchOptions(max_depth=depth))
    bound = f"partition changes 2, ids reused, identity, one record, one crash, epoch 1, within {depth} steps"
    assert r.violation is None and r.checked_depth == depth and r.states == pinned("kip320", bound, "states")
