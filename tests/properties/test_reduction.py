"""The partial-order reduction (``properties.checkers.reduction``): same verdicts, the same visible states,
counterexamples that replay, and ample chains that cannot cycle.

Where the full search is cheap (two brokers) the reduced one is compared with it directly:
the claim is not only "no new violation is missed" but the stronger one the argument in
``properties.checkers.reduction`` gives -- every state the properties can see (ZooKeeper, brokers, ghost
history) that the full search reaches, the reduced one reaches too.
"""

from __future__ import annotations

import pytest

from model.config import NAMED, Config, named
from model.registry import successors
from model.state import DOWN, FETCH_REQUEST, FETCH_RESPONSE, State, initial
from properties.checkers.bfs import SearchOptions, check, replay
from properties.checkers.reduction import ample, applies, free_step, normal_form, visible
from properties.checkers.symmetry import canonical
from properties.safety import all_violations
from tests.pinned import pinned
from tests.searched import searched

# distinct states of the reduced search at the default (two-broker) bounds, pinned like the
# full counts in test_checker.py (docs/pinned-counts.md): a change in the model or the
# reduction shows up here
PINNED_REDUCED = {name: pinned(name, "default, reduced", "states") for name in ("kip320", "zombie")}
# the full search's verdicts at the default bounds (test_checker.py pins them)
FULL_VERDICTS = {"design": "committed_durable", "kip101": "holds", "kip279": "holds", "kip320": "holds",
                 "unclean": "committed_durable", "zombie": "holds", "kafka26": "holds",
                 "kafka39": "holds", "kafka26-unclean": "committed_durable",
                 "kafka39-unclean": "committed_durable"}


def _verdict(r) -> str:
    return r.violation.property if r.violation else ("holds" if r.complete else "incomplete")


# kip101, kip279, kip320 and the kafka configurations search the most states of the named configurations: the slow suite's
SLOW_REDUCED = {"kip101", "kip279", "kip320", "kafka26"}
# kafka39 (1,146,961 states unreduced, about nine minutes): bench/bench_whole_space.py's
WHOLE_SPACE_REDUCED = {"kafka39"}


def _marked(name: str) -> object:
    if name in WHOLE_SPACE_REDUCED:
        return pytest.param(name, marks=pytest.mark.whole_space)
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW_REDUCED else name


@pytest.mark.parametrize("name", [_marked(n) for n in sorted(NAMED)])
def test_the_reduced_search_reaches_the_same_verdict(name):
    reduced = searched(named(name), SearchOptions(reduction=True))
    assert reduced.reduction
    assert _verdict(reduced) == FULL_VERDICTS[name]
    if name in PINNED_REDUCED:
        assert reduced.states == PINNED_REDUCED[name]


def _reach(cfg: Config, reduction: bool) -> tuple[set[State], set[tuple[State, State]]]:
    """Visible states and visible transitions (between different visible states) of the
    whole reachable graph, violations or not -- a plain BFS without the checker's stop."""

    def key(t: State) -> State:
        return canonical(normal_form(t, cfg) if reduction else t)

    root = key(initial(cfg))
    seen, frontier = {root}, [root]
    states = {canonical(visible(root))}
    steps: set[tuple[State, State]] = set()
    while frontier:
        nxt = []
        for s in frontier:
            succ = list(successors(s, cfg))
            if reduction:
                succ = ample(s, cfg, succ)
            vs = canonical(visible(s))
            for _step, t in succ:
                vt = canonical(visible(t))
                if vt != vs:
                    steps.add((vs, vt))
                c = key(t)
                if c not in seen:
                    seen.add(c)
                    nxt.append(c)
                    states.add(vt)
        frontier = nxt
    return states, steps


@pytest.mark.parametrize("cfg", [named("kip320", max_crashes=1), named("unclean"), named("zombie", records=1)], ids=lambda c: c.name)
def test_the_reduced_search_reaches_every_visible_state_and_step(cfg):
    full_states, full_steps = _reach(cfg, False)
    red_states, red_steps = _reach(cfg, True)
    assert red_states == full_states
    assert red_steps == full_steps


@pytest.mark.parametrize("name", ["unclean", "design"])
def test_reduced_counterexamples_replay_through_the_model(name):
    cfg = named(name)
    v = check(cfg, SearchOptions(reduction=True)).violation
    assert v is not None
    states = replay(cfg, [s for s, _ in v.steps])
    assert states == v.states
    assert all_violations(states[-2], states[-1])
    assert not any(all_violations(a, b) for a, b in zip(states, states[1:-1], strict=False))


