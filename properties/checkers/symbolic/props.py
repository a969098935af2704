"""The safety properties of ``properties.safety`` as z3 formulas over one symbolic state
(``epoch_monotonic`` also over a step); ``tests/properties/test_symbolic.py`` holds them to the
explicit ones on sampled states."""

from __future__ import annotations

from collections.abc import Callable

import z3

from model.state import (
    DELETED,
    NO_LEADER,
)
from properties.checkers.symbolic.state import (
    Shape,
    Term,
    pick,
    zmin,
)


def _leader_log_has(shape: Shape, s: dict, off: int, v: int, epoch: Term) -> Term:
    ldr = s[("ldr",)]
    cases = []
    for b in range(shape.n):
        cases.append(z3.And(ldr == b, off < s[("leo", b)], s[("val", b, off)] == v, s[("ep", b, off)] == epoch))
    return z3.Or(cases)


def prop_hw_le_leo(shape: Shape, s: dict) -> Term:
    return z3.And([s[("hw", b)] <= s[("leo", b)] for b in range(shape.n)])


def prop_log_epochs_monotonic(shape: Shape, s: dict) -> Term:
    return z3.And([z3.Implies(i + 1 < s[("leo", b)], s[("ep", b, i)] <= s[("ep", b, i + 1)])
                   for b in range(shape.n) for i in range(shape.r - 1)])


def prop_epoch_monotonic(shape: Shape, s: dict, t: dict) -> Term:
    """The transition half of ``epoch_monotonic`` -- with the topic's identity, within one
    incarnation: a deleted or re-created topic's epochs start over, and so do those of a
    replica that deleted it or took a newer incarnation."""
    zk = [t[("lep",)] >= s[("lep",)], z3.Implies(t[("ldr",)] != s[("ldr",)], t[("lep",)] > s[("lep",)])]
    replicas = [t[("rlep", b)] >= s[("rlep", b)] for b in range(shape.n)]
    if shape.topic:
        same = z3.And(t[("tid",)] == s[("tid",)], _exists(shape, s), _exists(shape, t))
        zk = [z3.Implies(same, z3.And(zk))]
        replicas = [z3.Implies(z3.And(t[("rtid", b)] == s[("rtid", b)], t[("role", b)] != DELETED), replicas[b])
                    for b in range(shape.n)]
    return z3.And(t[("cep",)] >= s[("cep",)], *zk, *replicas)


def _exists(shape: Shape, s: dict) -> Term:
    return z3.Or([s[("ar", x)] for x in range(shape.n)])


def _of_current(shape: Shape, s: dict, b: int) -> Term:
    """b's replica holds the current incarnation's data (``replicas_consistent``'s filter)."""
    if not shape.topic:
        return z3.BoolVal(True)
    return z3.And(s[("rtid", b)] == s[("tid",)], s[("role", b)] != DELETED)


def prop_one_leader_per_epoch(shape: Shape, s: dict) -> Term:
    e = z3.Int("e_led")
    pairs = [z3.Not(z3.And(s[("led", a)][e], s[("led", b)][e])) for a in range(shape.n) for b in range(a + 1, shape.n)]
    return z3.ForAll([e], z3.And(pairs)) if pairs else z3.BoolVal(True)


def prop_one_record_per_offset(shape: Shape, s: dict) -> Term:
    r = shape.r
    return z3.And([z3.Not(z3.And(s[("cmt", o, v)] != 0, s[("cmt", o, w)] != 0))
                   for o in range(r) for v in range(1, r + 1) for w in range(v + 1, r + 1)] or [z3.BoolVal(True)])


def prop_single_committing_leader(shape: Shape, s: dict) -> Term:
    return z3.And(prop_one_leader_per_epoch(shape, s), prop_one_record_per_offset(shape, s))


