"""The symbolic state: the z3 variables of one shape, and explicit states encoded into them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import z3

from model.config import Config
from model.state import (
    EPOCH_DURING_DELETE,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    AlterPartition,
    Entry,
    Fetch,
    LeaderAndIsr,
    State,
    StopReplica,
    initial,
)

Term = Any  # a z3 expression


INF = 1 << 30


# fetch slot kinds
EMPTY, REQ, RESP = 0, 1, 2


def req_sort(n: int, topic: bool = False) -> z3.DatatypeSortRef:
    """The LeaderAndISR request as a z3 record (one partition, so no partition field); with
    ``topic`` (topic deletion), the incarnation of the topic the controller read."""
    d = z3.Datatype(f"Req{n}{'t' if topic else ''}")
    fields = [("to", z3.IntSort()), ("leader", z3.IntSort()), ("lepoch", z3.IntSort())]
    fields += [(f"isr{x}", z3.BoolSort()) for x in range(n)]
    fields += [("zkv", z3.IntSort()), ("cepoch", z3.IntSort()), ("mbe", z3.IntSort())]
    if topic:
        fields.append(("tid", z3.IntSort()))
    d.declare("req", *fields)
    return d.create()


def stop_sort(topic: bool = False) -> z3.DatatypeSortRef:
    """A StopReplica as a z3 record (one partition): a controlled shutdown's (without
    delete) and, with ``topic``, a topic deletion's too -- of leader epoch
    ``EPOCH_DURING_DELETE``, with the incarnation it deletes and the delete flag.  The set
    of those in flight is kept per addressee, so that a crash drops its own at once."""
    d = z3.Datatype(f"Stop{'t' if topic else ''}")
    fields = [("slepoch", z3.IntSort()), ("scepoch", z3.IntSort())]
    if topic:
        fields += [("stid", z3.IntSort()), ("sdel", z3.BoolSort())]
    d.declare("stop", *fields)
    return d.create()


def alter_sort(n: int) -> z3.DatatypeSortRef:
    """An AlterPartition message -- a leader's proposal or the controller's answer -- as a z3
    record (one partition and one incarnation of its topic, so neither is a field)."""
    d = z3.Datatype(f"Alter{n}")
    fields = [("akind", z3.IntSort()), ("aleader", z3.IntSort()), ("alepoch", z3.IntSort())]
    fields += [(f"aisr{x}", z3.BoolSort()) for x in range(n)]
    fields += [("azkv", z3.IntSort()), ("abep", z3.IntSort()), ("aerr", z3.IntSort())]
    d.declare("alter", *fields)
    return d.create()


@dataclass
class Shape:
    """The fixed dimensions of an encoding: brokers, log slots, and the request sorts --
    with ``alter``, also the set of AlterPartition messages in flight (a configuration
    without AlterPartition has none, so its states leave the set out); with ``topic``
    (topic deletion), the topic's identity: the znode's topic id and AR, each replica's
    topic id, each message's, and the retired records; with ``reassign`` (replica
    reassignment, which moves that AR, so only with ``topic``), the znode's pending RAR."""

    n: int
    r: int
    alter: bool = True
    topic: bool = False
    reassign: bool = False
    req: z3.DatatypeSortRef = field(init=False)
    stop: z3.DatatypeSortRef = field(init=False)
    alt: z3.DatatypeSortRef = field(init=False)

    def __post_init__(self) -> None:
        self.req = req_sort(self.n, self.topic)
        self.stop = stop_sort(self.topic)
        self.alt = alter_sort(self.n)

    @classmethod
    def of(cls, cfg: Config, n: int | None = None) -> Shape:
        """The shape of ``cfg``'s states, at ``n`` brokers (default: the configuration's)."""
        return cls(cfg.brokers if n is None else n, cfg.records, bool(cfg.alter_partition),
                   bool(cfg.deletions or cfg.reassignments), bool(cfg.reassignments))

    def keys(self) -> Iterator[tuple[tuple, str]]:
        """Every state variable with its sort ('i' Int, 'b' Bool, 'S' request set, 'T' StopReplica
        set, 'A' AlterPartition set, 'L' epoch set)."""
        n, r = self.n, self.r
        for k in ("ctl", "cep", "zxid", "ldr", "lep", "zkv", "stale", "ledmax", "produced", "crashes", "pauses",
                  "expiries", "prefs", "shutdowns"):
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
                yield ("sd", b, x), "b"  # x in broker b's shutting_down (b as controller)
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
        for b in range(n):
            yield ("stops", b), "T"  # the StopReplica requests in flight to b
        if self.alter:
            yield ("alt",), "A"  # the AlterPartition proposals and answers in flight
        if self.topic:
            yield ("tid",), "i"  # the znode's topic id
            yield ("dels",), "i"  # topic deletions, in all
            for b in range(n):
                yield ("ar", b), "b"  # b in the znode's AR (none: the topic is deleted)
                yield ("rtid", b), "i"  # the incarnation b's replica is of
                for ld in range(n):
                    if ld != b:
                        yield ("ftid", b, ld), "i"  # the fetch slot's topic id
            for v in range(1, r + 1):
                yield ("ret", v), "b"  # value v is a record of a deleted incarnation
        if self.reassign:
            yield ("reas",), "i"  # reassignments started, in all
            for b in range(n):
                yield ("rar", b), "b"  # b in the znode's RAR (none: no move in progress)

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
            elif sort == "T":
                out[key] = z3.Array(name, self.stop, z3.BoolSort())
            elif sort == "A":
                out[key] = z3.Array(name, self.alt, z3.BoolSort())
            else:
                out[key] = z3.Array(name, z3.IntSort(), z3.BoolSort())
        return out


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
        ("pauses",): I(g.pauses), ("expiries",): I(g.expiries), ("prefs",): I(g.preferred_elections),
        ("shutdowns",): I(g.shutdowns),
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
            out[("sd", b, x)] = B(x in br.shutting_down)
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
    assert all(m.partition == 0 and (not m.delete or shape.reassign or (shape.topic and m.leader_epoch == EPOCH_DURING_DELETE))
               for m in s.stop_replica), "a StopReplica other than a controlled shutdown's, a deletion's or a reassignment's"
    for b in range(n):
        stops = z3.K(shape.stop, z3.BoolVal(False))
        for m in s.stop_replica:
            if m.to == b:
                stops = z3.Store(stops, stop_value(shape, m), True)
        out[("stops", b)] = stops
    if shape.topic:
        out[("tid",)], out[("dels",)] = I(zn.topic_id), I(g.deletions)
        for b, br in enumerate(s.brokers):
            out[("ar", b)] = B(b in zn.ar)
            out[("rtid", b)] = I(br.replicas[0].topic_id)
            for ld in range(n):
                if ld != b:
                    m = slots.get((b, ld))
                    out[("ftid", b, ld)] = I(0 if m is None else m.topic_id)
        for v in range(1, r + 1):
            out[("ret", v)] = B((0, v) in g.retired)
    if shape.reassign:
        out[("reas",)] = I(g.reassignments)
        for b in range(n):
            out[("rar", b)] = B(b in zn.rar)
    assert shape.alter or not s.alter_partition, "AlterPartition messages in a shape without them"
    if shape.alter:
        assert all(m.partition == 0 and m.topic_id == zn.topic_id for m in s.alter_partition), "one incarnation"
        alt = z3.K(shape.alt, z3.BoolVal(False))
        for m in s.alter_partition:
            alt = z3.Store(alt, alter_value(shape, m), True)
        out[("alt",)] = alt
    return out


