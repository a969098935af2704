"""The safety properties of ``properties.safety`` as z3 formulas over one symbolic state
(``epoch_monotonic`` also over a step); ``tests/properties/test_symbolic.py`` holds them to the
explicit ones on sampled states."""

from __future__ import annotations

from collections.abc import Callable

import z3

from model.state import (
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
    """The transition half of ``epoch_monotonic``."""
    parts = [t[("cep",)] >= s[("cep",)], t[("lep",)] >= s[("lep",)],
             z3.Implies(t[("ldr",)] != s[("ldr",)], t[("lep",)] > s[("lep",)])]
    parts += [t[("rlep", b)] >= s[("rlep", b)] for b in range(shape.n)]
    return z3.And(parts)


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
            for i in range(shape.r):
                out.append(z3.Implies(i < upto, z3.And(s[("val", a, i)] == s[("val", b, i)], s[("ep", a, i)] == s[("ep", b, i)])))
    return z3.And(out) if out else z3.BoolVal(True)


def prop_isr_well_formed(shape: Shape, s: dict) -> Term:
    return z3.Implies(s[("ldr",)] != NO_LEADER, pick([s[("isr", b)] for b in range(shape.n)], s[("ldr",)], z3.BoolVal(False)))


def prop_single_controller(shape: Shape, s: dict) -> Term:
    pairs = [z3.Not(z3.And(s[("isc", a)], s[("isc", b)], s[("bcep", a)] == s[("bcep", b)]))
             for a in range(shape.n) for b in range(a + 1, shape.n)]
    return z3.And(*pairs, s[("stale",)] == 0)


def prop_zombie_cannot_commit(shape: Shape, s: dict) -> Term:
    return z3.And([z3.Not(s[("zcmt", v)]) for v in range(1, shape.r + 1)])


def prop_deleted_not_served(shape: Shape, s: dict) -> Term:
    """True in every state of this encoding: it has no topic deletion (the registry marks
    ``delete_topic`` unsupported here and ``unsupported()`` refuses ``deletions``), so no
    record is ever of a deleted incarnation."""
    return z3.BoolVal(True)


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
