"""A z3 encoding of the model's transition relation, for proofs and bounded model checking.

Written by hand from ``model.actions``, one function per action, each computing the
successor's variables as z3 terms of the predecessor's -- and held to the explicit model by
``tests/model/test_symbolic.py``: on states reached by the explicit model, the successors
this relation allows are exactly those ``model.actions.successors`` produces, and every
property below evaluates as ``properties`` does.

Coverage (say it plainly):

* **One partition**, a fixed broker count ``N`` (the tests use 2 and 3) with AR = every broker.
* **Actions encoded**: broker_crash, broker_restart, controller_elect, controller_resign,
  elect_leader (clean election only), become_leader, become_follower, truncate (all four
  truncation rules), produce, send_fetch, handle_fetch, receive_fetch, shrink_isr,
  expand_isr, isr_update_failed, on_broker_startup, and the ``forget_stale_requests``
  clean-up after each step.  **Not encoded**: broker_pause / broker_resume /
  broker_reregister (GC pauses -- never enabled when ``max_pauses == 0``, true of every
  named configuration but ``zombie``), controlled_shutdown / broker_stop (never enabled
  when ``max_shutdowns == 0``, true of every named configuration), reassign_start /
  reassign_complete / stop_replica (explored only with ``reassignments > 0``; AR stays
  every broker here), trace replay's ``shrink_caught_up``, unclean election, and the
  self-loop reject_leader_and_isr.  ``unsupported(cfg)`` names what a configuration asks
  for beyond this.
* **Unbounded**: leader epochs, controller epochs, zk versions, broker epochs, zxid, the
  crash counter and the offsets of the ISR/HW arithmetic.  In the induction proofs the
  configuration's ``max_epoch`` and ``max_crashes`` bounds are dropped entirely.
* **Bounded**: logs are sequences of ``R = cfg.records`` slots (values are 1..R, each written
  once, so no log is ever longer -- the bound is the model's own, not the encoding's); the
  set of LeaderAndISR requests ever sent is an unbounded z3 set over a request datatype.

Ghost history encoding: ``committed`` as the epoch committed at (offset, value) (0 = never;
a value is produced once, so it has one epoch), ``acked``, ``zombie_appends`` and
``zombie_commits`` as a flag per value, ``led`` as one z3 set of epochs per broker plus its maximum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import z3

from model.config import Config
from model.state import (
    DOWN,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    FETCHING,
    FOLLOWER,
    IDLE,
    LEADER,
    NO_LEADER,
    NONE,
    OUT_OF_RANGE,
    TRUNCATING,
    UNKNOWN,
    UP,
    Entry,
    Fetch,
    LeaderAndIsr,
    State,
    initial,
)

Term = Any  # a z3 expression
INF = 1 << 30

# Actions this encoding covers (see the module docstring).
COVERED = (
    "broker_crash", "broker_restart", "controller_elect", "controller_resign", "elect_leader",
    "become_leader", "become_follower", "truncate", "produce", "send_fetch", "handle_fetch",
    "receive_fetch", "shrink_isr", "expand_isr", "isr_update_failed", "on_broker_startup",
)

# fetch slot kinds
EMPTY, REQ, RESP = 0, 1, 2


def req_sort(n: int) -> z3.DatatypeSortRef:
    """The LeaderAndISR request as a z3 record (one partition, so no partition field)."""
    d = z3.Datatype(f"Req{n}")
    fields = [("to", z3.IntSort()), ("leader", z3.IntSort()), ("lepoch", z3.IntSort())]
    fields += [(f"isr{x}", z3.BoolSort()) for x in range(n)]
    fields += [("zkv", z3.IntSort()), ("cepoch", z3.IntSort()), ("mbe", z3.IntSort())]
    d.declare("req", *fields)
    return d.create()


@dataclass
class Shape:
    """The fixed dimensions of an encoding: brokers, log slots, and the request sort."""

    n: int
    r: int
    req: z3.DatatypeSortRef = field(init=False)

    def __post_init__(self) -> None:
        self.req = req_sort(self.n)

    def keys(self) -> Iterator[tuple[tuple, str]]:
        """Every state variable with its sort ('i' Int, 'b' Bool, 'S' request set, 'L' epoch set)."""
        n, r = self.n, self.r
        for k in ("ctl", "cep", "zxid", "ldr", "lep", "zkv", "stale", "ledmax", "produced", "crashes", "pauses"):
            yield (k,), "i"
        for b in range(n):
            yield ("live", b), "b"
            yield ("isr", b), "b"
            yield ("isc", b), "b"
            for k in ("bep", "st", "bcep", "bbep", "role", "rl", "rlep", "rzkv", "leo", "hw", "fs", "es"):
                yield (k, b), "i"
            for x in range(n):
                yield ("risr", b, x), "b"
                yield ("fleo", b, x), "i"
                yield ("nb", b, x), "b"  # x in broker b's new_brokers (b as controller)
            for i in range(r):
                yield ("val", b, i), "i"
                yield ("ep", b, i), "i"
            yield ("led", b), "L"
            for f in range(n):
                if f != b:
                    for k in ("fk", "fo", "fe", "frl", "fhw", "ferr"):
                        yield (k, f, b), "i"
                    for i in range(r):
                        yield ("frv", f, b, i), "i"
                        yield ("fre", f, b, i), "i"
        for v in range(1, r + 1):
            yield ("acked", v), "b"
            yield ("zomb", v), "b"
            yield ("zcmt", v), "b"
            for o in range(r):
                yield ("cmt", o, v), "i"
        yield ("lai",), "S"

    def fresh(self, prefix: str) -> dict:
        out: dict = {}
        for key, sort in self.keys():
            name = prefix + "." + "_".join(str(k) for k in key)
            if sort == "i":
                out[key] = z3.Int(name)
            elif sort == "b":
                out[key] = z3.Bool(name)
            elif sort == "S":
                out[key] = z3.Array(name, self.req, z3.BoolSort())
            else:
                out[key] = z3.Array(name, z3.IntSort(), z3.BoolSort())
        return out


# -- small term helpers -----------------------------------------------------------------


def pick(items: list[Term], idx: Term, default: Term) -> Term:
    """items[idx] for a symbolic index, ``default`` when out of range."""
    out = default
    for i in reversed(range(len(items))):
        out = z3.If(idx == i, items[i], out)
    return out


def zmin(a: Term, b: Term) -> Term:
    return z3.If(a <= b, a, b)


def zmax(a: Term, b: Term) -> Term:
    return z3.If(a >= b, a, b)


def count(bs: list[Term]) -> Term:
    return z3.Sum([z3.If(b, 1, 0) for b in bs]) if bs else z3.IntVal(0)


def eq_states(shape: Shape, s: dict, t: dict) -> Term:
    return z3.And([s[k] == t[k] for k, _ in shape.keys()])


# -- the explicit state as concrete terms (the abstraction the differential test uses) ---


def encode(shape: Shape, s: State) -> dict:
    """The explicit state ``s`` as z3 values of this encoding's variables."""
    n, r = shape.n, shape.r
    assert len(s.brokers) == n and len(s.zk.partitions) == 1, "one partition, N brokers"
    I, B = z3.IntVal, z3.BoolVal  # noqa: E741
    zk, zn, g = s.zk, s.zk.partitions[0], s.ghost
    out: dict = {
        ("ctl",): I(zk.controller), ("cep",): I(zk.controller_epoch), ("zxid",): I(zk.zxid),
        ("ldr",): I(zn.leader), ("lep",): I(zn.leader_epoch), ("zkv",): I(zn.zk_version),
        ("stale",): I(g.stale_accepts), ("produced",): I(g.produced), ("crashes",): I(g.crashes),
        ("pauses",): I(g.pauses),
        ("ledmax",): I(max((e for p, e, _ in g.led if p == 0), default=0)),
    }
    for b, br in enumerate(s.brokers):
        rep = br.replicas[0]
        out[("live", b)] = B(b in zk.live)
        out[("isr", b)] = B(b in zn.isr)
        out[("isc", b)] = B(br.is_controller)
        out[("bep", b)] = I(zk.broker_epochs[b])
        for k, v in (("st", br.status), ("bcep", br.controller_epoch), ("bbep", br.broker_epoch), ("role", rep.role),
                     ("rl", rep.leader), ("rlep", rep.leader_epoch), ("rzkv", rep.zk_version), ("leo", rep.leo),
                     ("hw", rep.hw), ("fs", rep.fetch_state), ("es", rep.epoch_start)):
            out[(k, b)] = I(v)
        for x in range(n):
            out[("risr", b, x)] = B(x in rep.isr)
            out[("fleo", b, x)] = I(rep.follower_leo[x])
            out[("nb", b, x)] = B(x in br.new_brokers)
        assert rep.leo <= r, "a log longer than the number of records"
        for i in range(r):
            e = rep.log[i] if i < rep.leo else Entry(0, 0)
            out[("val", b, i)] = I(e.value)
            out[("ep", b, i)] = I(e.epoch)
        led = z3.K(z3.IntSort(), z3.BoolVal(False))
        for p, e, who in g.led:
            if p == 0 and who == b:
                led = z3.Store(led, e, True)
        out[("led", b)] = led
    slots = {(m.follower, m.leader): m for m in s.fetches if m.partition == 0}
    assert len(slots) == len(s.fetches), "at most one fetch message per (follower, leader)"
    for f in range(n):
        for ld in range(n):
            if f == ld:
                continue
            m = slots.get((f, ld))
            kind = EMPTY if m is None else (REQ if m.kind == FETCH_REQUEST else RESP)
            rec = () if m is None else m.records
            vals = (0, 0, 0, 0, 0) if m is None else (m.offset, m.epoch, len(rec), m.hw, m.error)
            if m is not None and m.kind == FETCH_REQUEST:
                vals = (m.offset, m.epoch, 0, -1, 0)
            for k, v in zip(("fo", "fe", "frl", "fhw", "ferr"), vals, strict=True):
                out[(k, f, ld)] = I(v)
            out[("fk", f, ld)] = I(kind)
            for i in range(r):
                e = rec[i] if i < len(rec) else Entry(0, 0)
                out[("frv", f, ld, i)] = I(e.value)
                out[("fre", f, ld, i)] = I(e.epoch)
    for v in range(1, r + 1):
        out[("acked", v)] = B((0, v) in g.acked)
        out[("zomb", v)] = B((0, v) in getattr(g, "zombie_appends", ()))
        out[("zcmt", v)] = B((0, v) in getattr(g, "zombie_commits", ()))
        for o in range(r):
            eps = [e.epoch for p, off, e in g.committed if p == 0 and off == o and e.value == v]
            assert len(eps) <= 1, "a value committed at one offset with two epochs"
            out[("cmt", o, v)] = I(eps[0] if eps else 0)
    lai = z3.K(shape.req, z3.BoolVal(False))
    for m in s.leader_and_isr:
        lai = z3.Store(lai, req_value(shape, m), True)
    out[("lai",)] = lai
    return out


