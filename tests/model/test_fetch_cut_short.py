"""A fetch answer cut short (``fetch_max_records``): the leader's HW is ahead of the
follower's new LEO, so the follower's cap -- ``hw = min(leader hw, leo)`` -- binds.

Without the knob the answer carries every record from the offset, so the follower's new
LEO is the leader's and a follower that took the leader's HW uncapped was never caught.
Here the cap binds, and a ``receive_fetch`` without it breaks ``hw_le_leo``."""

from __future__ import annotations

from model.actions import Step
from model.actions.common import replica, set_replica
from model.actions.replication import receive_fetch
from model.config import Config, named
from model.registry import apply, successors
from model.state import FETCH_REQUEST, FETCH_RESPONSE, OK, Fetch, State, initial
from properties.safety import hw_le_leo

A, B = 0, 1


def _message(s: State, kind: int) -> Fetch:
    return next(m for m in s.fetches if m.kind == kind and m.follower == B)


def _behind(cfg: Config) -> tuple[State, Fetch]:
    """Leader A takes two records while follower B, silent, is out of the ISR (the HW
    reaches 2); B then fetches from offset 0: the state with A's answer in flight."""
    s = initial(cfg)
    for step in (Step("produce", (A, 0)), Step("shrink_isr", (A, 0, B)), Step("produce", (A, 0)),
                 Step("send_fetch", (B, 0))):
        s = apply(s, cfg, step)
    s = apply(s, cfg, Step("handle_fetch", (_message(s, FETCH_REQUEST),)))
    return s, _message(s, FETCH_RESPONSE)


def _uncapped_receive_fetch(s: State, cfg: Config, m: Fetch) -> State | None:
    """The seeded bug: the follower takes the leader's HW as it is."""
    t = receive_fetch(s, cfg, m)
    if t is None or m.error != OK:
        return t
    return set_replica(t, m.follower, m.partition, replica(t, m.follower, m.partition)._replace(hw=m.hw))


def test_an_answer_of_one_record_carries_the_leaders_hw_ahead_of_the_followers_new_leo() -> None:
    cfg = named("kip320", fetch_max_records=1)
    s, m = _behind(cfg)
    assert len(m.records) == 1 and m.hw == 2
    t = apply(s, cfg, Step("receive_fetch", (m,)))
    r = replica(t, B, 0)
    assert (r.leo, r.hw) == (1, 1)  # the cap binds: the leader's HW is one record ahead
    assert hw_le_leo(t) is None


def test_without_the_knob_the_answer_carries_every_record_and_the_cap_never_binds() -> None:
    cfg = named("kip320")
    s, m = _behind(cfg)
    assert len(m.records) == 2 and m.hw == 2
    assert len(s.brokers[B].replicas[0].log) + len(m.records) >= m.hw


def test_a_follower_that_takes_the_leaders_hw_uncapped_breaks_hw_le_leo() -> None:
    cfg = named("kip320", fetch_max_records=1)
    s, m = _behind(cfg)
    t = _uncapped_receive_fetch(s, cfg, m)
    assert t is not None and hw_le_leo(t) == "broker 1 partition 0: hw=2 > leo=1"
    unlimited = named("kip320")
    s, m = _behind(unlimited)
    assert hw_le_leo(_uncapped_receive_fetch(s, unlimited, m)) is None  # the knob is what catches it


def test_the_search_reaches_answers_cut_short_only_under_the_knob() -> None:
    """Every state without crashes, walked breadth-first: under the knob every answer
    carries at most one record and some answer's HW is ahead of the LEO its follower will
    have; without it no answer's is."""
    for knob, ahead in ((1, True), (0, False)):
        cfg = named("kip320", max_crashes=0, fetch_max_records=knob)
        answers = {m for s in _reachable(cfg) for m in s.fetches if m.kind == FETCH_RESPONSE and m.error == OK}
        assert answers and all(len(m.records) <= 1 for m in answers) == bool(knob)
        assert any(m.hw > m.offset + len(m.records) for m in answers) == ahead


def _reachable(cfg: Config) -> set[State]:
    seen, frontier = {initial(cfg)}, [initial(cfg)]
    while frontier:
        frontier = [t for s in frontier for _, t in successors(s, cfg) if t not in seen and not seen.add(t)]
    return seen


def test_the_compiled_search_runs_the_knob_and_the_z3_encoding_refuses_it() -> None:
    from properties.checkers.native import unsupported as native_unsupported
    from properties.checkers.symbolic.coverage import unsupported as z3_unsupported

    cfg = named("kip320", fetch_max_records=1)
    assert native_unsupported(cfg) is None
    assert z3_unsupported(cfg) == "fetch answers cut short"
    assert z3_unsupported(named("kip320")) is None
