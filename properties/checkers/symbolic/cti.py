"""A counterexample to induction, readable: the pre-state (which satisfies every assumed
lemma), the action with its broker arguments, and what that step changed in the post-state
(which breaks the goal).  A CTI is not a violation -- its pre-state may be unreachable; it
says which strengthening the induction still lacks."""

from __future__ import annotations

import z3

from properties.checkers.symbolic.state import EMPTY, REQ, Shape, Term

_STATUS = {0: "up", 1: "down", 2: "paused"}
_ROLE = {0: "none", 1: "leader", 2: "follower", 3: "deleted"}
_FETCH_STATE = {0: "idle", 1: "truncating", 2: "fetching"}


def _iv(model: z3.ModelRef, t: Term) -> int | str:
    """t's value in ``model``, or "?" where the model does not evaluate it: a term over a
    quantifier (the HW over AlterPartition's maximal ISR) keeps it."""
    v = model.eval(t, model_completion=True)
    return v.as_long() if z3.is_int_value(v) else "?"


def _bv(model: z3.ModelRef, t: Term) -> bool:
    return z3.is_true(model.eval(t, model_completion=True))


def _entry(value: int | str, epoch: int | str) -> str:
    return f"{chr(96 + value) if isinstance(value, int) and 1 <= value <= 26 else value}@{epoch}"


def _brokers(model: z3.ModelRef, shape: Shape, bits: list[Term]) -> str:
    return "{" + ",".join(str(x) for x in range(shape.n) if _bv(model, bits[x])) + "}"


def describe_state(model: z3.ModelRef, shape: Shape, s: dict) -> dict[str, str]:
    """One line per component of a symbolic state under ``model`` (the keys name the
    component, so that two states can be compared line by line)."""
    n, r = shape.n, shape.r
    iv = lambda k: _iv(model, s[k])  # noqa: E731
    out = {"zk": (f"controller {iv(('ctl',))} (epoch {iv(('cep',))}), leader {iv(('ldr',))} in leader epoch "
                  f"{iv(('lep',))}, isr {_brokers(model, shape, [s[('isr', x)] for x in range(n)])}, "
                  f"zk_version {iv(('zkv',))}, live {_brokers(model, shape, [s[('live', x)] for x in range(n)])}"
                  + (f", topic id {iv(('tid',))}, ar {_brokers(model, shape, [s[('ar', x)] for x in range(n)])}"
                     if shape.topic else ""))}
    for b in range(n):
        leo = iv(("leo", b))
        shown = min(max(leo, 0), r) if isinstance(leo, int) else 0
        log = " ".join(_entry(iv(("val", b, i)), iv(("ep", b, i))) for i in range(shown))
        fleo = ",".join(str(iv(("fleo", b, x))) for x in range(n))
        out[f"broker {b}"] = (f"{_STATUS.get(iv(('st', b)), '?')} {_ROLE.get(iv(('role', b)), '?')} "
                              f"(leader {iv(('rl', b))}, leader_epoch {iv(('rlep', b))}, zk_version {iv(('rzkv', b))}, "
                              f"isr {_brokers(model, shape, [s[('risr', b, x)] for x in range(n)])}, "
                              f"{_FETCH_STATE.get(iv(('fs', b)), '?')}) log [{log}] leo {leo} hw {iv(('hw', b))} "
                              f"follower_leo [{fleo}] epoch_start {iv(('es', b))}"
                              + (f" topic id {iv(('rtid', b))}" if shape.topic else ""))
        for ld in range(n):
            if ld == b or iv(("fk", b, ld)) == EMPTY:
                continue
            kind = iv(("fk", b, ld))
            off, ep = iv(("fo", b, ld)), iv(("fe", b, ld))
            if kind == REQ:
                out[f"fetch {b}->{ld}"] = f"request offset {off} leader_epoch {ep}"
            else:
                recs = " ".join(_entry(iv(("frv", b, ld, i)), iv(("fre", b, ld, i)))
                                for i in range(min(max(iv(("frl", b, ld)), 0), r)))
                err = " out_of_range" if iv(("ferr", b, ld)) else ""
                out[f"fetch {b}->{ld}"] = (f"response offset {off} leader_epoch {ep} hw {iv(('fhw', b, ld))} "
                                           f"records [{recs}]{err}")
    cmt = [f"{_entry(v, iv(('cmt', o, v)))} at {o}" for o in range(r) for v in range(1, r + 1) if iv(("cmt", o, v))]
    acked = [_entry(v, 0)[:-2] for v in range(1, r + 1) if _bv(model, s[("acked", v)])]
    out["ghost"] = f"produced {iv(('produced',))}, committed [{', '.join(cmt)}], acked [{', '.join(acked)}]"
    return out


def describe_cti(model: z3.ModelRef, shape: Shape, pre: dict, action: str, args: tuple, post: dict) -> list[str]:
    """The state pair as lines: the whole pre-state, the action, and the post-state's
    changed components."""
    before, after = describe_state(model, shape, pre), describe_state(model, shape, post)
    lines = ["counterexample to induction:", "  pre-state:"]
    lines += [f"    {k}: {v}" for k, v in before.items()]
    lines.append(f"  action: {action}({', '.join(str(a) for a in args)})")
    changed = [(k, v) for k, v in after.items() if before.get(k) != v]
    gone = [k for k in before if k not in after]
    lines.append("  post-state (what changed):" if changed or gone else "  post-state: unchanged")
    lines += [f"    {k}: {v}" for k, v in changed] + [f"    {k}: (empty)" for k in gone]
    return lines