def alter_value(shape: Shape, m: AlterPartition) -> Term:
    isr = [z3.BoolVal(x in m.isr) for x in range(shape.n)]
    return shape.alt.alter(m.kind, m.leader, m.leader_epoch, *isr, m.zk_version, m.broker_epoch, m.error)


def alter_decode(shape: Shape, model: z3.ModelRef, m: Term, topic_id: int) -> AlterPartition:
    """An AlterPartition constant's value in a z3 model, as the explicit model's message."""
    A = shape.alt

    def iv(t: Term) -> int:
        return model.eval(t, model_completion=True).as_long()

    isr = tuple(x for x in range(shape.n) if z3.is_true(model.eval(getattr(A, f"aisr{x}")(m), model_completion=True)))
    return AlterPartition(iv(A.akind(m)), iv(A.aleader(m)), 0, iv(A.alepoch(m)), isr, iv(A.azkv(m)), iv(A.abep(m)),
                          iv(A.aerr(m)), topic_id)


def req_value(shape: Shape, m: LeaderAndIsr) -> Term:
    isr = [z3.BoolVal(x in m.isr) for x in range(shape.n)]
    tid = (m.topic_id,) if shape.topic else ()
    return shape.req.req(m.to, m.leader, m.leader_epoch, *isr, m.zk_version, m.controller_epoch, m.max_broker_epoch, *tid)


def stop_value(shape: Shape, m: StopReplica) -> Term:
    tid = (m.topic_id, z3.BoolVal(m.delete)) if shape.topic else ()
    return shape.stop.stop(m.leader_epoch, m.controller_epoch, *tid)


def req_decode(shape: Shape, model: z3.ModelRef, m: Term) -> LeaderAndIsr:
    """A request constant's value in a z3 model, as the explicit model's request."""
    R = shape.req

    def iv(t: Term) -> int:
        return model.eval(t, model_completion=True).as_long()

    isr = tuple(x for x in range(shape.n) if z3.is_true(model.eval(getattr(R, f"isr{x}")(m), model_completion=True)))
    return LeaderAndIsr(iv(R.to(m)), 0, iv(R.leader(m)), iv(R.lepoch(m)), isr, iv(R.zkv(m)), iv(R.cepoch(m)), iv(R.mbe(m)),
                        iv(R.tid(m)) if shape.topic else 0)


def stop_decode(shape: Shape, model: z3.ModelRef, m: Term, to: int) -> StopReplica:
    """A StopReplica constant's value in a z3 model, as the explicit model's request to ``to``."""
    T = shape.stop

    def iv(t: Term) -> int:
        return model.eval(t, model_completion=True).as_long()

    if not shape.topic:
        return StopReplica(to, 0, iv(T.slepoch(m)), iv(T.scepoch(m)), delete=False)
    delete = z3.is_true(model.eval(T.sdel(m), model_completion=True))
    return StopReplica(to, 0, iv(T.slepoch(m)), iv(T.scepoch(m)), iv(T.stid(m)), delete=delete)


def initial_state(shape: Shape, cfg: Config) -> dict:
    return encode(shape, initial(cfg))


def fetch_message(s: State, f: int, ld: int) -> Fetch:
    """The explicit fetch message in slot (follower f, leader ld)."""
    return next(m for m in s.fetches if m.follower == f and m.leader == ld)


FETCH_KINDS = {"handle_fetch": FETCH_REQUEST, "receive_fetch": FETCH_RESPONSE}
ALTER_ACTIONS = ("alter_partition", "apply_isr")  # the actions that take an AlterPartition message
