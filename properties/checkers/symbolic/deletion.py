"""Topic deletion and re-creation (``model.actions.topics``) as cases of the relation, and
the topic's identity the other actions read: the znode's topic id and AR, each replica's
topic id (``for_incarnation``: a request of a newer incarnation finds the older one's
replica deleted first) and the fence on a stale one.  Only a shape with ``topic`` (a
configuration whose ``deletions`` knob is on) has these variables and cases: without it
the relation, and the proofs, are those of the topic's one incarnation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from model.state import DELETED, EPOCH_DURING_DELETE, IDLE, NO_LEADER, NONE
from properties.checkers.symbolic.cases import Disjunct, below
from properties.checkers.symbolic.state import RESP, pick, zmax

if TYPE_CHECKING:
    from properties.checkers.symbolic.cases import Params
    from properties.checkers.symbolic.state import Shape, Term


class TopicActions:
    """The deletion and creation cases and the incarnation helpers; the helpers they share
    with the others (``_acting``, ``_req``, ``_mbe``, ``_truncate_log`` ...) are
    ``encoding.Encoding``'s."""

    shape: Shape
    p: Params
    n: int
    r: int

    def topic_cases(self, s: dict, c: int) -> list[Disjunct]:
        """The cases with broker c as the acting controller: the deletion, and a creation of
        every non-empty AR with every member as leader (``creations_args``)."""
        if not self.shape.topic or self.p.deletions == 0:  # the AR of a reassignment alone
            return []
        out = [self.delete_topic(s, c)]
        for mask in range(1, 1 << self.n):
            ar = tuple(b for b in range(self.n) if mask >> b & 1)
            out += [self.create_topic(s, c, ar, leader) for leader in ar]
        return out

    def exists(self, s: dict) -> Term:
        """The topic exists: its znode has an AR (a deleted one has none)."""
        return z3.Or([s[("ar", x)] for x in range(self.n)])

    def is_current(self, s: dict, b: int) -> Term:
        """``is_current``: b's replica acts for the topic's current incarnation, so what it
        commits and acknowledges is history the properties hold durable."""
        if not self.shape.topic:
            return z3.BoolVal(True)
        return z3.And(self.exists(s), s[("rtid", b)] == s[("tid",)])

    def topic_deleted(self, t: dict, b: int, tid: Term, role: int = DELETED) -> None:
        """``topic_deleted``: the partition's directory goes -- log, HW and leader epoch with
        it -- and the replica remembers the incarnation it deleted (``for_incarnation``
        leaves it no role instead)."""
        self._truncate_log(t, b, z3.IntVal(0))
        t[("hw", b)] = z3.IntVal(0)
        self._set_replica(t, b, role, z3.IntVal(NO_LEADER), z3.IntVal(0), None, z3.IntVal(-1), IDLE, z3.IntVal(0))
        t[("rtid", b)] = tid

    def take_incarnation(self, t: dict, b: int, tid: Term) -> None:
        """``for_incarnation``: b acts on a request (or startup state) of incarnation ``tid``;
        a replica of an older one is deleted first, with no role.  Then it is of ``tid``."""
        if not self.shape.topic:
            return
        older = tid > t[("rtid", b)]
        fresh = dict(t)
        self.topic_deleted(fresh, b, tid, role=NONE)
        for k in self._replica_keys(b):
            t[k] = z3.If(older, fresh[k], t[k])
        t[("rtid", b)] = tid

    def _replica_keys(self, b: int) -> list[tuple]:
        keys = [(k, b) for k in ("role", "rl", "rlep", "rzkv", "leo", "hw", "fs", "es")]
        keys += [(k, b, x) for k in ("risr", "fleo") for x in range(self.n)]
        return keys + [(k, b, i) for k in ("val", "ep") for i in range(self.r)]

    def stale_topic(self, t: dict, m: Term) -> tuple[Term, Term]:
        """For request m of ``stale_reason``: whether its topic id is stale (older than its
        addressee's replica, or the one that replica deleted), and the leader epoch it is
        judged against (a newer incarnation's replica starts with none)."""
        R, n = self.shape.req, self.n
        to = R.to(m)
        rlep = pick([t[("rlep", b)] for b in range(n)], to, z3.IntVal(1 << 30))
        if not self.shape.topic:
            return z3.BoolVal(False), rlep
        rtid = pick([t[("rtid", b)] for b in range(n)], to, z3.IntVal(1 << 30))
        deleted = pick([t[("role", b)] == DELETED for b in range(n)], to, z3.BoolVal(False))
        stale = z3.Or(R.tid(m) < rtid, z3.And(R.tid(m) == rtid, deleted))
        return stale, z3.If(R.tid(m) > rtid, 0, rlep)

    def delete_topic(self, s: dict, c: int) -> Disjunct:
        """``delete_topic``: StopReplica(delete) of the incarnation to the live replicas of
        the AR, the znode without AR, leader and ISR (its version moved on), and the
        incarnation's records retired -- its commits, acknowledgements, leaders and zombie
        appends forgotten (``partition_gone``)."""
        n, r = self.n, self.r
        g = z3.And(self._acting(s, c), below(s[("dels",)], self.p.deletions), self.exists(s),
                   z3.Not(self.moving(s)))  # not while a reassignment is in progress
        t = dict(s)
        stop = self.shape.stop.stop(EPOCH_DURING_DELETE, s[("cep",)], s[("tid",)], z3.BoolVal(True))
        for b in range(n):
            t[("stops", b)] = z3.If(z3.And(s[("ar", b)], s[("live", b)]), z3.Store(s[("stops", b)], stop, True),
                                    s[("stops", b)])
            t[("ar", b)] = z3.BoolVal(False)
            t[("isr", b)] = z3.BoolVal(False)
            t[("led", b)] = z3.K(z3.IntSort(), z3.BoolVal(False))
        t[("ldr",)], t[("zkv",)], t[("ledmax",)] = z3.IntVal(NO_LEADER), s[("zkv",)] + 1, z3.IntVal(0)
        for v in range(1, r + 1):
            in_logs = [z3.And(i < s[("leo", b)], s[("val", b, i)] == v) for b in range(n) for i in range(r)]
            in_flight = [z3.And(s[("fk", f, ld)] == RESP, i < s[("frl", f, ld)], s[("frv", f, ld, i)] == v)
                         for f in range(n) for ld in range(n) if f != ld for i in range(r)]
            t[("ret", v)] = z3.Or(s[("ret", v)], *in_logs, *in_flight)
            t[("acked", v)], t[("zomb", v)], t[("zcmt", v)] = z3.BoolVal(False), z3.BoolVal(False), z3.BoolVal(False)
            for o in range(r):
                t[("cmt", o, v)] = z3.IntVal(0)
        t[("dels",)] = s[("dels",)] + 1
        return Disjunct("delete_topic", (c, 0), g, t)

    def removal_pending(self, s: dict) -> Term:
        """``removal_pending``: a deletion's StopReplica is still in flight to a live replica."""
        T = self.shape.stop
        out = []
        for b in range(self.n):
            x = z3.Const(f"pending_deletion{b}", T)
            out.append(z3.Exists([x], z3.And(s[("stops", b)][x], T.slepoch(x) == EPOCH_DURING_DELETE)))
        return z3.Or(out)

    def create_topic(self, s: dict, c: int, ar: tuple[int, ...], leader: int) -> Disjunct:
        """``create_topic``: once the deletion is complete, the topic again under its name with
        AR ``ar``: the live members not shutting down are its ISR, ``leader`` one of them; leader
        epoch 1, a new topic id, and LeaderAndISR to every member of the AR."""
        n = self.n
        isr = [z3.BoolVal(False) if x not in ar else z3.And(s[("live", x)], z3.Not(s[("sd", c, x)])) for x in range(n)]
        g = z3.And(self._acting(s, c), z3.Not(self.exists(s)), z3.Not(self.removal_pending(s)), isr[leader])
        t = dict(s)
        zkv, tid, mbe = s[("zkv",)] + 1, s[("tid",)] + 1, self._mbe(s)
        t[("ldr",)], t[("lep",)], t[("zkv",)], t[("tid",)] = z3.IntVal(leader), z3.IntVal(1), zkv, tid
        lai = s[("lai",)]
        for x in range(n):
            t[("isr", x)], t[("ar", x)] = isr[x], z3.BoolVal(x in ar)
            if x in ar:
                lai = z3.Store(lai, self._req(x, leader, 1, isr, zkv, s[("cep",)], mbe, tid), True)
        t[("lai",)] = lai
        t[("led", leader)] = z3.Store(s[("led", leader)], 1, True)
        t[("ledmax",)] = zmax(s[("ledmax",)], z3.IntVal(1))
        return Disjunct("create_topic", (c, 0, ar, leader), g, t)
