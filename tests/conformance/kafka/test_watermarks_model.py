"""One rule in two places: the leader's HW waits for a caught-up follower outside the ISR
(Kafka's ``Partition.maybeIncrementLeaderHW``).  The model states it as a choice
(``model.actions.replication.held_at``, ``Config.hw_waits_outside_isr``); the Kafka-log
adapter reads it from Kafka's lines (``conformance.kafka.watermarks.waits_for`` and
``hw_as_read``).  Each test builds the same small situation for both sides -- leader 0 of
three brokers, every ISR holding the leader, every assignment holding the ISR, every live set
of followers, logs of 0..3 records, each follower's fetch offset known or not, and each set
of followers the adapter's clock counts caught up -- and checks that they agree.

Where they differ it is by design, and the tests say in which direction: the model has no
clock, so any eligible follower may hold the HW; the adapter decides with the clock
(``replica.lag.time.max.ms``), so the followers it waits for at one time are among the
model's choices, and over every clock they are all of them.

How the situation reads on the adapter's side: Kafka refuses a fetch from a broker not
assigned the partition (NOT_LEADER_OR_FOLLOWER), so the adapter knows the fetch offset of an
assigned follower only; ``live`` is the followers whose process runs, the model's
registered brokers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from itertools import chain, combinations, product
from typing import NamedTuple

from conformance.kafka.watermarks import REPLICA_LAG, hw_as_read, waits_for
from model.actions.common import replica, set_replica
from model.actions.replication import NO_HOLD, advance_hw, advance_hw_held, held_at
from model.config import named
from model.state import UNKNOWN, Entry, State, initial

BROKERS = 3
LEADER = 0
FOLLOWERS = (1, 2)
MOST_RECORDS = 3
NOW = 100.0
CFG = named("kafka26", brokers=BROKERS)
"""Kafka's brokers of 2.6 (the HW's wait is ``kafka39``'s too; with no AlterPartition in
flight its maximal ISR is the ISR)."""


def _subsets(xs: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(chain.from_iterable(combinations(xs, k) for k in range(len(xs) + 1)))


class Situation(NamedTuple):
    """The leader's partition as both sides see it: its ISR and assignment, the brokers
    alive, its log end and HW, and each follower's fetch offset (``UNKNOWN``: none in this
    term)."""

    isr: tuple[int, ...]
    ar: tuple[int, ...]
    live: tuple[int, ...]
    leo: int
    hw: int
    offsets: dict[int, int]

    def known(self, f: int) -> bool:
        return self.offsets[f] != UNKNOWN


def _situations() -> Iterator[Situation]:
    """Every situation of three brokers with leader 0 where the HW is no higher than what the
    ISR is known to have fetched (a follower joins the ISR caught up to the HW)."""
    for isr_followers, leo in product(_subsets(FOLLOWERS), range(MOST_RECORDS + 1)):
        isr = (LEADER, *isr_followers)
        for extra, live in product(_subsets(tuple(f for f in FOLLOWERS if f not in isr)), _subsets(FOLLOWERS)):
            for fetched in product(range(UNKNOWN, leo + 1), repeat=len(FOLLOWERS)):
                offsets = dict(zip(FOLLOWERS, fetched, strict=True))
                ceiling = min([leo, *(o for f, o in offsets.items() if f in isr and o != UNKNOWN)])
                for hw in range(ceiling + 1):
                    yield Situation(isr, tuple(sorted(isr + extra)), (LEADER, *live), leo, hw, offsets)


@cache
def _situations_and_states() -> list[tuple[Situation, State]]:
    """Each situation with the model's state of it (built once for every test)."""
    first = initial(CFG)
    return [(sit, _model_state(first, sit)) for sit in _situations()]


def _model_state(first: State, sit: Situation) -> State:
    """The model's state: leader 0 in its first term (``first``), the partition's znode and
    the registered brokers as ``sit`` has them."""
    znode = first.zk.partitions[0]._replace(isr=sit.isr, ar=sit.ar)
    s = first._replace(zk=first.zk._replace(live=sit.live, partitions=(znode, *first.zk.partitions[1:])))
    follower_leo = tuple(sit.offsets.get(b, UNKNOWN) for b in range(BROKERS))
    log = tuple(Entry(value=v, epoch=1) for v in range(1, sit.leo + 1))
    return set_replica(s, LEADER, 0, replica(s, LEADER, 0)._replace(
        isr=sit.isr, log=log, hw=sit.hw, follower_leo=follower_leo))