def req_value(shape: Shape, m: LeaderAndIsr) -> Term:
    isr = [z3.BoolVal(x in m.isr) for x in range(shape.n)]
    return shape.req.req(m.to, m.leader, m.leader_epoch, *isr, m.zk_version, m.controller_epoch, m.max_broker_epoch)


def req_decode(shape: Shape, model: z3.ModelRef, m: Term) -> LeaderAndIsr:
    """A request constant's value in a z3 model, as the explicit model's request."""
    R = shape.req

    def iv(t: Term) -> int:
        return model.eval(t, model_completion=True).as_long()

    isr = tuple(x for x in range(shape.n) if z3.is_true(model.eval(getattr(R, f"isr{x}")(m), model_completion=True)))
    return LeaderAndIsr(iv(R.to(m)), 0, iv(R.leader(m)), iv(R.lepoch(m)), isr, iv(R.zkv(m)), iv(R.cepoch(m)), iv(R.mbe(m)))


# -- the actions ------------------------------------------------------------------------


@dataclass
class Params:
    """What the relation takes from a configuration.  ``None`` bounds are unbounded (proofs)."""

    truncation: str
    min_insync: int = 1
    max_epoch: int | None = None
    max_crashes: int | None = None
    records: int = 2
    fence_controller_epoch: bool = True
    fence_broker_epoch: bool = True

    @property
    def fenced_fetch(self) -> bool:
        return self.truncation == "kip320"

    @classmethod
    def of(cls, cfg: Config, bounded: bool = True) -> Params:
        return cls(cfg.truncation, cfg.min_insync, cfg.max_epoch if bounded else None,
                   cfg.max_crashes if bounded else None, cfg.records, cfg.fence_controller_epoch,
                   getattr(cfg, "fence_broker_epoch", False))


@dataclass
class Disjunct:
    """One (action, concrete broker arguments) case of the relation: guard and successor."""

    action: str
    args: tuple  # concrete broker indices; a request action also has ``msg``
    guard: Term
    post: dict
    msg: Term | None = None


