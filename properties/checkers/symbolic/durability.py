"""Durability by induction: ``committed_durable`` and ``acked_durable`` with the lemmas that
strengthen them into an inductive invariant, as the KIP-101/279/320 argument states it.

The argument: a leader is ZooKeeper's leader and its ISR contains ZooKeeper's; a leader
commits an offset only once every member of its ISR has fetched past it, and a follower's
fetch offset is the end of a log that is a prefix of the leader's; so every member of
ZooKeeper's ISR holds every committed record, and a clean election picks its leader from
that ISR.  These are proved on top of the lemmas of ``proofs`` (assumed, and proved there)."""

from __future__ import annotations

from collections.abc import Callable

import z3

from model.state import LEADER, UNKNOWN, UP
from properties.checkers.symbolic.props import prop_acked_durable, prop_committed_durable
from properties.checkers.symbolic.state import Shape, Term


def _entries_equal(s: dict, a: int, b: int, i: int) -> Term:
    return z3.And(s[("val", a, i)] == s[("val", b, i)], s[("ep", a, i)] == s[("ep", b, i)])


def lemma_live_is_up(shape: Shape, s: dict) -> Term:
    """ZooKeeper's live set is exactly the brokers that are up (no pauses are encoded)."""
    return z3.And([s[("live", b)] == (s[("st", b)] == UP) for b in range(shape.n)])


def lemma_log_slots_clean(shape: Shape, s: dict) -> Term:
    """A log holds produced values with epochs ZooKeeper has reached below its LEO, and
    nothing above it."""
    parts = []
    for b in range(shape.n):
        for i in range(shape.r):
            inside = i < s[("leo", b)]
            parts.append(z3.If(inside,
                               z3.And(s[("val", b, i)] >= 1, s[("val", b, i)] <= s[("produced",)],
                                      s[("ep", b, i)] >= 1, s[("ep", b, i)] <= s[("lep",)]),
                               z3.And(s[("val", b, i)] == 0, s[("ep", b, i)] == 0)))
    return z3.And(parts)


def lemma_leader_is_zk_leader(shape: Shape, s: dict) -> Term:
    """A broker acting as leader is ZooKeeper's leader, and its ISR contains ZooKeeper's
    (ZooKeeper's ISR only shrinks behind its back: an election keeps the live part)."""
    n = shape.n
    return z3.And([z3.Implies(s[("role", b)] == LEADER,
                              z3.And(s[("ldr",)] == b, *[z3.Implies(s[("isr", x)], s[("risr", b, x)]) for x in range(n)]))
                   for b in range(n)])


def lemma_pending_leadership(shape: Shape, s: dict) -> Term:
    """A LeaderAndISR request that would still make an up broker leader names ZooKeeper's
    leader, with an ISR that contains ZooKeeper's."""
    R, n = shape.req, shape.n
    m = z3.Const("q_lead", R)
    parts = []
    for b in range(n):
        live = z3.And(s[("lai",)][m], R.to(m) == b, R.leader(m) == b, R.lepoch(m) > s[("rlep", b)], s[("st", b)] == UP)
        parts.append(z3.ForAll([m], z3.Implies(live, z3.And(
            s[("ldr",)] == b, *[z3.Implies(s[("isr", x)], getattr(R, f"isr{x}")(m)) for x in range(n)]))))
    return z3.And(parts)


def lemma_follower_prefix(shape: Shape, s: dict) -> Term:
    """What a leader knows of a follower's LEO is the end of a prefix of the leader's log
    that the follower holds: the follower fetched there, from this leader, in its epoch."""
    parts = []
    for b in range(shape.n):
        for x in range(shape.n):
            if x == b:
                continue
            fl = s[("fleo", b, x)]
            known = z3.And(s[("role", b)] == LEADER, fl != UNKNOWN)
            same = [z3.Implies(i < fl, _entries_equal(s, x, b, i)) for i in range(shape.r)]
            parts.append(z3.Implies(known, z3.And(fl <= s[("leo", x)], fl <= s[("leo", b)], *same)))
    return z3.And(parts)


def lemma_isr_holds_committed(shape: Shape, s: dict) -> Term:
    """Every member of ZooKeeper's ISR holds every committed record at its offset."""
    parts = []
    for o in range(shape.r):
        for v in range(1, shape.r + 1):
            e = s[("cmt", o, v)]
            for x in range(shape.n):
                parts.append(z3.Implies(z3.And(e != 0, s[("isr", x)]),
                                        z3.And(o < s[("leo", x)], s[("val", x, o)] == v, s[("ep", x, o)] == e)))
    return z3.And(parts)


def lemma_acked_committed(shape: Shape, s: dict) -> Term:
    """An acknowledged write is a committed record."""
    return z3.And([z3.Implies(s[("acked", v)], z3.Or([s[("cmt", o, v)] != 0 for o in range(shape.r)]))
                   for v in range(1, shape.r + 1)])


LEMMAS: dict[str, Callable[[Shape, dict], Term]] = {
    "live_is_up": lemma_live_is_up,
    "log_slots_clean": lemma_log_slots_clean,
    "leader_is_zk_leader": lemma_leader_is_zk_leader,
    "pending_leadership": lemma_pending_leadership,
    "follower_prefix": lemma_follower_prefix,
    "isr_holds_committed": lemma_isr_holds_committed,
    "acked_committed": lemma_acked_committed,
}


GOALS: dict[str, Callable[[Shape, dict], Term]] = {
    "committed_durable": prop_committed_durable,
    "acked_durable": prop_acked_durable,
}


USES = {  # which lemmas each goal's proof leans on (all are proved together, by induction)
    "leader_is_zk_leader": ("live_is_up", "pending_leadership"),
    "isr_holds_committed": ("leader_is_zk_leader", "follower_prefix"),
    "committed_durable": ("isr_holds_committed",),
    "acked_durable": ("acked_committed", "isr_holds_committed"),
}
