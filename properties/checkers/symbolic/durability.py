"""Durability by induction: ``committed_durable`` and ``acked_durable`` with the lemmas that
strengthen them towards an inductive invariant, as the KIP-101/279/320 argument states it.

The argument: a leader is ZooKeeper's leader and its ISR contains ZooKeeper's; a leader
commits an offset only once every member of its ISR has fetched past it, and a follower's
fetch offset is the end of a log that is a prefix of the leader's; so every member of
ZooKeeper's ISR holds every committed record, and a clean election picks its leader from
that ISR.  These are proved on top of the lemmas of ``proofs`` (assumed, and proved there).

Not yet inductive: ``follower_prefix`` and with it ``isr_holds_committed`` -- what keeps a
follower's log a prefix of its leader's across a KIP-320 truncation and a fetch response in
flight is log matching (an epoch and an offset determine the records below them), and that
is a fact about the history of every epoch's leader, which the state alone does not carry;
``epochal prove`` prints the counterexample to induction of each.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from model.state import LEADER, UNKNOWN, UP
from properties.checkers.symbolic.props import (
    prop_acked_durable,
    prop_committed_durable,
    prop_log_epochs_monotonic,
)
from properties.checkers.symbolic.state import RESP, Shape, Term


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
        for ld in range(shape.n):
            if ld != b:  # a fetch response carries such records
                resp = s[("fk", b, ld)] == RESP
                parts.append(z3.Implies(resp, z3.And(s[("fe", b, ld)] >= 1, s[("fe", b, ld)] <= s[("lep",)])))
                parts += [z3.Implies(z3.And(resp, i < s[("frl", b, ld)]),
                                     z3.And(s[("frv", b, ld, i)] >= 1, s[("frv", b, ld, i)] <= s[("produced",)],
                                            s[("fre", b, ld, i)] >= 1, s[("fre", b, ld, i)] <= s[("lep",)]))
                          for i in range(shape.r)]
    return z3.And(parts)


def lemma_leader_epochs_positive(shape: Shape, s: dict) -> Term:
    """Every broker knows a leader epoch >= 1 (the first is 1, and they only grow)."""
    return z3.And([s[("rlep", b)] >= 1 for b in range(shape.n)])


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


def truncation_keeps_common_prefix(shape: Shape, s: dict, t: dict) -> Term:
    """KIP-320's truncation, as a step: a follower whose log the leader's extends (both with
    epochs that never decrease, the leader's up to its own) keeps its whole log -- the
    truncation point from the leader's epoch cache is never below the common prefix, so never
    below a committed record.  (That the follower's log *is* such a prefix in every reachable
    state is ``follower_prefix``'s territory, not yet inductive.)"""
    parts = []
    for f in range(shape.n):
        for b in range(shape.n):
            if f == b:
                continue
            fl, bl = s[("leo", f)], s[("leo", b)]
            prefix = z3.And(fl <= bl, *[z3.Implies(i < fl, _entries_equal(s, f, b, i)) for i in range(shape.r)])
            sane = z3.And(prop_log_epochs_monotonic(shape, s),
                          *[z3.Implies(i < bl, s[("ep", b, i)] <= s[("rlep", b)]) for i in range(shape.r)])
            against = z3.And(s[("role", b)] == LEADER, s[("rl", f)] == b, prefix, sane)
            kept = z3.And(t[("leo", f)] == fl,
                          *[z3.And(t[("val", f, i)] == s[("val", f, i)], t[("ep", f, i)] == s[("ep", f, i)])
                            for i in range(shape.r)])
            parts.append(z3.Implies(against, kept))
    return z3.And(parts)


LEMMAS: dict[str, Callable[[Shape, dict], Term]] = {
    "live_is_up": lemma_live_is_up,
    "leader_epochs_positive": lemma_leader_epochs_positive,
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


STEPS: dict[str, tuple[Callable[[Shape, dict, dict], Term], tuple[str, ...]]] = {
    # step goal -> (formula, the actions it is a claim about)
    "truncation_keeps_common_prefix": (truncation_keeps_common_prefix, ("truncate",)),
}


USES = {  # which lemmas each goal's proof leans on (all are proved together, by induction)
    "leader_is_zk_leader": ("live_is_up", "pending_leadership"),
    "isr_holds_committed": ("leader_is_zk_leader", "follower_prefix"),
    "committed_durable": ("isr_holds_committed",),
    "acked_durable": ("acked_committed", "isr_holds_committed"),
    "log_slots_clean": ("leader_epochs_positive",),
    "acked_committed": ("log_slots_clean",),
}