def prop_committed_durable(shape: Shape, s: dict) -> Term:
    r = shape.r
    return z3.And([z3.Implies(z3.And(s[("cmt", o, v)] != 0, s[("ldr",)] != NO_LEADER),
                              _leader_log_has(shape, s, o, v, s[("cmt", o, v)]))
                   for o in range(r) for v in range(1, r + 1)])


def prop_acked_durable(shape: Shape, s: dict) -> Term:
    out = []
    for v in range(1, shape.r + 1):
        has = z3.Or([z3.And(s[("ldr",)] == b, i < s[("leo", b)], s[("val", b, i)] == v)
                     for b in range(shape.n) for i in range(shape.r)])
        out.append(z3.Implies(z3.And(s[("acked", v)], s[("ldr",)] != NO_LEADER), has))
    return z3.And(out)


def prop_replicas_consistent(shape: Shape, s: dict) -> Term:
    out = []
    for a in range(shape.n):
        for b in range(a + 1, shape.n):
            upto = zmin(s[("hw", a)], s[("hw", b)])
            both = z3.And(_of_current(shape, s, a), _of_current(shape, s, b))
            for i in range(shape.r):
                out.append(z3.Implies(z3.And(both, i < upto),
                                      z3.And(s[("val", a, i)] == s[("val", b, i)], s[("ep", a, i)] == s[("ep", b, i)])))
    return z3.And(out) if out else z3.BoolVal(True)


def prop_isr_well_formed(shape: Shape, s: dict) -> Term:
    in_isr = pick([s[("isr", b)] for b in range(shape.n)], s[("ldr",)], z3.BoolVal(False))
    if shape.topic:  # and the ISR within the AR
        in_isr = z3.And(in_isr, *[z3.Implies(s[("isr", b)], s[("ar", b)]) for b in range(shape.n)])
    return z3.Implies(s[("ldr",)] != NO_LEADER, in_isr)


def prop_single_controller(shape: Shape, s: dict) -> Term:
    pairs = [z3.Not(z3.And(s[("isc", a)], s[("isc", b)], s[("bcep", a)] == s[("bcep", b)]))
             for a in range(shape.n) for b in range(a + 1, shape.n)]
    return z3.And(*pairs, s[("stale",)] == 0)


def prop_zombie_cannot_commit(shape: Shape, s: dict) -> Term:
    return z3.And([z3.Not(s[("zcmt", v)]) for v in range(1, shape.r + 1)])


def prop_deleted_not_served(shape: Shape, s: dict) -> Term:
    """No leader of the current incarnation serves a retired record (one of a deleted
    incarnation).  Without the topic's identity there is no deletion: true everywhere."""
    if not shape.topic:
        return z3.BoolVal(True)
    out = []
    for b in range(shape.n):
        serving = z3.And(_exists(shape, s), s[("ldr",)] == b, _of_current(shape, s, b))
        old = [z3.And(i < s[("leo", b)], s[("val", b, i)] == v, s[("ret", v)]) for i in range(shape.r)
               for v in range(1, shape.r + 1)]
        out.append(z3.Implies(serving, z3.Not(z3.Or(old))))
    return z3.And(out)


# property name (as in ``properties.PROPERTIES``) -> its state formula
STATE_PROPERTIES: dict[str, Callable[[Shape, dict], Term]] = {
    "hw_le_leo": prop_hw_le_leo,
    "single_committing_leader": prop_single_committing_leader,
    "committed_durable": prop_committed_durable,
    "replicas_consistent": prop_replicas_consistent,
    "isr_well_formed": prop_isr_well_formed,
    "single_controller": prop_single_controller,
    "acked_durable": prop_acked_durable,
    "zombie_cannot_commit": prop_zombie_cannot_commit,
    "deleted_not_served": prop_deleted_not_served,
}


def durable(shape: Shape, s: dict) -> Term:
    """The durability properties BMC looks for violations of."""
    return z3.And(prop_committed_durable(shape, s), prop_acked_durable(shape, s))
