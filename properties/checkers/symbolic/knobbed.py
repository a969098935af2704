"""The actions a configuration turns on by a knob -- preferred-replica elections, GC pauses,
session expiries, controlled shutdowns -- as cases of the relation (``encoding.Encoding``
is made of these and the actions every configuration takes).  Each is left out of the
relation when its knob is 0 (``Params``): a configuration that never takes an action keeps
the relation, and the proofs, it had without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from model.state import EPOCH_DURING_DELETE, IDLE, NO_LEADER, NONE, PAUSED, UP
from properties.checkers.symbolic.cases import Disjunct, below, ite
from properties.checkers.symbolic.state import count, pick, zmax

if TYPE_CHECKING:
    from properties.checkers.symbolic.cases import Params
    from properties.checkers.symbolic.state import Shape


class KnobbedActions:
    """The knobbed actions' cases; the helpers they share with the others (``_acting``,
    ``_send``, ``_set_replica`` ...) are ``encoding.Encoding``'s."""

    shape: Shape
    p: Params
    n: int

    def knobbed(self, s: dict, b: int) -> list[Disjunct]:
        """The knobbed cases with broker b as their first argument, each only when its knob is on."""
        n, p = self.n, self.p
        out: list[Disjunct] = []
        if p.preferred_elections != 0:  # with the topic's identity, AR's first is any broker
            out += [self.preferred_election(s, b, x) for x in range(n)] if self.shape.topic else [self.preferred_election(s, b)]
        if p.max_pauses != 0:
            out += [self.broker_pause(s, b), self.broker_resume(s, b)]
        if p.max_expiries != 0:
            out.append(self.broker_expire(s, b))
        if p.sessions_end_alone:
            out.append(self.broker_reregister(s, b))
        if p.max_shutdowns != 0:
            out += [self.controlled_shutdown(s, b, x, ld, write) for x in range(n) for ld in [NO_LEADER, *range(n)]
                    for write in (False, True)]
            out.append(self.broker_stop(s, b))
        if p.max_shutdowns != 0 or self.shape.topic:  # a controlled shutdown's or a deletion's
            out.append(self.stop_replica(s, b))
        return out

    def preferred_election(self, s: dict, c: int, x: int = 0) -> Disjunct:
        """``preferred_election``: the acting controller moves the leadership back to the
        preferred replica x -- the first (lowest) of the AR: broker 0 where the AR is every
        broker -- when it is live, in the ISR, not shutting down and not leading already
        (otherwise a self-loop, which no search takes).  The ISR stays; the write and its
        LeaderAndISR are ``elect_leader``'s."""
        g = z3.And(self._acting(s, c), below(s[("prefs",)], self.p.preferred_elections),
                   s[("isr", x)], s[("live", x)], z3.Not(s[("sd", c, x)]), s[("ldr",)] != x)
        if self.shape.topic:
            g = z3.And(g, s[("ar", x)], *[z3.Not(s[("ar", y)]) for y in range(x)])
        if self.p.max_epoch is not None:
            g = z3.And(g, s[("lep",)] + 1 <= self.p.max_epoch)
        t = dict(s)
        lep, zkv = s[("lep",)] + 1, s[("zkv",)] + 1
        t[("ldr",)], t[("lep",)], t[("zkv",)] = z3.IntVal(x), lep, zkv
        self._send(t, z3.IntVal(x), lep, [s[("isr", y)] for y in range(self.n)], zkv, s[("cep",)], self._mbe(s),
                   [s[("sd", c, y)] for y in range(self.n)])
        t[("prefs",)] = s[("prefs",)] + 1
        return Disjunct("preferred_election", (c, 0), g, t)

    # ---- sessions that end while the process runs on (seed 003)
    def _session_expires(self, s: dict, t: dict, b: int) -> None:
        """``_session_expires``: b's registration (and /controller, if it held it) is gone,
        and the controller no longer owes it a startup nor counts it as shutting down; its
        process keeps its state."""
        t[("live", b)] = z3.BoolVal(False)
        t[("ctl",)] = z3.If(s[("ctl",)] == b, NO_LEADER, s[("ctl",)])
        for x in range(self.n):  # _unannounce, _no_longer_shutting_down
            t[("nb", x, b)] = z3.BoolVal(False)
            t[("sd", x, b)] = z3.BoolVal(False)

    def broker_pause(self, s: dict, b: int) -> Disjunct:
        g = z3.And(s[("st", b)] == UP, below(s[("pauses",)], self.p.max_pauses))
        t = dict(s)
        t[("st", b)] = z3.IntVal(PAUSED)
        self._session_expires(s, t, b)
        t[("pauses",)] = s[("pauses",)] + 1
        return Disjunct("broker_pause", (b,), g, t)

    def broker_resume(self, s: dict, b: int) -> Disjunct:
        t = dict(s)
        t[("st", b)] = z3.IntVal(UP)
        return Disjunct("broker_resume", (b,), s[("st", b)] == PAUSED, t)

    def broker_expire(self, s: dict, b: int) -> Disjunct:
        g = z3.And(s[("st", b)] == UP, s[("live", b)], below(s[("expiries",)], self.p.max_expiries))
        t = dict(s)
        self._session_expires(s, t, b)
        t[("expiries",)] = s[("expiries",)] + 1
        return Disjunct("broker_expire", (b,), g, t)

    def broker_reregister(self, s: dict, b: int) -> Disjunct:
        """A new session re-creates /brokers/ids/b with a new broker epoch, and the
        controller's watch makes onBrokerStartup(b) due."""
        g = z3.And(s[("st", b)] == UP, z3.Not(s[("live", b)]))
        t = dict(s)
        zxid = s[("zxid",)] + 1
        t[("zxid",)], t[("live", b)], t[("bep", b)], t[("bbep", b)] = zxid, z3.BoolVal(True), zxid, zxid
        for c in range(self.n):  # _announce
            t[("nb", c, b)] = z3.Or(s[("nb", c, b)], s[("ctl",)] == c)
        return Disjunct("broker_reregister", (b,), g, t)


    # ---- controlled shutdown (Kafka 2.7's, beside seed 000 A)
    def controlled_shutdown(self, s: dict, c: int, b: int, leader: int, write: bool) -> Disjunct:
        """``controlled_shutdown(c, 0, b, leader)``: the acting controller counts b as shutting
        down and sends it StopReplica without delete.  With ``write`` (b is in the ISR) it
        first takes b out of the ISR -- and, if b led or the leader is shutting down too,
        elects ``leader``, a live ISR member not shutting down (else ``leader`` is the leader
        as it is, and the ISR left must not be empty): the write and LeaderAndISR of
        ``write_and_send``.  Without it (b a follower outside the ISR) nothing is written."""
        n = self.n
        isr, ldr = [s[("isr", x)] for x in range(n)], s[("ldr",)]
        stopping = [z3.BoolVal(True) if x == b else s[("sd", c, x)] for x in range(n)]
        g = z3.And(self._acting(s, c), s[("st", b)] == UP, s[("live", b)], below(s[("shutdowns",)], self.p.max_shutdowns))
        t = dict(s)
        t[("sd", c, b)] = z3.BoolVal(True)
        stop = self._shutdown_stop(s)
        if not write:  # a follower outside the ISR (of the AR, with the topic's identity)
            g = z3.And(g, z3.Not(isr[b]), ldr != b, ldr == leader, *([s[("ar", b)]] if self.shape.topic else []))
            t[("stops", b)] = z3.Store(s[("stops", b)], stop(s[("lep",)], s[("cep",)]), True)
            return Disjunct("controlled_shutdown", (c, 0, b, leader), g, t)
        left = [z3.BoolVal(False) if x == b else isr[x] for x in range(n)]
        moves = z3.And(ldr != NO_LEADER, pick(stopping, ldr, z3.BoolVal(False)))
        if leader == NO_LEADER:
            elected = z3.BoolVal(False)
        else:
            elected = z3.And(left[leader], s[("live", leader)], z3.Not(stopping[leader]))
        g = z3.And(g, isr[b], z3.If(moves, elected, z3.And(ldr == leader, z3.Or(left))))
        if self.p.max_epoch is not None:
            g = z3.And(g, s[("lep",)] + 1 <= self.p.max_epoch)
        lep, zkv = s[("lep",)] + 1, s[("zkv",)] + 1
        t[("ldr",)], t[("lep",)], t[("zkv",)] = z3.IntVal(leader), lep, zkv
        for x in range(n):
            t[("isr", x)] = left[x]
        self._send(t, z3.IntVal(leader), lep, left, zkv, s[("cep",)], self._mbe(s), stopping)
        t[("stops", b)] = z3.Store(s[("stops", b)], stop(lep, s[("cep",)]), True)
        return Disjunct("controlled_shutdown", (c, 0, b, leader), g, t)

    def broker_stop(self, s: dict, b: int) -> Disjunct:
        """A clean stop after the controlled shutdown: a crash's ``process_ends``, once b is
        out of every ISR it can leave."""
        isr = [s[("isr", x)] for x in range(self.n)]
        g = z3.And(s[("st", b)] == UP, below(s[("shutdowns",)], self.p.max_shutdowns),
                   z3.Not(z3.And(isr[b], count(isr) > 1)))
        t = dict(s)
        self._process_ends(s, t, b)
        t[("shutdowns",)] = s[("shutdowns",)] + 1
        return Disjunct("broker_stop", (b,), g, t)

    def stop_replica(self, s: dict, b: int) -> Disjunct:
        """``stop_replica`` of a controlled shutdown's StopReplica (without delete) to b: it is
        consumed; unless from an older controller epoch or older than the leader epoch b has
        taken since, b's replica stops -- no role, no fetching, its log, HW and leader epoch
        kept -- and a newer controller epoch makes b stop acting as controller.  A topic
        deletion's (leader epoch ``EPOCH_DURING_DELETE``) is refused only by an older
        controller epoch or a replica of a newer incarnation, and deletes the replica."""
        T = self.shape.stop
        m = self._fresh_msg(T)
        R, x = self.shape.req, z3.Const(f"earlier_lai{b}", self.shape.req)
        deletion = T.slepoch(m) == EPOCH_DURING_DELETE
        # commands.waits_in_channel: behind a LeaderAndISR the same controller sent b earlier
        # (of a lower leader epoch -- or of an older incarnation) that b would still take
        before = R.lepoch(x) < T.slepoch(m)
        if self.shape.topic:
            before = z3.Or(R.tid(x) < T.stid(m), z3.And(R.tid(x) == T.stid(m), z3.Not(deletion), before))
        earlier = z3.Exists([x], z3.And(s[("lai",)][x], R.to(x) == b, R.cepoch(x) == T.scepoch(m),
                                         before, z3.Not(self._stale(s, x))))
        g = z3.And(s[("stops", b)][m], s[("st", b)] == UP, z3.Not(earlier))
        consumed = dict(s)
        consumed[("stops", b)] = z3.Store(s[("stops", b)], m, False)
        cep, bcep = T.scepoch(m), s[("bcep", b)]
        refused = T.slepoch(m) < s[("rlep", b)]
        if self.shape.topic:
            refused = z3.If(deletion, T.stid(m) < s[("rtid", b)], refused)
        if self.p.fence_controller_epoch:
            refused = z3.Or(cep < bcep, refused)
        t = dict(consumed)
        self._stops_controlling(t, b, cep > bcep)
        t[("bcep", b)] = z3.If(cep > bcep, cep, bcep)
        self._drop_responses_to(t, b)
        stopped = dict(t)
        self._set_replica(stopped, b, NONE, z3.IntVal(NO_LEADER), s[("rlep", b)], None, z3.IntVal(-1), IDLE, z3.IntVal(0))
        if self.shape.topic:
            deleted = dict(stopped)  # a reassignment's (delete, of a leader epoch): the log and HW go
            self._truncate_log(deleted, b, z3.IntVal(0))
            deleted[("hw", b)] = z3.IntVal(0)
            self.topic_deleted(t, b, zmax(s[("rtid", b)], T.stid(m)))
            t = {k: ite(T.sdel(m), ite(deletion, t[k], deleted[k]), stopped[k]) for k in s}
        else:
            t = stopped
        post = {k: ite(refused, consumed[k], t[k]) for k in s}
        return Disjunct("stop_replica", (b,), g, post, m)