class Encoding:
    """The transition relation of one shape and parameter set."""

    def __init__(self, shape: Shape, params: Params) -> None:
        self.shape, self.p = shape, params
        self.n, self.r = shape.n, shape.r
        self._msgs = 0

    # ---- helpers over a state dict
    def _isr_of(self, s: dict, b: int) -> list[Term]:
        return [s[("risr", b, x)] for x in range(self.n)]

    def _empty_slot(self, t: dict, f: int, ld: int) -> None:
        for k in ("fk", "fo", "fe", "frl", "fhw", "ferr"):
            t[(k, f, ld)] = z3.IntVal(0)
        for i in range(self.r):
            t[("frv", f, ld, i)] = z3.IntVal(0)
            t[("fre", f, ld, i)] = z3.IntVal(0)

    def _drop_slot_if(self, t: dict, f: int, ld: int, cond: Term) -> None:
        for k in ("fk", "fo", "fe", "frl", "fhw", "ferr"):
            t[(k, f, ld)] = z3.If(cond, 0, t[(k, f, ld)])
        for i in range(self.r):
            t[("frv", f, ld, i)] = z3.If(cond, 0, t[("frv", f, ld, i)])
            t[("fre", f, ld, i)] = z3.If(cond, 0, t[("fre", f, ld, i)])

    def _drop_responses_to(self, t: dict, b: int) -> None:
        for ld in range(self.n):
            if ld != b:
                self._drop_slot_if(t, b, ld, t[("fk", b, ld)] == RESP)

    def _log(self, s: dict, b: int) -> tuple[list[Term], list[Term], Term]:
        return [s[("val", b, i)] for i in range(self.r)], [s[("ep", b, i)] for i in range(self.r)], s[("leo", b)]

    def _truncate_log(self, t: dict, b: int, cut: Term) -> None:
        for i in range(self.r):
            t[("val", b, i)] = z3.If(i < cut, t[("val", b, i)], 0)
            t[("ep", b, i)] = z3.If(i < cut, t[("ep", b, i)], 0)
        t[("leo", b)] = cut

    def _unknown(self, t: dict, b: int) -> None:
        for x in range(self.n):
            t[("fleo", b, x)] = z3.IntVal(UNKNOWN)

    def _set_replica(self, t: dict, b: int, role: int, leader: Term, lep: Term, isr: list[Term] | None,
                     zkv: Term, fs: int, es: Term) -> None:
        t[("role", b)] = z3.IntVal(role)
        t[("rl", b)] = leader
        t[("rlep", b)] = lep
        for x in range(self.n):
            t[("risr", b, x)] = z3.BoolVal(False) if isr is None else isr[x]
        t[("rzkv", b)] = zkv
        t[("fs", b)] = z3.IntVal(fs)
        self._unknown(t, b)
        t[("es", b)] = es

    def _mbe(self, s: dict) -> Term:
        out: Term = z3.IntVal(0)
        for b in range(self.n):
            out = z3.If(z3.And(s[("live", b)], s[("bep", b)] > out), s[("bep", b)], out)
        return out

    def _send(self, t: dict, leader: Term, lep: Term, isr: list[Term], zkv: Term, cep: Term, mbe: Term) -> None:
        lai = t[("lai",)]
        for to in range(self.n):
            lai = z3.Store(lai, self.shape.req.req(to, leader, lep, *isr, zkv, cep, mbe), True)
        t[("lai",)] = lai

    def advance_hw(self, t: dict, b: int) -> None:
        """Seed 000 G: hw = min LEO over the ISR, never backwards; commit and acknowledge."""
        n, r = self.n, self.r
        leo = t[("leo", b)]
        new = z3.IntVal(INF)
        for x in range(n):
            lx = leo if x == b else t[("fleo", b, x)]
            new = z3.If(z3.And(t[("risr", b, x)], lx < new), lx, new)
        hw = t[("hw", b)]
        moves = new > hw
        enough = count(self._isr_of(t, b)) >= self.p.min_insync
        vals, eps, _ = self._log(t, b)
        superseded = t[("ledmax",)] > t[("rlep", b)]
        for v in range(1, r + 1):
            hit_ack, hit = [], []
            for o in range(r):
                newly = z3.And(moves, hw <= o, o < new, vals[o] == v)
                t[("cmt", o, v)] = z3.If(newly, eps[o], t[("cmt", o, v)])
                hit_ack.append(z3.And(newly, eps[o] == t[("rlep", b)], enough))
                hit.append(newly)
            t[("acked", v)] = z3.Or(t[("acked", v)], *hit_ack)
            # a superseded leader moving its HW over a zombie append commits it
            t[("zcmt", v)] = z3.Or(t[("zcmt", v)], z3.And(superseded, t[("zomb", v)], z3.Or(*hit)))
        t[("hw", b)] = z3.If(moves, new, hw)

    def _follow(self, t: dict, b: int, leader: Term, epoch: Term) -> None:
        """``_follow``: the design truncates to its own HW at once; KIP-101 on reconciles first."""
        if self.p.truncation == "hw":
            cut = zmin(t[("hw", b)], t[("leo", b)])
            self._truncate_log(t, b, cut)
            t[("hw", b)] = zmin(t[("hw", b)], cut)
            self._set_replica(t, b, FOLLOWER, leader, epoch, None, z3.IntVal(-1), FETCHING, z3.IntVal(0))
        else:
            self._set_replica(t, b, FOLLOWER, leader, epoch, None, z3.IntVal(-1), TRUNCATING, z3.IntVal(0))

    def _stale(self, t: dict, m: Term) -> Term:
        """``stale_reason`` against the state t, for a request whose addressee is symbolic."""
        R = self.shape.req
        to = R.to(m)
        bcep = pick([t[("bcep", b)] for b in range(self.n)], to, z3.IntVal(INF))
        rlep = pick([t[("rlep", b)] for b in range(self.n)], to, z3.IntVal(INF))
        bbep = pick([t[("bbep", b)] for b in range(self.n)], to, z3.IntVal(INF))
        old_ctl = R.cepoch(m) < bcep if self.p.fence_controller_epoch else z3.BoolVal(False)
        old_incarnation = R.mbe(m) < bbep if self.p.fence_broker_epoch else z3.BoolVal(False)
        return z3.Or(old_ctl, old_incarnation, R.lepoch(m) <= rlep)

    def forget_stale(self, t: dict) -> None:
        m = z3.Const("m", self.shape.req)
        lai = t[("lai",)]
        t[("lai",)] = z3.Lambda([m], z3.And(lai[m], z3.Not(self._stale(t, m))))

    # ---- brokers and controller
    def broker_crash(self, s: dict, b: int) -> Disjunct:
        g = s[("st", b)] == UP
        if self.p.max_crashes is not None:
            g = z3.And(g, s[("crashes",)] < self.p.max_crashes)
        t = dict(s)
        self._set_replica(t, b, NONE, z3.IntVal(NO_LEADER), s[("rlep", b)], None, z3.IntVal(-1), IDLE, z3.IntVal(0))
        t[("st", b)] = z3.IntVal(DOWN)
        self._stops_controlling(t, b, z3.BoolVal(True))
        t[("live", b)] = z3.BoolVal(False)
        for x in range(self.n):  # _unannounce: its registration is gone before its startup
            t[("nb", x, b)] = z3.BoolVal(False)
        t[("ctl",)] = z3.If(s[("ctl",)] == b, NO_LEADER, s[("ctl",)])
        for x in range(self.n):  # messages on their way *to* b are lost; those it sent may arrive
            if x != b:
                self._drop_slot_if(t, b, x, t[("fk", b, x)] == RESP)
                self._drop_slot_if(t, x, b, t[("fk", x, b)] == REQ)
        t[("crashes",)] = s[("crashes",)] + 1
        return Disjunct("broker_crash", (b,), g, t)

    def broker_restart(self, s: dict, b: int) -> Disjunct:
        g = s[("st", b)] == DOWN
        t = dict(s)
        zxid = s[("zxid",)] + 1
        t[("zxid",)], t[("live", b)], t[("bep", b)] = zxid, z3.BoolVal(True), zxid
        t[("st", b)], t[("isc", b)] = z3.IntVal(UP), z3.BoolVal(False)
        t[("bcep", b)] = zmax(s[("bcep", b)], s[("cep",)])
        t[("bbep", b)] = zxid
        for c in range(self.n):  # _announce: the controller's watch makes onBrokerStartup(b) due
            t[("nb", c, b)] = z3.Or(s[("nb", c, b)], s[("ctl",)] == c)
        for x in range(self.n):  # a new incarnation: its old fetches (as follower) are gone
            if x != b:
                self._drop_slot_if(t, b, x, z3.BoolVal(True))
        epoch = zmax(s[("rlep", b)], s[("lep",)])
        ldr = s[("ldr",)]
        # three outcomes, merged with If over every replica variable
        lead = dict(t)
        self._set_replica(lead, b, LEADER, z3.IntVal(b), epoch, [s[("isr", x)] for x in range(self.n)],
                          s[("zkv",)], IDLE, s[("leo", b)])
        self.advance_hw(lead, b)
        orphan = dict(t)
        orphan[("role", b)], orphan[("rl", b)], orphan[("rlep", b)] = z3.IntVal(FOLLOWER), z3.IntVal(NO_LEADER), epoch
        follow = dict(t)
        self._follow(follow, b, ldr, epoch)
        for k in t:
            t[k] = _ite(ldr == b, lead[k], _ite(ldr == NO_LEADER, orphan[k], follow[k]))
        return Disjunct("broker_restart", (b,), g, t)

    def controller_elect(self, s: dict, b: int) -> Disjunct:
        g = z3.And(s[("ctl",)] == NO_LEADER, s[("st", b)] == UP, s[("live", b)])
        t = dict(s)
        epoch = s[("cep",)] + 1
        t[("ctl",)], t[("cep",)] = z3.IntVal(b), epoch
        t[("isc", b)], t[("bcep", b)] = z3.BoolVal(True), epoch
        for x in range(self.n):  # it sends every broker the current state: none is due
            t[("nb", b, x)] = z3.BoolVal(False)
        self._send(t, s[("ldr",)], s[("lep",)], [s[("isr", x)] for x in range(self.n)], s[("zkv",)], epoch, self._mbe(s))
        return Disjunct("controller_elect", (b,), g, t)

    def on_broker_startup(self, s: dict, c: int, b: int) -> Disjunct:
        """The acting controller runs onBrokerStartup once for b's new registration: the
        current LeaderAndISR, with the current max broker epoch."""
        req = self.shape.req.req(b, s[("ldr",)], s[("lep",)], *[s[("isr", x)] for x in range(self.n)],
                                 s[("zkv",)], s[("cep",)], self._mbe(s))
        g = z3.And(self._acting(s, c), s[("nb", c, b)])
        t = dict(s)
        t[("nb", c, b)] = z3.BoolVal(False)
        t[("lai",)] = z3.Store(s[("lai",)], req, True)
        return Disjunct("on_broker_startup", (c, b), g, t)

    def _stops_controlling(self, t: dict, b: int, when: Term) -> None:
        """``_stops_controlling``: when ``when`` holds, b no longer acts as controller and
        forgets the startups it owed."""
        for k in [("isc", b)] + [("nb", b, x) for x in range(self.n)]:
            t[k] = z3.BoolVal(False) if z3.is_true(when) else z3.If(when, False, t[k])

    def _acting(self, s: dict, c: int) -> Term:
        return z3.And(s[("st", c)] == UP, s[("isc", c)], s[("ctl",)] == c, s[("bcep", c)] == s[("cep",)])

    def controller_resign(self, s: dict, b: int) -> Disjunct:
        g = z3.And(s[("st", b)] == UP, s[("isc", b)],
                   z3.Not(z3.And(s[("ctl",)] == b, s[("cep",)] == s[("bcep", b)])))
        t = dict(s)
        self._stops_controlling(t, b, z3.BoolVal(True))
        return Disjunct("controller_resign", (b,), g, t)

    def elect_leader(self, s: dict, c: int, leader: int) -> Disjunct:
        """``elect_leader`` with ``election_outcomes`` (clean election only) for leader L."""
        n = self.n
        acting = z3.And(s[("st", c)] == UP, s[("isc", c)], s[("ctl",)] == c, s[("bcep", c)] == s[("cep",)])
        g = acting
        if self.p.max_epoch is not None:
            g = z3.And(g, s[("lep",)] + 1 <= self.p.max_epoch)
        ldr, isr, live = s[("ldr",)], [s[("isr", x)] for x in range(n)], [s[("live", x)] for x in range(n)]
        live_isr = [z3.And(isr[x], live[x]) for x in range(n)]
        leader_live = z3.And(ldr != NO_LEADER, pick(live, ldr, z3.BoolVal(False)))
        some_dead = z3.Or([z3.And(isr[x], z3.Not(live[x])) for x in range(n)])
        if leader == NO_LEADER:
            case = z3.And(z3.Not(leader_live), z3.Not(z3.Or(live_isr)), ldr != NO_LEADER)
            new_isr = isr
        else:
            keep = z3.And(leader_live, some_dead, ldr == leader)
            move = z3.And(z3.Not(leader_live), live_isr[leader])
            case = z3.Or(keep, move)
            new_isr = live_isr
        t = dict(s)
        lep, zkv = s[("lep",)] + 1, s[("zkv",)] + 1
        t[("ldr",)], t[("lep",)], t[("zkv",)] = z3.IntVal(leader), lep, zkv
        for x in range(n):
            t[("isr", x)] = new_isr[x]
        self._send(t, z3.IntVal(leader), lep, new_isr, zkv, s[("cep",)], self._mbe(s))
        return Disjunct("elect_leader", (c, 0, leader), z3.And(g, case), t)

    # ---- LeaderAndISR
    def _fresh_msg(self) -> Term:
        self._msgs += 1
        return z3.Const(f"msg{self._msgs}", self.shape.req)

    def _accept(self, s: dict, t: dict, b: int, m: Term) -> None:
        R = self.shape.req
        cep, bcep = R.cepoch(m), s[("bcep", b)]
        older = z3.Or(cep < bcep, R.mbe(m) < s[("bbep", b)])
        t[("stale",)] = z3.If(older, s[("stale",)] + 1, s[("stale",)])
        self._stops_controlling(t, b, cep > bcep)
        t[("bcep", b)] = z3.If(cep > bcep, cep, bcep)

    def _request_guard(self, s: dict, b: int, m: Term) -> Term:
        R = self.shape.req
        return z3.And(s[("lai",)][m], R.to(m) == b, s[("st", b)] == UP, z3.Not(self._stale(s, m)))

    def become_leader(self, s: dict, b: int) -> Disjunct:
        R = self.shape.req
        m = self._fresh_msg()
        g = z3.And(self._request_guard(s, b, m), R.leader(m) == b)
        t = dict(s)
        self._accept(s, t, b, m)
        self._drop_responses_to(t, b)
        isr = [getattr(R, f"isr{x}")(m) for x in range(self.n)]
        self._set_replica(t, b, LEADER, z3.IntVal(b), R.lepoch(m), isr, R.zkv(m), IDLE, s[("leo", b)])
        t[("led", b)] = z3.Store(s[("led", b)], R.lepoch(m), True)
        t[("ledmax",)] = zmax(s[("ledmax",)], R.lepoch(m))
        self.advance_hw(t, b)
        return Disjunct("become_leader", (b,), g, t, m)

    def become_follower(self, s: dict, b: int) -> Disjunct:
        R = self.shape.req
        m = self._fresh_msg()
        g = z3.And(self._request_guard(s, b, m), R.leader(m) != b)
        t = dict(s)
        self._accept(s, t, b, m)
        base = dict(t)
        orphan = dict(base)
        self._set_replica(orphan, b, FOLLOWER, z3.IntVal(NO_LEADER), R.lepoch(m), None, z3.IntVal(-1), IDLE, z3.IntVal(0))
        self._drop_responses_to(orphan, b)
        already = z3.And(s[("role", b)] == FOLLOWER, s[("rl", b)] == R.leader(m))
        if self.p.truncation == "kip320":  # refollow_on_new_epoch
            already = z3.BoolVal(False)
        keep = dict(base)
        keep[("rlep", b)] = R.lepoch(m)
        follow = dict(base)
        self._drop_responses_to(follow, b)
        self._follow(follow, b, R.leader(m), R.lepoch(m))
        for k in t:
            t[k] = _ite(R.leader(m) == NO_LEADER, orphan[k], _ite(already, keep[k], follow[k]))
        return Disjunct("become_follower", (b,), g, t, m)

    # ---- replication
    def _truncation_point(self, s: dict, f: int, ld: int) -> Term:
        fv, fe, fleo = self._log(s, f)
        _, le, lleo = self._log(s, ld)
        hw = s[("hw", f)]
        lep = s[("rlep", ld)]
        rule = self.p.truncation
        if rule == "hw":
            return zmin(hw, fleo)

        def end_offset(eps: list[Term], leo: Term, epoch: Term, current: Term | None) -> Term:
            out = leo
            for i in reversed(range(self.r)):
                out = z3.If(z3.And(i < leo, eps[i] > epoch), i, out)
            return out if current is None else z3.If(epoch == current, leo, out)

        latest = pick(fe, fleo - 1, z3.IntVal(0))
        if rule == "kip101":
            return z3.If(fleo == 0, 0, zmin(fleo, end_offset(le, lleo, latest, lep)))
        has, best = lep <= latest, lep  # the leader's current epoch counts as known
        best = z3.If(has, lep, 0)
        for i in range(self.r):
            c = z3.And(i < lleo, le[i] <= latest)
            best = z3.If(z3.And(c, z3.Or(z3.Not(has), le[i] > best)), le[i], best)
            has = z3.Or(has, c)
        leader_end = end_offset(le, lleo, best, lep)
        follower_end = end_offset(fe, fleo, best, None)
        return z3.If(fleo == 0, 0, z3.If(has, zmin(leader_end, follower_end), 0))

    def truncate(self, s: dict, f: int, ld: int) -> Disjunct:
        g = z3.And(s[("st", f)] == UP, s[("role", f)] == FOLLOWER, s[("fs", f)] == TRUNCATING,
                   s[("rl", f)] == ld, s[("st", ld)] == UP, s[("role", ld)] == LEADER)
        if self.p.fenced_fetch:
            g = z3.And(g, s[("rlep", ld)] == s[("rlep", f)])
        t = dict(s)
        cut = self._truncation_point(s, f, ld)
        self._truncate_log(t, f, cut)
        t[("hw", f)] = zmin(s[("hw", f)], cut)
        t[("fs", f)] = z3.IntVal(FETCHING)
        return Disjunct("truncate", (f, 0), g, t)

    def produce(self, s: dict, b: int) -> Disjunct:
        leo = s[("leo", b)]
        g = z3.And(s[("st", b)] == UP, s[("role", b)] == LEADER, s[("produced",)] < self.r,
                   count(self._isr_of(s, b)) >= self.p.min_insync, leo < self.r)
        t = dict(s)
        value = s[("produced",)] + 1
        for i in range(self.r):
            t[("val", b, i)] = z3.If(leo == i, value, s[("val", b, i)])
            t[("ep", b, i)] = z3.If(leo == i, s[("rlep", b)], s[("ep", b, i)])
        t[("leo", b)] = leo + 1
        t[("produced",)] = value
        superseded = s[("ledmax",)] > s[("rlep", b)]
        for v in range(1, self.r + 1):
            t[("zomb", v)] = z3.Or(s[("zomb", v)], z3.And(superseded, value == v))
        self.advance_hw(t, b)
        return Disjunct("produce", (b, 0), g, t)

    def send_fetch(self, s: dict, f: int, ld: int) -> Disjunct:
        g = z3.And(s[("st", f)] == UP, s[("role", f)] == FOLLOWER, s[("fs", f)] == FETCHING,
                   s[("rl", f)] == ld, s[("fk", f, ld)] == EMPTY)
        t = dict(s)
        t[("fk", f, ld)], t[("fo", f, ld)], t[("fe", f, ld)] = z3.IntVal(REQ), s[("leo", f)], s[("rlep", f)]
        t[("fhw", f, ld)] = z3.IntVal(-1)
        return Disjunct("send_fetch", (f, 0), g, t)

    def handle_fetch(self, s: dict, f: int, ld: int) -> Disjunct:
        g = z3.And(s[("fk", f, ld)] == REQ, s[("st", ld)] == UP, s[("role", ld)] == LEADER)
        off, leo, lep = s[("fo", f, ld)], s[("leo", ld)], s[("rlep", ld)]
        refused = dict(s)
        self._empty_slot(refused, f, ld)
        oor = dict(refused)
        oor[("fk", f, ld)], oor[("fo", f, ld)], oor[("fe", f, ld)] = z3.IntVal(RESP), off, lep
        oor[("fhw", f, ld)], oor[("ferr", f, ld)] = leo, z3.IntVal(OUT_OF_RANGE)
        ok = dict(refused)
        ok[("fleo", ld, f)] = off
        self.advance_hw(ok, ld)
        vals, eps, _ = self._log(s, ld)
        ok[("fk", f, ld)], ok[("fo", f, ld)], ok[("fe", f, ld)] = z3.IntVal(RESP), off, lep
        ok[("frl", f, ld)], ok[("fhw", f, ld)] = leo - off, ok[("hw", ld)]
        for i in range(self.r):
            inside = off + i < leo
            ok[("frv", f, ld, i)] = z3.If(inside, pick(vals, off + i, z3.IntVal(0)), 0)
            ok[("fre", f, ld, i)] = z3.If(inside, pick(eps, off + i, z3.IntVal(0)), 0)
        fenced = s[("fe", f, ld)] != lep if self.p.fenced_fetch else z3.BoolVal(False)
        t = {k: _ite(fenced, refused[k], _ite(off > leo, oor[k], ok[k])) for k in s}
        return Disjunct("handle_fetch", (f, ld), g, t)

    def receive_fetch(self, s: dict, f: int, ld: int) -> Disjunct:
        g = z3.And(s[("fk", f, ld)] == RESP, s[("st", f)] == UP)
        dropped = dict(s)
        self._empty_slot(dropped, f, ld)
        leo = s[("leo", f)]
        unexpected = z3.Or(s[("role", f)] != FOLLOWER, s[("rl", f)] != ld, s[("fs", f)] != FETCHING,
                           s[("fo", f, ld)] != leo)
        if self.p.fenced_fetch:
            unexpected = z3.Or(unexpected, s[("fe", f, ld)] != s[("rlep", f)])
        oor = dict(dropped)
        cut = zmin(s[("fhw", f, ld)], leo)
        self._truncate_log(oor, f, cut)
        oor[("hw", f)] = zmin(s[("hw", f)], cut)
        ok = dict(dropped)
        n_rec = s[("frl", f, ld)]
        rv = [s[("frv", f, ld, i)] for i in range(self.r)]
        re = [s[("fre", f, ld, i)] for i in range(self.r)]
        for i in range(self.r):
            j = i - leo
            ok[("val", f, i)] = z3.If(i < leo, s[("val", f, i)], z3.If(j < n_rec, pick(rv, j, z3.IntVal(0)), 0))
            ok[("ep", f, i)] = z3.If(i < leo, s[("ep", f, i)], z3.If(j < n_rec, pick(re, j, z3.IntVal(0)), 0))
        new_leo = leo + n_rec
        ok[("leo", f)] = new_leo
        ok[("hw", f)] = zmin(s[("fhw", f, ld)], new_leo)
        t = {k: _ite(unexpected, dropped[k], _ite(s[("ferr", f, ld)] == OUT_OF_RANGE, oor[k], ok[k])) for k in s}
        return Disjunct("receive_fetch", (f, ld), g, t)

    def _isr_write(self, s: dict, b: int, isr: list[Term]) -> dict:
        t = dict(s)
        zkv = s[("zkv",)] + 1
        for x in range(self.n):
            t[("isr", x)] = isr[x]
            t[("risr", b, x)] = isr[x]
        t[("zkv",)], t[("rzkv", b)] = zkv, zkv
        self.advance_hw(t, b)
        return t

    def _leading(self, s: dict, b: int) -> Term:
        return z3.And(s[("st", b)] == UP, s[("role", b)] == LEADER)

    def shrink_isr(self, s: dict, b: int, f: int) -> Disjunct:
        g = z3.And(self._leading(s, b), s[("risr", b, f)], s[("fleo", b, f)] < s[("leo", b)],
                   s[("zkv",)] == s[("rzkv", b)])
        isr = [z3.BoolVal(False) if x == f else s[("risr", b, x)] for x in range(self.n)]
        return Disjunct("shrink_isr", (b, 0, f), g, self._isr_write(s, b, isr))

    def expand_isr(self, s: dict, b: int, f: int) -> Disjunct:
        fl = s[("fleo", b, f)]
        g = z3.And(self._leading(s, b), z3.Not(s[("risr", b, f)]), fl != UNKNOWN, fl >= s[("hw", b)],
                   s[("zkv",)] == s[("rzkv", b)])
        if self.p.fenced_fetch:
            g = z3.And(g, fl >= s[("es", b)])
        isr = [z3.BoolVal(True) if x == f else s[("risr", b, x)] for x in range(self.n)]
        return Disjunct("expand_isr", (b, 0, f), g, self._isr_write(s, b, isr))

    def isr_update_failed(self, s: dict, b: int) -> Disjunct:
        g = z3.And(self._leading(s, b), s[("zkv",)] != s[("rzkv", b)])
        t = dict(s)
        self._set_replica(t, b, NONE, z3.IntVal(NO_LEADER), s[("rlep", b)], None, z3.IntVal(-1), IDLE, z3.IntVal(0))
        t[("fs", b)] = s[("fs", b)]
        return Disjunct("isr_update_failed", (b, 0), g, t)

    # ---- the relation
    def disjuncts(self, s: dict) -> list[Disjunct]:
        """Every (action, broker arguments) case from state s, each with the post-step
        ``forget_stale_requests`` applied."""
        n = self.n
        out: list[Disjunct] = []
        for b in range(n):
            out += [self.broker_crash(s, b), self.broker_restart(s, b), self.controller_elect(s, b),
                    self.controller_resign(s, b), self.become_leader(s, b), self.become_follower(s, b),
                    self.produce(s, b), self.isr_update_failed(s, b)]
            out += [self.elect_leader(s, b, ld) for ld in [NO_LEADER, *range(n)]]
            out += [self.on_broker_startup(s, b, x) for x in range(n) if x != b]
            for x in range(n):
                if x != b:
                    out += [self.truncate(s, b, x), self.send_fetch(s, b, x), self.handle_fetch(s, b, x),
                            self.receive_fetch(s, b, x), self.shrink_isr(s, b, x), self.expand_isr(s, b, x)]
        for d in out:
            # The set never holds a stale request after a step, so filtering it again is
            # the identity unless the step touched the set or what staleness is judged by.
            if any(not d.post[k].eq(s[k]) for k in self._stale_keys):
                self.forget_stale(d.post)
        return out

    @property
    def _stale_keys(self) -> list[tuple]:
        return [("lai",)] + [(k, b) for k in ("bcep", "bbep", "rlep") for b in range(self.n)]

    def merged_step(self, s: dict, t: dict, tag: str) -> tuple[Term, list[Disjunct], Term]:
        """Next(s, t) with an action selector: t's variables are one If-chain each, over just
        the cases that change them -- far smaller than a disjunction of whole-state equations,
        which is what makes BMC at depth 10+ feasible.  Returns (formula, cases, selector)."""
        ds = self.disjuncts(s)
        sel = z3.Int(f"act.{tag}")
        parts = [z3.Or([z3.And(sel == i, d.guard) for i, d in enumerate(ds)])]
        for k, _ in self.shape.keys():
            value = s[k]
            for i, d in enumerate(ds):
                if not d.post[k].eq(s[k]):
                    value = z3.If(sel == i, d.post[k], value)
            parts.append(t[k] == value)
        return z3.And(parts), ds, sel

    def step(self, s: dict, t: dict, actions: tuple[str, ...] | None = None) -> tuple[Term, list[Disjunct]]:
        """Next(s, t) as one formula (stuttering excluded), and the cases it is made of."""
        ds = [d for d in self.disjuncts(s) if actions is None or d.action in actions]
        return z3.Or([z3.And(d.guard, eq_states(self.shape, d.post, t)) for d in ds]), ds


