"""Two rules of Apache Kafka's partition leader that the Kafka configurations (``kafka26``,
``kafka39`` and their unclean twins) have and seed 000 G does not: the HW may wait for a
caught-up follower outside the ISR (``Partition.maybeIncrementLeaderHW``,
``hw_waits_outside_isr``), and a leader given a new leader epoch keeps its followers' fetch
offsets (``Partition.makeLeader``, ``leader_keeps_follower_state``)."""

from __future__ import annotations

import pytest

from model.actions.common import replica
from model.actions.replication import NO_HOLD
from model.config import Config, named
from model.registry import ACTIONS, Step, apply
from model.state import UNKNOWN, State, initial
from properties.checkers.native import unsupported as native_unsupported
from properties.checkers.symbolic.coverage import unsupported as z3_unsupported

KAFKA = named("kafka26", brokers=3, records=2, max_crashes=1)
SEED = named("kip320", brokers=3, records=2, max_crashes=1)


def _step(s: State, cfg: Config, action: str, *args: object) -> State:
    t = apply(s, cfg, Step(action, tuple(args)))
    assert t is not None, f"{action}{args} is not enabled"
    return t


def _fetch_request(s: State, f: int) -> object:
    return next(m for m in s.fetches if m.follower == f and m.kind == 0)


def _fetch(s: State, cfg: Config, f: int) -> State:
    """Follower f's fetch from leader 0, sent, handled (held by no one) and its answer read."""
    s = _step(s, cfg, "send_fetch", f, 0)
    s = _step(s, cfg, "handle_fetch", _fetch_request(s, f))
    return _step(s, cfg, "receive_fetch", next(m for m in s.fetches if m.follower == f))


def _follower_2_out_at_0(cfg: Config) -> State:
    """Broker 0 leads with ISR {0,1}, record 1 committed (HW 1); follower 2, out of the ISR,
    last fetched at offset 0; record 2 appended, which follower 1 has received, and its
    next fetch, at offset 2, is on its way to the leader."""
    s = _step(initial(cfg), cfg, "produce", 0, 0)
    s = _step(s, cfg, "send_fetch", 2, 0)
    s = _step(s, cfg, "handle_fetch", _fetch_request(s, 2))  # the leader learns 2 is at offset 0
    s = _fetch(_fetch(s, cfg, 1), cfg, 1)
    s = _step(s, cfg, "shrink_isr", 0, 0, 2)
    assert replica(s, 0, 0).isr == (0, 1) and replica(s, 0, 0).hw == 1
    s = _fetch(_step(s, cfg, "produce", 0, 0), cfg, 1)
    return _step(s, cfg, "send_fetch", 1, 0)


def test_a_caught_up_follower_outside_the_isr_may_hold_the_hw() -> None:
    s = _follower_2_out_at_0(KAFKA)
    m = _fetch_request(s, 1)
    assert m.offset == 2
    unheld = _step(s, KAFKA, "handle_fetch", m)
    held = _step(s, KAFKA, "handle_fetch", m, 2)
    assert replica(unheld, 0, 0).hw == 2, "the ISR {0,1} is at 2"
    assert replica(held, 0, 0).hw == 1, "follower 2, outside the ISR at offset 0, holds it (never backwards)"
    assert (1, 1) not in {(p, e.value) for p, _, e in held.ghost.committed}
    assert "held by follower 2" in ACTIONS["handle_fetch"].describe((m, 2), s, held)


@pytest.mark.parametrize("hold", [NO_HOLD, 0, 1])
def test_only_a_follower_outside_the_isr_holds(hold: int) -> None:
    s = _follower_2_out_at_0(KAFKA)
    t = apply(s, KAFKA, Step("handle_fetch", (_fetch_request(s, 1), hold)))
    assert (t is not None) == (hold == NO_HOLD), "the leader itself and an ISR member hold nothing"


def test_a_follower_no_longer_registered_holds_nothing() -> None:
    s = _step(_follower_2_out_at_0(KAFKA), KAFKA, "broker_crash", 2)
    assert apply(s, KAFKA, Step("handle_fetch", (_fetch_request(s, 1), 2))) is None


def test_seed_000_g_has_no_hold() -> None:
    s = _follower_2_out_at_0(SEED)
    m = _fetch_request(s, 1)
    assert apply(s, SEED, Step("handle_fetch", (m, 2))) is None
    assert apply(s, SEED, Step("produce", (0, 0, 2))) is None
    assert replica(_step(s, SEED, "handle_fetch", m), 0, 0).hw == 2
    assert all(len(a) == 1 for a in ACTIONS["handle_fetch"].args(s, SEED))


def _epoch_bumped(cfg: Config) -> State:
    """Broker 0 leads, follower 1 has fetched at offset 1; broker 2 dies and the controller
    writes the ISR without it in a new leader epoch for the same leader (Kafka's controller
    by taking replica 2 offline), which broker 0 applies."""
    s = _fetch(_fetch(_step(initial(cfg), cfg, "produce", 0, 0), cfg, 1), cfg, 1)
    assert replica(s, 0, 0).follower_leo[1] == 1
    offline = (2,) if cfg.offline_replica_writes else ()
    s = _step(_step(s, cfg, "broker_crash", 2), cfg, "elect_leader", 0, 0, 0, *offline)
    m = next(m for m in s.leader_and_isr if m.to == 0 and m.leader_epoch == 2)
    return _step(s, cfg, "become_leader", m)


def test_a_leader_keeps_its_followers_fetch_offsets_across_its_own_new_epoch() -> None:
    r = replica(_epoch_bumped(KAFKA), 0, 0)
    assert (r.leader_epoch, r.isr, r.follower_leo[1]) == (2, (0, 1), 1)
    assert r.hw == 1, "follower 1's offset, kept, is the ISR's least: the record is committed"
    seed = replica(_epoch_bumped(SEED), 0, 0)
    assert (seed.follower_leo[1], seed.hw) == (UNKNOWN, 0), "the model's makeLeader forgets it"



@pytest.mark.parametrize(("rule", "named_in_refusal"), [("hw_waits_outside_isr", "outside"),
                                                        ("leader_keeps_follower_state", "fetch state")])
def test_z3_refuses_each_rule_and_the_compiled_search_runs_it(rule: str, named_in_refusal: str) -> None:
    """z3 does not render the two rules: a configuration with either is refused, by name, and
    ``kip320`` itself is not.  The compiled search runs them (native/kafka_leader.c, held to
    the model by tests/properties/test_native.py)."""
    cfg = named("kip320", **{rule: True})
    assert native_unsupported(cfg) is None
    assert named_in_refusal in (z3_unsupported(cfg) or "")
    assert native_unsupported(named("kip320")) is None and z3_unsupported(named("kip320")) is None
