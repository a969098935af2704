"""The transition relation: one function per action, each computing the successor's
variables as z3 terms of the predecessor's (written by hand from ``model.actions``)."""

from __future__ import annotations

from collections.abc import Callable

import z3

from model.state import (
    DELETED,
    DOWN,
    EPOCH_DURING_DELETE,
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
)
from properties.checkers.symbolic.alter import AlterPartitionActions
from properties.checkers.symbolic.cases import Disjunct, Params
from properties.checkers.symbolic.cases import ite as _ite
from properties.checkers.symbolic.deletion import TopicActions
from properties.checkers.symbolic.knobbed import KnobbedActions
from properties.checkers.symbolic.reassign import ReassignActions
from properties.checkers.symbolic.state import (
    EMPTY,
    INF,
    REQ,
    RESP,
    Shape,
    Term,
    count,
    eq_states,
    pick,
    zmax,
    zmin,
)

__all__ = ["Disjunct", "Encoding", "Params"]


class Encoding(KnobbedActions, AlterPartitionActions, TopicActions, ReassignActions):
    """The transition relation of one shape and parameter set (the actions a configuration
    turns on by a knob are ``KnobbedActions``', ``AlterPartitionActions``',
    ``TopicActions``' and ``ReassignActions``')."""

    def __init__(self, shape: Shape, params: Params) -> None:
        self.shape, self.p = shape, params
        self.n, self.r = shape.n, shape.r
        self._msgs = 0

    # ---- helpers over a state dict
    def _isr_of(self, s: dict, b: int) -> list[Term]:
        return [s[("risr", b, x)] for x in range(self.n)]

    @property
    def _slot_fields(self) -> tuple[str, ...]:
        return ("fk", "fo", "fe", "frl", "fhw", "ferr", "ftid") if self.shape.topic else ("fk", "fo", "fe", "frl", "fhw", "ferr")

    def _empty_slot(self, t: dict, f: int, ld: int) -> None:
        for k in self._slot_fields:
            t[(k, f, ld)] = z3.IntVal(0)
        for i in range(self.r):
            t[("frv", f, ld, i)] = z3.IntVal(0)
            t[("fre", f, ld, i)] = z3.IntVal(0)

    def _drop_slot_if(self, t: dict, f: int, ld: int, cond: Term) -> None:
        for k in self._slot_fields:
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

    def _req(self, to: Term, leader: Term, lep: Term, isr: list[Term], zkv: Term, cep: Term, mbe: Term,
             tid: Term | None = None) -> Term:
        """A LeaderAndISR request; with the topic's identity, of incarnation ``tid``."""
        return self.shape.req.req(to, leader, lep, *isr, zkv, cep, mbe, *([tid] if self.shape.topic else []))

    def _shutdown_stop(self, s: dict) -> Callable[[Term, Term], Term]:
        """A controlled shutdown's StopReplica (without delete) of (leader epoch, controller
        epoch) -- with the topic's identity, of the current incarnation."""
        if not self.shape.topic:
            return self.shape.stop.stop
        return lambda lep, cep: self.shape.stop.stop(lep, cep, s[("tid",)], z3.BoolVal(False))

    def _send(self, t: dict, leader: Term, lep: Term, isr: list[Term], zkv: Term, cep: Term, mbe: Term,
              stopping: list[Term] | None = None) -> None:
        """LeaderAndISR to every assigned broker (every broker, without the topic's identity)
        -- but, as ``write_and_send``, not to one ``stopping`` (shutting down) unless it is the leader."""
        lai = t[("lai",)]
        for to in range(self.n):
            sent = z3.Store(lai, self._req(to, leader, lep, isr, zkv, cep, mbe, t.get(("tid",))), True)
            skip = [z3.And(stopping[to], leader != to)] if stopping is not None else []
            if self.shape.topic:
                skip.append(z3.Not(t[("ar", to)]))
            lai = z3.If(z3.Or(skip), lai, sent) if skip else sent
        t[("lai",)] = lai

    def advance_hw(self, t: dict, b: int) -> None:
        """Seed 000 G: hw = min LEO over the ISR -- the maximal ISR, with a proposed ISR change
        unanswered (AlterPartition) -- never backwards; commit and acknowledge."""
        n, r = self.n, self.r
        leo = t[("leo", b)]
        new = z3.IntVal(INF)
        for x in range(n):
            lx = leo if x == b else t[("fleo", b, x)]
            member = t[("risr", b, x)]
            if self.p.alter_partition != 0:
                member = z3.Or(member, self.proposed(t, b, x))
            new = z3.If(z3.And(member, lx < new), lx, new)
        hw = t[("hw", b)]
        moves = new > hw
        counts = z3.And(moves, self.is_current(t, b))  # a deleted incarnation's leader: nothing counts
        enough = count(self._isr_of(t, b)) >= self.p.min_insync
        vals, eps, _ = self._log(t, b)
        superseded = t[("ledmax",)] > t[("rlep", b)]
        for v in range(1, r + 1):
            hit_ack, hit = [], []
            for o in range(r):
                newly = z3.And(counts, hw <= o, o < new, vals[o] == v)
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
        bbep = pick([t[("bbep", b)] for b in range(self.n)], to, z3.IntVal(INF))
        old_ctl = R.cepoch(m) < bcep if self.p.fence_controller_epoch else z3.BoolVal(False)
        old_incarnation = R.mbe(m) < bbep if self.p.fence_broker_epoch else z3.BoolVal(False)
        old_topic, rlep = self.stale_topic(t, m)
        return z3.Or(old_ctl, old_incarnation, old_topic, R.lepoch(m) <= rlep)

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
        self._process_ends(s, t, b)
        t[("crashes",)] = s[("crashes",)] + 1
        return Disjunct("broker_crash", (b,), g, t)

    def _process_ends(self, s: dict, t: dict, b: int) -> None:
        """``process_ends``, a crash's or a clean stop's: memory gone, disk kept, the session
        ended, and nothing more reaches b."""
        self._set_replica(t, b, NONE, z3.IntVal(NO_LEADER), s[("rlep", b)], None, z3.IntVal(-1), IDLE, z3.IntVal(0))
        if self.shape.topic:  # a deleted replica stays deleted
            t[("role", b)] = z3.If(s[("role", b)] == DELETED, DELETED, NONE)
        t[("st", b)] = z3.IntVal(DOWN)
        self._stops_controlling(t, b, z3.BoolVal(True))
        self._session_expires(s, t, b)
        for x in range(self.n):  # messages on their way *to* b are lost; those it sent may arrive
            if x != b:
                self._drop_slot_if(t, b, x, t[("fk", b, x)] == RESP)
                self._drop_slot_if(t, x, b, t[("fk", x, b)] == REQ)
        if self.p.max_shutdowns != 0 or self.shape.topic:  # _lost_with: a StopReplica to b
            t[("stops", b)] = z3.K(self.shape.stop, z3.BoolVal(False))

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
        gone, unassigned = dict(t), dict(t)  # E 4: its topic deleted while it was down, or not assigned to it
        if self.shape.topic:
            self.topic_deleted(gone, b, s[("tid",)])
            self._truncate_log(unassigned, b, z3.IntVal(0))
            unassigned[("hw", b)], unassigned[("role", b)] = z3.IntVal(0), z3.IntVal(NONE)
        self.take_incarnation(t, b, s.get(("tid",)))
        epoch = zmax(t[("rlep", b)], s[("lep",)])
        ldr = s[("ldr",)]
        # three outcomes, merged with If over every replica variable
        lead = dict(t)
        self._set_replica(lead, b, LEADER, z3.IntVal(b), epoch, [s[("isr", x)] for x in range(self.n)],
                          s[("zkv",)], IDLE, t[("leo", b)])
        self.advance_hw(lead, b)
        orphan = dict(t)
        orphan[("role", b)], orphan[("rl", b)], orphan[("rlep", b)] = z3.IntVal(FOLLOWER), z3.IntVal(NO_LEADER), epoch
        follow = dict(t)
        self._follow(follow, b, ldr, epoch)
        for k in t:
            t[k] = _ite(ldr == b, lead[k], _ite(ldr == NO_LEADER, orphan[k], follow[k]))
        if self.shape.topic:
            for k in t:
                t[k] = _ite(z3.Not(self.exists(s)), gone[k], _ite(z3.Not(s[("ar", b)]), unassigned[k], t[k]))
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
        req = self._req(b, s[("ldr",)], s[("lep",)], [s[("isr", x)] for x in range(self.n)],
                        s[("zkv",)], s[("cep",)], self._mbe(s), s.get(("tid",)))
        g = z3.And(self._acting(s, c), s[("nb", c, b)])
        t = dict(s)
        t[("nb", c, b)] = z3.BoolVal(False)
        sent = z3.Store(s[("lai",)], req, True)
        t[("lai",)] = z3.If(s[("ar", b)], sent, s[("lai",)]) if self.shape.topic else sent
        return Disjunct("on_broker_startup", (c, b), g, t)

    def _stops_controlling(self, t: dict, b: int, when: Term) -> None:
        """``_stops_controlling``: when ``when`` holds, b no longer acts as controller and
        forgets the startups it owed and the brokers shutting down."""
        for k in [("isc", b)] + [(k, b, x) for k in ("nb", "sd") for x in range(self.n)]:
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
        """``elect_leader`` with ``election_outcomes`` for leader L (or -1): a live leader
        stays with the live ISR; else a live ISR member leads with the live ISR; else, with
        unclean election, a live replica (AR is every broker) leads alone in the ISR; else
        the partition is left leaderless with its ISR."""
        n = self.n
        acting = z3.And(s[("st", c)] == UP, s[("isc", c)], s[("ctl",)] == c, s[("bcep", c)] == s[("cep",)])
        g = acting
        if self.p.max_epoch is not None:
            g = z3.And(g, s[("lep",)] + 1 <= self.p.max_epoch)
        ldr, isr, live = s[("ldr",)], [s[("isr", x)] for x in range(n)], [s[("live", x)] for x in range(n)]
        live_isr = [z3.And(isr[x], live[x]) for x in range(n)]
        stopping = [s[("sd", c, x)] for x in range(n)]  # c acts: it is ZooKeeper's controller
        electable = [z3.And(live_isr[x], z3.Not(stopping[x])) for x in range(n)]
        clean = z3.Or(electable)
        # unclean.leader.election.enable: with no ISR member to elect, a live replica not
        # shutting down (AR is every broker) leads alone in the ISR
        assigned = [s[("ar", x)] if self.shape.topic else z3.BoolVal(True) for x in range(n)]
        unclean = [z3.And(live[x], z3.Not(stopping[x]), assigned[x]) for x in range(n)] if self.p.unclean else []
        if self.shape.topic:  # a deleted topic's partition: nothing to elect
            g = z3.And(g, self.exists(s))
        leader_live = z3.And(ldr != NO_LEADER, pick(live, ldr, z3.BoolVal(False)))
        some_dead = z3.Or([z3.And(isr[x], z3.Not(live[x])) for x in range(n)])
        if leader == NO_LEADER:
            case = z3.And(z3.Not(leader_live), z3.Not(z3.Or(electable + unclean)), ldr != NO_LEADER)
            new_isr = isr
        else:
            keep = z3.And(leader_live, some_dead, ldr == leader)
            move = z3.And(z3.Not(leader_live), electable[leader])
            case = z3.Or(keep, move)
            elected = electable
            if unclean:
                case = z3.Or(case, z3.And(z3.Not(leader_live), z3.Not(clean), unclean[leader]))
                elected = [z3.If(clean, electable[x], z3.BoolVal(x == leader)) for x in range(n)]
            new_isr = [z3.If(leader_live, live_isr[x], elected[x]) for x in range(n)]
        t = dict(s)
        lep, zkv = s[("lep",)] + 1, s[("zkv",)] + 1
        t[("ldr",)], t[("lep",)], t[("zkv",)] = z3.IntVal(leader), lep, zkv
        for x in range(n):
            t[("isr", x)] = new_isr[x]
        self._send(t, z3.IntVal(leader), lep, new_isr, zkv, s[("cep",)], self._mbe(s), stopping)
        return Disjunct("elect_leader", (c, 0, leader), z3.And(g, case), t)

    # ---- LeaderAndISR
    def _fresh_msg(self, sort: z3.SortRef | None = None) -> Term:
        """A request the case takes: a LeaderAndISR (or a StopReplica, ``sort``)."""
        self._msgs += 1
        return z3.Const(f"msg{self._msgs}", self.shape.req if sort is None else sort)

    def _accept(self, s: dict, t: dict, b: int, m: Term) -> None:
        R = self.shape.req
        cep, bcep = R.cepoch(m), s[("bcep", b)]
        older = z3.Or(cep < bcep, R.mbe(m) < s[("bbep", b)])
        t[("stale",)] = z3.If(older, s[("stale",)] + 1, s[("stale",)])
        self._stops_controlling(t, b, cep > bcep)
        t[("bcep", b)] = z3.If(cep > bcep, cep, bcep)

    def _request_guard(self, s: dict, b: int, m: Term) -> Term:
        R = self.shape.req
        guard = z3.And(s[("lai",)][m], R.to(m) == b, s[("st", b)] == UP, z3.Not(self._stale(s, m)))
        if ("stops", b) not in s:
            return guard
        # commands.waits_in_channel: behind a StopReplica the same controller sent b earlier
        # (a shutdown's: of a lower leader epoch -- one of the same epoch is not earlier)
        T, x = self.shape.stop, z3.Const(f"earlier{b}", self.shape.stop)
        before = T.slepoch(x) < R.lepoch(m)
        if self.shape.topic:  # commands.sent_earlier: an older incarnation's, or of its epochs
            before = z3.Or(T.stid(x) < R.tid(m), z3.And(
                T.stid(x) == R.tid(m), T.slepoch(x) != EPOCH_DURING_DELETE,
                z3.Or(before, z3.And(T.slepoch(x) == R.lepoch(m), T.sdel(x)))))
        earlier = z3.Exists([x], z3.And(s[("stops", b)][x], T.scepoch(x) == R.cepoch(m), before))
        return z3.And(guard, z3.Not(earlier))

    def become_leader(self, s: dict, b: int) -> Disjunct:
        R = self.shape.req
        m = self._fresh_msg()
        g = z3.And(self._request_guard(s, b, m), R.leader(m) == b)
        t = dict(s)
        self._accept(s, t, b, m)
        self._drop_responses_to(t, b)
        isr = [getattr(R, f"isr{x}")(m) for x in range(self.n)]
        self.take_incarnation(t, b, R.tid(m) if self.shape.topic else None)
        self._set_replica(t, b, LEADER, z3.IntVal(b), R.lepoch(m), isr, R.zkv(m), IDLE, t[("leo", b)])
        current = self.is_current(t, b)  # a deleted incarnation's leaders are no history of the current one
        t[("led", b)] = _ite(current, z3.Store(s[("led", b)], R.lepoch(m), True), s[("led", b)])
        t[("ledmax",)] = _ite(current, zmax(s[("ledmax",)], R.lepoch(m)), s[("ledmax",)])
        self.advance_hw(t, b)
        return Disjunct("become_leader", (b,), g, t, m)

    def become_follower(self, s: dict, b: int) -> Disjunct:
        R = self.shape.req
        m = self._fresh_msg()
        g = z3.And(self._request_guard(s, b, m), R.leader(m) != b)
        t = dict(s)
        self._accept(s, t, b, m)
        self.take_incarnation(t, b, R.tid(m) if self.shape.topic else None)
        base = dict(t)
        orphan = dict(base)
        self._set_replica(orphan, b, FOLLOWER, z3.IntVal(NO_LEADER), R.lepoch(m), None, z3.IntVal(-1), IDLE, z3.IntVal(0))
        self._drop_responses_to(orphan, b)
        already = z3.And(base[("role", b)] == FOLLOWER, base[("rl", b)] == R.leader(m))
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
        if self.shape.topic:
            t[("ftid", f, ld)] = s[("rtid", f)]
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
        if self.shape.topic:  # another incarnation's request is refused; the answer carries the leader's
            fenced = z3.Or(fenced, s[("ftid", f, ld)] != s[("rtid", ld)])
            oor[("ftid", f, ld)] = ok[("ftid", f, ld)] = s[("rtid", ld)]
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
        if self.shape.topic:
            unexpected = z3.Or(unexpected, s[("ftid", f, ld)] != s[("rtid", f)])
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
        """b leads and writes its ISR itself: with AlterPartition only the controller writes."""
        if self.p.alter_partition != 0:
            return z3.BoolVal(False)
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
        if self.shape.topic:  # an assigned replica
            g = z3.And(g, s[("ar", f)])
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
            out += self.knobbed(s, b)
            out += self.alter_cases(s, b)
            out += self.topic_cases(s, b)
            out += self.reassign_cases(s, b)
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
        keys = ("bcep", "bbep", "rlep", "rtid", "role") if self.shape.topic else ("bcep", "bbep", "rlep")
        return [("lai",)] + [(k, b) for k in keys for b in range(self.n)]

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