def _ite(c: Term, a: Term, b: Term) -> Term:
    return a if a.eq(b) else z3.If(c, a, b)


# -- properties, symbolically -------------------------------------------------------------


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



def unsupported(cfg: Config) -> str | None:
    """What ``cfg`` asks for that this encoding does not cover (see the module docstring),
    or None: a proof of an encoding that silently ignores part of the model proves nothing."""
    missing = [what for what, asked in (
        ("unclean election", cfg.unclean), ("GC pauses", cfg.max_pauses),
        ("controlled shutdowns", cfg.max_shutdowns), ("reassignments", cfg.reassignments),
        ("a replication factor below the broker count", cfg.replication_factor),
        ("dropping caught-up followers", cfg.shrink_caught_up)) if asked]
    return ", ".join(missing) or None

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
}


def durable(shape: Shape, s: dict) -> Term:
    """The durability properties BMC looks for violations of."""
    return z3.And(prop_committed_durable(shape, s), prop_acked_durable(shape, s))


def initial_state(shape: Shape, cfg: Config) -> dict:
    return encode(shape, initial(cfg))


def fetch_message(s: State, f: int, ld: int) -> Fetch:
    """The explicit fetch message in slot (follower f, leader ld)."""
    return next(m for m in s.fetches if m.follower == f and m.leader == ld)