def _measure(s: State) -> tuple[int, int]:
    """(responses + dead requests, -requests): falls along every ample step (the cycle
    proviso's argument in properties.checkers.reduction)."""
    requests = [m for m in s.fetches if m.kind == FETCH_REQUEST]
    dead = sum(1 for m in requests if m.epoch < s.brokers[m.leader].replicas[m.partition].leader_epoch)
    responses = sum(1 for m in s.fetches if m.kind == FETCH_RESPONSE)
    return responses + dead, -len(requests)


def test_ample_steps_change_only_messages_and_cannot_cycle():
    cfg = named("kip320", max_crashes=1)
    assert applies(cfg)
    seen, frontier, reduced = {initial(cfg)}, [initial(cfg)], 0
    while frontier:
        nxt = []
        for s in frontier:
            succ = list(successors(s, cfg))
            chosen = ample(s, cfg, succ)
            if len(chosen) < len(succ):
                reduced += 1
                (_step, t), = chosen
                assert visible(t) == visible(s)
                assert _measure(t) < _measure(s)
            for _step, t in chosen:
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    assert reduced > 100  # the reduction did something


def test_before_kip320_only_the_normal_form_applies():
    cfg = named("kip279")
    assert not applies(cfg)
    s = initial(cfg)
    succ = list(successors(s, cfg))
    assert ample(s, cfg, succ) == succ


def test_the_normal_form_forgets_only_what_a_crashed_broker_can_never_read():
    from model.actions import Step
    from model.registry import apply

    cfg = named("kip320", brokers=3)
    s = initial(cfg)
    s = apply(s, cfg, Step("send_fetch", (1, 0)))
    req = next(m for m in s.fetches if m.follower == 1)
    s = apply(s, cfg, Step("broker_crash", (1,)))
    s = apply(s, cfg, Step("handle_fetch", (req,)))  # the leader answers a dead follower
    assert s.brokers[1].status == DOWN and any(m.kind == FETCH_RESPONSE for m in s.fetches)
    n = normal_form(s, cfg)
    assert not any(m.kind == FETCH_RESPONSE and m.follower == 1 for m in n.fetches)
    assert visible(n) == visible(s)
    s = apply(s, cfg, Step("controller_elect", (2,))) if s.zk.controller == -1 else s
    s = apply(s, cfg, Step("elect_leader", (s.zk.controller, 0, 0))) or s
    n = normal_form(s, cfg)
    assert all(m.to != 1 for m in n.leader_and_isr)
    # without broker-epoch fencing a request to a crashed broker is kept: it may be acted on
    unfenced = named("kip320", brokers=3, fence_broker_epoch=False)
    assert normal_form(s, unfenced).leader_and_isr == s.leader_and_isr


def test_a_free_step_from_a_canonical_state_with_distinct_brokers_stays_canonical():
    """The checker's fast path (properties.checkers.bfs._expand_chunk) keeps a free step's successor
    as it is when the brokers' signatures are all different: signatures, versions and the
    normal form ignore the messages a free step changes."""
    from properties.checkers.symmetry import candidate_permutations

    cfg = named("kip320", max_crashes=1)
    root = canonical(initial(cfg))
    seen, frontier, checked = {root}, [root], 0
    while frontier:
        nxt = []
        for s in frontier:
            pair = free_step(s, cfg)
            if pair is not None and len(candidate_permutations(s)) == 1:
                t = normal_form(pair[1], cfg)
                assert canonical(t) == t
                checked += 1
            for _step, t in ample(s, cfg, list(successors(s, cfg))):
                c = canonical(normal_form(t, cfg))
                if c not in seen:
                    seen.add(c)
                    nxt.append(c)
        frontier = nxt
    assert checked > 100


def test_the_parallel_reduced_search_visits_the_same_states(monkeypatch):
    import properties.checkers.bfs as checker

    cfg = named("kip320", max_crashes=1)
    serial = searched(cfg, SearchOptions(reduction=True))
    monkeypatch.setattr(checker, "PARALLEL_THRESHOLD", 10)
    monkeypatch.setattr(checker, "CHUNK", 50)
    parallel = check(cfg, SearchOptions(reduction=True, workers=2))
    assert parallel.states == serial.states and parallel.holds
