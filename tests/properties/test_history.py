"""Kafka's history, replayed: each known scenario breaks the configuration it was found in
and is stopped by the fix that answered it."""

from __future__ import annotations

import re

import pytest

from model.config import named
from model.scenarios import SCENARIOS
from model.three_brokers import THREE_BROKERS, three_brokers
from properties.checkers.scenarios import play
from tests.pinned import pinned


def names(outcome):
    return {name for name, _ in outcome.violations}


def test_kafka_1211_design_truncation_to_hw_loses_a_committed_record():
    out = play("kafka_1211", named("design"))
    assert {"committed_durable", "acked_durable"} <= names(out)


@pytest.mark.parametrize("fix", ["kip101", "kip279", "kip320"])
def test_kafka_1211_is_fixed_by_epoch_based_truncation(fix):
    out = play("kafka_1211", named(fix))
    assert not out.violations


def test_kip101_diverges_after_fast_leader_changes():
    out = play("kip279_divergence", named("kip101", brokers=3))
    assert names(out) == {"replicas_consistent"}
    assert len(out.steps) == pinned("kip101", "three brokers, scripted kip279_divergence", "counterexample steps")


@pytest.mark.parametrize("fix", ["kip279", "kip320"])
def test_kip279_epoch_lookup_prevents_that_divergence(fix):
    out = play("kip279_divergence", named(fix, brokers=3))
    assert not out.violations


def test_kip279_leader_advances_hw_on_a_follower_still_in_an_older_epoch():
    out = play("kip320_stale_fetch", named("kip279", brokers=3))
    assert "replicas_consistent" in names(out)
    assert "HW 0 → 1" in out.steps[-2][1] and "(epoch 1)" in out.steps[-2][1]


def test_kip320_fenced_fetching_refuses_the_stale_fetch():
    out = play("kip320_stale_fetch", named("kip320", brokers=3))
    assert not out.violations
    assert out.blocked_at == len(out.steps) + 1  # the refused request leaves no response to read
    assert "refuses fetch from 2" in out.steps[-1][1]


# -- the three-broker bounds -------------------------------------------------------------

THREE_BROKER_STORIES = {"kip279_divergence": "kip101", "kip320_stale_fetch": "kip279"}


def test_the_named_configurations_at_three_brokers_are_the_three_broker_bounds():
    """The stories above run at ``named(fix, brokers=3)``; those are exactly the bounds the
    exhaustive three-broker kip320 search uses (below)."""
    for name in ("kip101", "kip279", "kip320"):
        assert named(name, brokers=3) == three_brokers(name)


@pytest.mark.parametrize("story", sorted(THREE_BROKER_STORIES))
def test_each_later_bug_breaks_its_configuration_inside_the_three_broker_bounds(story):
    broken = play(story, three_brokers(THREE_BROKER_STORIES[story]))
    assert "replicas_consistent" in names(broken) and broken.blocked_at is None
    assert not play(story, three_brokers("kip320")).violations


@pytest.mark.parametrize("story", sorted(THREE_BROKER_STORIES))
@pytest.mark.parametrize("bound", ["records", "max_epoch", "max_crashes"])
def test_the_three_broker_bounds_are_the_smallest_each_story_needs(story, bound):
    """Lower any one bound and the story is refused before it breaks anything."""
    cfg = three_brokers(THREE_BROKER_STORIES[story], **{bound: THREE_BROKERS[bound] - 1})
    out = play(story, cfg)
    assert not out.violations
    assert out.blocked_at is not None and out.blocked_at <= len(SCENARIOS[story][1])