FETCH_KINDS = {"handle_fetch": FETCH_REQUEST, "receive_fetch": FETCH_RESPONSE}


# -- the differential check: this relation against the explicit model --------------------


def sample_states(cfg: Config, count: int, explore: int = 5000) -> list[State]:
    """``count`` reachable states spread evenly over the first ``explore`` states of a
    breadth-first search (no symmetry), so that deep states are sampled, not just the
    first few levels."""
    from model.actions import successors

    first = initial(cfg)
    seen, queue, found = {first}, [first], [first]
    while queue and len(found) < explore:
        nxt = []
        for s in queue:
            for _, t in successors(s, cfg):
                if t not in seen and len(found) < explore:
                    seen.add(t)
                    found.append(t)
                    nxt.append(t)
        queue = nxt
    stride = max(1, len(found) // count)
    return found[::stride][:count]


def holds(formula: Term, timeout_ms: int = 10_000) -> bool:
    sol = z3.Solver()
    sol.set(timeout=timeout_ms)
    sol.add(z3.Not(formula))
    r = sol.check()
    if r == z3.unknown:
        raise RuntimeError(f"z3 gave up: {sol.reason_unknown()}")
    return r == z3.unsat


def differential(cfg: Config, states: list[State]) -> list[str]:
    """Mismatches between this relation and ``model.actions.successors`` (restricted to
    ``COVERED``) on each state, and between the symbolic and explicit properties.

    The relation and the properties are built once over symbolic states ``S`` and ``X``;
    each sampled state is then pinned (``S == encode(s)``) inside a push/pop scope.
    """
    from model.actions import successors
    from properties.safety import BY_NAME, epoch_monotonic, epoch_monotonic_state

    shape = Shape(cfg.brokers, cfg.records)
    enc = Encoding(shape, Params.of(cfg))
    S, X = shape.fresh("s"), shape.fresh("x")
    nxt, ds = enc.step(S, X, COVERED)
    rel = z3.Solver()
    rel.add(nxt)
    props = z3.Solver()
    formulas = {name: f(shape, S) for name, f in STATE_PROPERTIES.items() if name in BY_NAME}
    formulas["epoch_monotonic (log epochs)"] = prop_log_epochs_monotonic(shape, S)
    explicit = {name: BY_NAME[name].check for name in formulas if name in BY_NAME}
    explicit["epoch_monotonic (log epochs)"] = epoch_monotonic_state
    mono = prop_epoch_monotonic(shape, S, X)
    problems: list[str] = []
    for k, s in enumerate(states):
        pin = eq_states(shape, S, encode(shape, s))
        succ = [(st, t) for st, t in successors(s, cfg) if st.action in COVERED]
        rel.push()
        rel.add(pin)
        for st, t in succ:
            rel.push()
            rel.add(eq_states(shape, X, encode(shape, t)))
            if rel.check() != z3.sat:
                problems.append(f"state {k}: explicit step {st.action}{st.args} not allowed by the z3 relation")
            rel.pop()
        rel.add(z3.Not(eq_states(shape, X, S)))
        for _, t in succ:
            rel.add(z3.Not(eq_states(shape, X, encode(shape, t))))
        if rel.check() == z3.sat:
            model = rel.model()
            which = [d.action + str(d.args) for d in ds
                     if z3.is_true(model.eval(z3.And(d.guard, eq_states(shape, d.post, X)), model_completion=True))]
            problems.append(f"state {k}: the z3 relation allows a step the model does not: {which}")
        rel.pop()
        props.push()
        props.add(pin)
        for name, f in formulas.items():
            props.push()
            props.add(z3.Not(f))
            sym_holds = props.check() == z3.unsat
            props.pop()
            if sym_holds != (explicit[name](s) is None):
                problems.append(f"state {k}: property {name} disagrees")
        for st, t in succ:
            props.push()
            props.add(eq_states(shape, X, encode(shape, t)), z3.Not(mono))
            sym_holds = props.check() == z3.unsat
            props.pop()
            if sym_holds != (epoch_monotonic(s, t) is None):
                problems.append(f"state {k}: epoch_monotonic disagrees on step {st.action}")
        props.pop()
    return problems


# -- inductive invariants -----------------------------------------------------------------


def _forall_req(shape: Shape, body: Callable[[Term], Term], name: str = "q") -> Term:
    m = z3.Const(name, shape.req)
    return z3.ForAll([m], body(m))


def lemma_well_typed(shape: Shape, s: dict) -> Term:
    """Variables stay in their domains: ids are brokers or -1, logs fit their R slots, and
    fetch responses carry a suffix that fits after their offset."""
    n, r = shape.n, shape.r
    R = shape.req
    parts = [s[("ctl",)] >= -1, s[("ctl",)] < n, s[("ldr",)] >= -1, s[("ldr",)] < n,
             s[("produced",)] >= 0, s[("produced",)] <= r, s[("zkv",)] >= 0, s[("lep",)] >= 1, s[("cep",)] >= 1]
    for b in range(n):
        parts += [z3.Or(s[("st", b)] == UP, s[("st", b)] == DOWN),
                  z3.Or(s[("role", b)] == NONE, s[("role", b)] == LEADER, s[("role", b)] == FOLLOWER),
                  s[("rl", b)] >= -1, s[("rl", b)] < n, s[("hw", b)] >= 0, s[("leo", b)] >= 0, s[("leo", b)] <= r,
                  s[("leo", b)] <= s[("produced",)], z3.Implies(s[("st", b)] == DOWN, s[("role", b)] == NONE)]
        for f in range(n):
            if f != b:
                fk = s[("fk", f, b)]
                parts += [fk >= EMPTY, fk <= RESP, z3.Implies(fk != EMPTY, z3.And(s[("fo", f, b)] >= 0, s[("fo", f, b)] <= s[("produced",)])),
                          z3.Implies(fk == RESP, z3.And(s[("frl", f, b)] >= 0, s[("fhw", f, b)] >= 0,
                                                        s[("fo", f, b)] + s[("frl", f, b)] <= s[("produced",)]))]
    parts.append(_forall_req(shape, lambda m: z3.Implies(
        s[("lai",)][m], z3.And(R.to(m) >= 0, R.to(m) < n, R.leader(m) >= -1, R.leader(m) < n))))
    return z3.And(parts)


def lemma_leader_in_own_isr(shape: Shape, s: dict) -> Term:
    """A broker acting as leader is in its own copy of the ISR (so its HW never passes its LEO)."""
    return z3.And([z3.Implies(s[("role", b)] == LEADER, s[("risr", b, b)]) for b in range(shape.n)])


def lemma_requests_match_zk(shape: Shape, s: dict) -> Term:
    """Every request ever sent (and not yet forgotten) is a past or present ZK state: its
    epochs and version are at most ZK's, its leader is in its ISR, and one carrying the
    current version (or leader epoch) carries the current leader (and ISR)."""
    R = shape.req
    n = shape.n

    def ok(m: Term) -> Term:
        isr = [getattr(R, f"isr{x}")(m) for x in range(n)]
        same = z3.And(R.leader(m) == s[("ldr",)], R.lepoch(m) == s[("lep",)],
                      *[isr[x] == s[("isr", x)] for x in range(n)])
        return z3.Implies(s[("lai",)][m], z3.And(
            z3.Implies(R.leader(m) != NO_LEADER, pick(isr, R.leader(m), z3.BoolVal(False))),
            R.lepoch(m) <= s[("lep",)], R.zkv(m) <= s[("zkv",)], R.cepoch(m) <= s[("cep",)],
            z3.Implies(R.lepoch(m) == s[("lep",)], R.leader(m) == s[("ldr",)]),
            z3.Implies(R.zkv(m) == s[("zkv",)], same)))

    return _forall_req(shape, ok)


def lemma_requests_agree(shape: Shape, s: dict) -> Term:
    """Two requests for the same leader epoch name the same leader."""
    R = shape.req
    a, b = z3.Const("qa", shape.req), z3.Const("qb", shape.req)
    return z3.ForAll([a, b], z3.Implies(z3.And(s[("lai",)][a], s[("lai",)][b], R.lepoch(a) == R.lepoch(b)),
                                        R.leader(a) == R.leader(b)))


def lemma_known_epochs_bounded(shape: Shape, s: dict) -> Term:
    """No broker knows a leader epoch, controller epoch or zk version ahead of ZooKeeper."""
    return z3.And([z3.And(s[("rlep", b)] <= s[("lep",)], s[("bcep", b)] <= s[("cep",)], s[("rzkv", b)] <= s[("zkv",)])
                   for b in range(shape.n)])


def lemma_zk_version_owner(shape: Shape, s: dict) -> Term:
    """Seed 000 question 3, the mechanism: a leader holding ZK's current version *is* the
    ZK leader in the current epoch, with ZK's ISR -- so the conditional ISR write succeeds
    only for it, and every other (paused, superseded) leader's write fails."""
    n = shape.n
    return z3.And([z3.Implies(z3.And(s[("role", b)] == LEADER, s[("rzkv", b)] == s[("zkv",)]),
                              z3.And(s[("ldr",)] == b, s[("rlep", b)] == s[("lep",)],
                                     *[s[("risr", b, x)] == s[("isr", x)] for x in range(n)]))
                   for b in range(n)])


def lemma_led_history(shape: Shape, s: dict) -> Term:
    """A broker became leader only in epochs ZK has reached, in the current one only if it is
    ZK's leader, and every outstanding request for such an epoch names that broker."""
    R = shape.req
    e = z3.Int("e_hist")
    parts = []
    for b in range(shape.n):
        parts.append(z3.ForAll([e], z3.Implies(s[("led", b)][e], z3.And(
            e <= s[("lep",)], z3.Implies(e == s[("lep",)], s[("ldr",)] == b)))))
        parts.append(_forall_req(shape, lambda m, b=b: z3.Implies(
            z3.And(s[("lai",)][m], s[("led", b)][R.lepoch(m)]), R.leader(m) == b), name=f"qh{b}"))
    return z3.And(parts)


def lemma_controller_unique(shape: Shape, s: dict) -> Term:
    """Stated as the property itself; it is inductive together with the epoch bounds."""
    return prop_single_controller(shape, s)


def q3_stale_leader_frozen(shape: Shape, s: dict, t: dict) -> Term:
    """Seed 000 question 3 as a step property: a leader whose zk version ZK has moved past
    (a paused or superseded leader), while it stays leader in the same epoch, keeps exactly
    its ISR and stays behind ZK -- it can never shrink the ISR to commit on its own."""
    parts = []
    for b in range(shape.n):
        stale = z3.And(s[("role", b)] == LEADER, s[("rzkv", b)] != s[("zkv",)])
        stays = z3.And(t[("role", b)] == LEADER, t[("rlep", b)] == s[("rlep", b)])
        same = z3.And(t[("rzkv", b)] == s[("rzkv", b)], t[("rzkv", b)] != t[("zkv",)],
                      *[t[("risr", b, x)] == s[("risr", b, x)] for x in range(shape.n)])
        parts.append(z3.Implies(z3.And(stale, stays), same))
    return z3.And(parts)


# name -> (formula, kind): kind "state" is an inductive invariant, "step" a step property
LEMMAS: dict[str, Callable[[Shape, dict], Term]] = {
    "well_typed": lemma_well_typed,
    "leader_in_own_isr": lemma_leader_in_own_isr,
    "requests_match_zk": lemma_requests_match_zk,
    "requests_agree": lemma_requests_agree,
    "known_epochs_bounded": lemma_known_epochs_bounded,
    "zk_version_owner": lemma_zk_version_owner,
    "led_history": lemma_led_history,
}
STATE_GOALS: dict[str, Callable[[Shape, dict], Term]] = {
    "hw_le_leo": prop_hw_le_leo,
    "isr_well_formed": prop_isr_well_formed,
    "one_leader_per_epoch": prop_one_leader_per_epoch,
    "single_controller": prop_single_controller,
}
STEP_GOALS: dict[str, Callable[[Shape, dict, dict], Term]] = {
    "epoch_monotonic": prop_epoch_monotonic,
    "q3_stale_leader_frozen": q3_stale_leader_frozen,
}
USES = {  # which lemmas each goal's proof leans on (all are proved together, by induction)
    "hw_le_leo": ("well_typed", "leader_in_own_isr", "requests_match_zk"),
    "isr_well_formed": ("zk_version_owner", "leader_in_own_isr"),
    "one_leader_per_epoch": ("led_history", "requests_agree", "requests_match_zk"),
    "single_controller": ("known_epochs_bounded", "requests_match_zk"),
    "epoch_monotonic": (),
    "q3_stale_leader_frozen": ("well_typed", "known_epochs_bounded", "zk_version_owner"),
}


@dataclass
class Verdict:
    name: str
    kind: str  # "lemma", "invariant", "step", "bmc"
    status: str  # "proved", "holds to depth k", "counterexample", "failed", "unknown"
    seconds: float
    detail: str = ""
    steps: list = field(default_factory=list)


def prove(cfg: Config, n: int = 2, timeout_ms: int = 60_000,
          progress: Callable[[Verdict], None] | None = None) -> list[Verdict]:
    """Induction: Init => I and I /\\ Next => I' for I the conjunction of every lemma and
    state goal, checked one formula and one action at a time (so a failure names both);
    step goals are checked as I /\\ Next => P(s, s').  Epochs, versions and the crash count
    are unbounded (the configuration's bounds are dropped)."""
    import time

    shape = Shape(n, cfg.records)
    enc = Encoding(shape, Params.of(cfg, bounded=False))
    S = shape.fresh("s")
    init = encode(shape, initial(_with_brokers(cfg, n)))
    invariants = {**LEMMAS, **STATE_GOALS}
    hyp = z3.And([f(shape, S) for f in invariants.values()])
    ds = enc.disjuncts(S)
    by_action: dict[str, list[Disjunct]] = {}
    for d in ds:
        by_action.setdefault(d.action, []).append(d)
    out: list[Verdict] = []

    def check(name: str, kind: str, goal_init: Term | None, goal_post: Callable[[Disjunct], Term]) -> None:
        started = time.perf_counter()
        failures = []
        if goal_init is not None and not holds(goal_init, timeout_ms):
            failures.append("Init")
        for action, cases in by_action.items():
            sol = z3.Solver()
            sol.set(timeout=timeout_ms)
            sol.add(hyp, z3.Or([z3.And(d.guard, z3.Not(goal_post(d))) for d in cases]))
            r = sol.check()
            if r != z3.unsat:
                failures.append(action + ("?" if r == z3.unknown else ""))
        secs = time.perf_counter() - started
        status = "proved" if not failures else ("unknown" if all(f.endswith("?") for f in failures) else "failed")
        uses = USES.get(name, ())
        detail = (f"lemmas: {', '.join(uses)}" if uses else "") if not failures else f"not preserved by: {', '.join(failures)}"
        v = Verdict(name, kind, status, secs, detail)
        out.append(v)
        if progress:
            progress(v)

    for name, f in LEMMAS.items():
        check(name, "lemma", f(shape, init), lambda d, f=f: f(shape, d.post))
    for name, f in STATE_GOALS.items():
        check(name, "invariant", f(shape, init), lambda d, f=f: f(shape, d.post))
    for name, g in STEP_GOALS.items():
        check(name, "step", None, lambda d, g=g: g(shape, S, d.post))
    return out


def _with_brokers(cfg: Config, n: int) -> Config:
    from dataclasses import replace

    return replace(cfg, brokers=n, partitions=1)


# -- bounded model checking ---------------------------------------------------------------


def bmc(cfg: Config, depth: int, progress: Callable[[int, float, bool], None] | None = None,
        start: State | None = None) -> tuple[int | None, list, list[float]]:
    """Look for a state violating ``durable`` within ``depth`` steps of the initial state
    (or of ``start``, a state the explicit model reached: the solver's time grows about 5x
    per depth -- 0.8 s at 4, 3.8 s at 5, 25 s at 6 -- so deep bugs are reached from a
    replayed explicit prefix).

    Returns (depth of the counterexample or None, decoded explicit steps, seconds per depth).
    The counterexample is decoded into ``model.actions.Step``s by replaying the explicit
    model alongside the z3 trace, choosing at each step the action case z3 took."""
    import time

    from model.actions import Step, apply

    shape = Shape(cfg.brokers, cfg.records)
    enc = Encoding(shape, Params.of(cfg))
    first = initial(cfg) if start is None else start
    states = [encode(shape, first)]
    cases: list[list[Disjunct]] = []
    sels: list[Term] = []
    trans: list[Term] = []
    times: list[float] = []
    for k in range(1, depth + 1):
        started = time.perf_counter()
        nxt = shape.fresh(f"s{k}")
        rel, ds, sel = enc.merged_step(states[-1], nxt, str(k))
        trans.append(rel)
        states.append(nxt)
        cases.append(ds)
        sels.append(sel)
        # A fresh, non-incremental solver per depth: z3 then runs its preprocessing
        # (solve-eqs eliminates the per-step state equations), which incremental mode skips.
        sol = z3.Solver()
        sol.add(*trans, z3.Not(durable(shape, nxt)))
        r = sol.check()
        times.append(time.perf_counter() - started)
        if progress:
            progress(k, times[-1], r == z3.sat)
        if r == z3.sat:
            model = sol.model()
            x = first
            steps = []
            for i in range(k):
                d = cases[i][model.eval(sels[i], model_completion=True).as_long()]
                if d.msg is not None:
                    args: tuple = (req_decode(shape, model, d.msg),)
                elif d.action in FETCH_KINDS:
                    args = (fetch_message(x, *d.args),)
                else:
                    args = d.args
                step = Step(d.action, args)
                y = apply(x, cfg, step)
                if y is None:
                    raise RuntimeError(f"decoded step {i + 1} {step} is not enabled in the explicit model")
                steps.append(step)
                x = y
            return k, steps, times
    return None, [], times