@dataclass
class Leader:
    """The adapter's leader replica (``watermarks.LeaderReplica``)."""

    log: list[list[object]]
    hw: int
    isr: list[int]
    fetch_offset: dict[int, int]
    became_hw: int | None = None
    caught_up_at: dict[int, float] = field(default_factory=dict)
    last_read: dict[int, tuple[float, int]] = field(default_factory=dict)


def _adapter_leader(sit: Situation) -> Leader:
    """The adapter's leader in ``sit``."""
    return Leader(log=[[o, 1, f"v{o}"] for o in range(sit.leo)], hw=sit.hw, isr=list(sit.isr),
                  fetch_offset={f: o for f, o in sit.offsets.items() if sit.known(f) and f in sit.ar})


def _waiting_at(r: Leader, sit: Situation, caught_up: tuple[int, ...]) -> list[int]:
    """The followers the adapter's leader ``r`` waits for now, those in ``caught_up`` last
    caught up within the lag, the others a lag and more ago."""
    r.caught_up_at = {b: NOW if b in caught_up else NOW - 2 * REPLICA_LAG for b in range(BROKERS)}
    return waits_for(r, LEADER, sit.live, NOW, REPLICA_LAG)


CLOCKS = _subsets(FOLLOWERS)
"""Each set of followers the adapter's clock may count caught up."""


def _model_hw(s: State, hold: int) -> int | None:
    """The model leader's HW after its advance held by ``hold``; None if ``hold`` cannot."""
    t = advance_hw_held(s, CFG, LEADER, 0, hold)
    return None if t is None else replica(t, LEADER, 0).hw


def _moot(s: State, sit: Situation, f: int) -> bool:
    """The HW advance the ISR makes alone does not pass ``f``'s offset: nothing for ``f`` to hold."""
    return replica(advance_hw(s, CFG, LEADER, 0), LEADER, 0).hw <= max(sit.hw, sit.offsets[f])


def test_every_follower_kafka_waits_for_is_one_the_model_lets_hold_at_its_offset() -> None:
    """The adapter's choice at one time is among the model's: each follower it waits for may
    hold the model's HW at the same offset -- or holds nothing back there, the ISR's own
    advance not passing its offset."""
    held = 0
    for sit, s in _situations_and_states():
        r = _adapter_leader(sit)
        for caught_up in CLOCKS:
            for f in _waiting_at(r, sit, caught_up):
                at = held_at(s, CFG, LEADER, 0, f)
                assert at == r.fetch_offset[f] or (at is None and _moot(s, sit, f)), (sit, caught_up, f, at)
                held += at is not None
    assert held, "some situation has a follower outside the ISR hold the HW"


def test_every_follower_the_model_lets_hold_kafka_waits_for_once_caught_up() -> None:
    """The model's choice is the adapter's clock: each follower the model lets hold the HW the
    adapter waits for when it caught up within the lag, and not when it did not."""
    for sit, s in _situations_and_states():
        r = _adapter_leader(sit)
        for f in FOLLOWERS:
            at = held_at(s, CFG, LEADER, 0, f)
            if at is not None:
                assert f in _waiting_at(r, sit, (f,)) and r.fetch_offset[f] == at, (sit, f, at)
                assert f not in _waiting_at(r, sit, ()), (sit, f)


def test_a_follower_in_the_isr_dead_unassigned_or_of_unknown_offset_holds_nothing_in_either() -> None:
    seen = set()
    for sit, s in _situations_and_states():
        waiting = _waiting_at(_adapter_leader(sit), sit, tuple(range(BROKERS)))  # the leader counted caught up too
        for f in range(BROKERS):
            why = {"the leader": f == LEADER, "in the ISR": f in sit.isr, "dead": f not in sit.live,
                   "unassigned": f not in sit.ar, "offset unknown": f != LEADER and not sit.known(f)}
            if any(why.values()):
                seen |= {k for k, v in why.items() if v}
                assert held_at(s, CFG, LEADER, 0, f) is None, (sit, f, why)
                assert f not in waiting, (sit, f, why)
    assert seen == {"the leader", "in the ISR", "dead", "unassigned", "offset unknown"}


def test_the_hw_a_read_saw_is_one_the_model_may_advance_to_and_every_one_is_seen() -> None:
    """At one time the adapter's HW is one of the model's choices; over every clock the
    adapter's HWs are all of them."""
    for sit, s in _situations_and_states():
        choices = {h for h in (_model_hw(s, hold) for hold in (NO_HOLD, *FOLLOWERS)) if h is not None}
        r = _adapter_leader(sit)
        seen = set()
        for caught_up in CLOCKS:
            hw = hw_as_read(r, LEADER, _waiting_at(r, sit, caught_up))
            assert hw in choices, (sit, caught_up, hw, choices)
            seen.add(hw)
        assert seen == choices, (sit, seen, choices)