# -- found by the checker, not scripted ----------------------------------------------------


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.longest
def test_the_native_search_finds_kip279_diverging_at_three_brokers_by_itself():
    """KIP-320's bug found by exhaustive search, not only by the scripted story: the native
    search (``properties.checkers.native``, held to the model by tests/properties/test_native.py) finds a
    shortest counterexample of 20 steps after some ten million states: the
    leader of epoch 3 handles a fetch a follower sent in epoch 1, advances its HW on it, and
    the follower takes that HW over a log that disagrees ([a@1] against [b@3]).  About 45 s
    on both cores.  The counterexample is replayed through the Python model."""
    from properties.checkers.bfs import SearchOptions, replay
    from properties.checkers.native import check_native
    from properties.safety import all_violations

    cfg = three_brokers("kip279")
    r = check_native(cfg, SearchOptions(workers=2))
    assert r.states == pinned("kip279", "three brokers", "states")
    v = r.violation
    assert v is not None and v.property == "replicas_consistent"
    assert len(v.steps) == pinned("kip279", "three brokers", "counterexample steps")
    states = replay(cfg, [step for step, _ in v.steps])
    assert states == v.states
    assert not any(all_violations(a, b) for a, b in zip(states[:-2], states[1:-1], strict=True))
    stale = [d for s, d in v.steps if s.action == "handle_fetch" and "(epoch 1)" in d and "HW 0 → 1" in d]
    assert stale, "the HW advances on a fetch from the older epoch"


LEVEL_DONE = re.compile(r"\s*level\s+(?P<level>\d+) done\s+[\d,]+ new states, (?P<in_all>[\d,]+) in all")
"""The native search's line at the end of each level: how many states it has reached so far."""


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.longest
def test_kip320_exhausts_the_three_broker_bounds_with_every_property_holding():
    """The history's last row: at the three-broker bounds where kip101 and kip279 break (above:
    the checker finds both by itself), kip320 holds in *every* reachable state of the
    reduced graph -- some 19.5 M states, the longest shortest path 60 steps, about a minute
    on both cores with the native search (``properties.checkers.native``, held to the Python model by
    tests/properties/test_native.py and, state for state to depth 20, by the test above).
    Pinned: a change to the model, the reduction or the search that moves the count shows
    here.  Slow (CI runs it; the default suite keeps the native 20-step count of
    tests/properties/test_native.py, seconds instead of a minute or two).  (Before the controller ran onBrokerStartup once per registration, it could
    re-send a restarted broker the LeaderAndISR of every ISR version, and the space did not
    end: docs/checking.md, "Three-broker searches".)"""
    from properties.checkers.bfs import SearchOptions
    from properties.checkers.native import check_native

    levels: dict[int, int] = {}

    def level_done(line: str) -> None:
        done = LEVEL_DONE.match(line)
        if done:
            levels[int(done["level"])] = int(done["in_all"].replace(",", ""))

    r = check_native(three_brokers("kip320"), SearchOptions(reduction=True, workers=2, progress=level_done))
    assert r.violation is None, r.violation.text()
    assert r.complete and r.holds and r.stopped_by is None
    assert r.states == pinned("kip320", "three brokers, reduced", "states")
    assert r.depth == pinned("kip320", "three brokers, reduced", "depth")
    # the search's first 20 levels are the search bounded at 20 steps: the same count, read
    # from this run rather than paid for by a second search of 1.8 M states
    assert levels[20] == pinned("kip320", "three brokers, reduced, within 20 steps", "states")


@pytest.mark.integration
@pytest.mark.whole_space  # bench/bench_whole_space.py: CI exhausts the reduced space above
def test_kip320_exhausts_the_three_broker_bounds_without_the_partial_order_reduction_too():
    """The same verdict with nothing but symmetry: every reachable state of the full model
    at the three-broker bounds -- some 38 M states, depth 57, about three minutes on both
    cores -- keeps every property.  So the verdict above does not rest on the reduction's
    argument (``properties.checkers.reduction``), only on the model."""
    from properties.checkers.bfs import SearchOptions
    from properties.checkers.native import check_native

    r = check_native(three_brokers("kip320"), SearchOptions(workers=2))
    assert r.violation is None, r.violation.text()
    assert r.complete and r.holds and not r.reduction
    assert r.states == pinned("kip320", "three brokers", "states")
    assert r.depth == pinned("kip320", "three brokers", "depth")
