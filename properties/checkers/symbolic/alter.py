"""AlterPartition (``model.actions.controller_isr``) as cases of the relation: the leader
proposes an ISR change, the acting controller validates and writes it or refuses it, and
the leader takes the answer.  The messages in flight are one unbounded z3 set (a leader
may have answers of its older epochs still on their way); the leader's HW waits for the
union of its ISR and the ISR it proposed while the proposal is unanswered
(``maximal_isr``).  Only a configuration whose ``alter_partition`` knob is on has these
cases -- and then the leader's own ISR writes are off (``Encoding.shrink_isr`` ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from model.state import (
    ALTER_REQUEST,
    ALTER_RESPONSE,
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    LEADER,
    OK,
    STALE_BROKER_EPOCH,
    UNKNOWN,
    UP,
)
from properties.checkers.symbolic.cases import Disjunct, ite
from properties.checkers.symbolic.state import pick

if TYPE_CHECKING:
    from properties.checkers.symbolic.cases import Params
    from properties.checkers.symbolic.state import Shape, Term


class AlterPartitionActions:
    """The AlterPartition cases; the helpers they share (``_acting``, ``_fresh_msg``,
    ``advance_hw``) are ``encoding.Encoding``'s."""

    shape: Shape
    p: Params
    n: int

    def alter_cases(self, s: dict, b: int) -> list[Disjunct]:
        """The cases with broker b as leader (``propose_isr`` of each follower, ``apply_isr``)
        or as the acting controller (``alter_partition``), when the knob is on."""
        if self.p.alter_partition == 0:
            return []
        out = [self.propose_isr(s, b, f) for f in range(self.n) if f != b]
        return [*out, self.alter_partition(s, b), self.apply_isr(s, b)]

    def _proposal(self, t: dict, b: int, m: Term) -> Term:
        """m is a message of leader b's current leader epoch in flight (``pending``'s)."""
        A = self.shape.alt
        return z3.And(t[("alt",)][m], A.aleader(m) == b, A.alepoch(m) == t[("rlep", b)])

    def pending(self, t: dict, b: int) -> Term:
        """``controller_isr.pending``: leader b's proposal of its epoch is unanswered (the
        request, or the answer it has not read)."""
        m = z3.Const(f"pending{b}", self.shape.alt)
        return z3.Exists([m], self._proposal(t, b, m))

    def proposed(self, t: dict, b: int, x: int) -> Term:
        """x is in the ISR leader b proposed and has not had answered: with b's own ISR, what
        its HW waits for (``replication.maximal_isr``)."""
        m = z3.Const(f"proposed{b}_{x}", self.shape.alt)
        return z3.Exists([m], z3.And(self._proposal(t, b, m), getattr(self.shape.alt, f"aisr{x}")(m)))

    def propose_isr(self, s: dict, b: int, f: int) -> Disjunct:
        """Leader b proposes its ISR with lagging follower f taken out (``out_of_sync``), or
        caught-up f added (``caught_up``), with its leader epoch, the version it knows and
        its broker epoch."""
        fl, leader = s[("fleo", b, f)], z3.And(s[("st", b)] == UP, s[("role", b)] == LEADER)
        lagging = z3.And(s[("risr", b, f)], fl < s[("leo", b)])
        caught_up = z3.And(z3.Not(s[("risr", b, f)]), fl != UNKNOWN, fl >= s[("hw", b)])
        if self.p.fenced_fetch:
            caught_up = z3.And(caught_up, fl >= s[("es", b)])
        g = z3.And(leader, z3.Not(self.pending(s, b)), z3.Or(lagging, caught_up))
        isr = [z3.Not(s[("risr", b, f)]) if x == f else s[("risr", b, x)] for x in range(self.n)]
        t = dict(s)
        req = self.shape.alt.alter(ALTER_REQUEST, b, s[("rlep", b)], *isr, s[("rzkv", b)], s[("bbep", b)], OK)
        t[("alt",)] = z3.Store(s[("alt",)], req, True)
        return Disjunct("propose_isr", (b, 0, f), g, t)

    def _refusal(self, s: dict, c: int, m: Term) -> Term:
        """``controller_isr.refusal`` of proposal m by acting controller c, in its order (OK:
        none); a proposal of the ISR ZooKeeper holds is answered OK with no write."""
        A, n = self.shape.alt, self.n
        live = [s[("live", x)] for x in range(n)]
        leader = A.aleader(m)
        stale = z3.Or(z3.Not(pick(live, leader, z3.BoolVal(False))),
                      pick([s[("bep", x)] for x in range(n)], leader, z3.IntVal(-1)) != A.abep(m))
        isr = [getattr(A, f"aisr{x}")(m) for x in range(n)]
        same = z3.And([isr[x] == s[("isr", x)] for x in range(n)])
        ineligible = z3.Or([z3.And(isr[x], z3.Or(z3.Not(live[x]), s[("sd", c, x)])) for x in range(n)])
        return z3.If(stale, STALE_BROKER_EPOCH, z3.If(A.alepoch(m) != s[("lep",)], FENCED_LEADER_EPOCH,
                     z3.If(same, OK, z3.If(A.azkv(m) != s[("zkv",)], INVALID_UPDATE_VERSION,
                                           z3.If(ineligible, INELIGIBLE_REPLICA, OK)))))

    def alter_partition(self, s: dict, c: int) -> Disjunct:
        """The acting controller c takes proposal m: refused, it answers with the proposal
        echoed and the error; accepted, it writes the proposed ISR (the version moves on,
        the leader epoch does not) unless ZooKeeper holds it already, and answers with the
        znode as it left it."""
        A, n = self.shape.alt, self.n
        m = self._fresh_msg(A)
        g = z3.And(s[("alt",)][m], A.akind(m) == ALTER_REQUEST, self._acting(s, c))
        error = self._refusal(s, c, m)
        isr = [getattr(A, f"aisr{x}")(m) for x in range(n)]
        same = z3.And([isr[x] == s[("isr", x)] for x in range(n)])
        writes = z3.And(error == OK, z3.Not(same))
        zkv = s[("zkv",)] + 1
        t = dict(s)
        for x in range(n):
            t[("isr", x)] = z3.If(writes, isr[x], s[("isr", x)])
        t[("zkv",)] = z3.If(writes, zkv, s[("zkv",)])
        answer_zkv = z3.If(error != OK, A.azkv(m), z3.If(writes, zkv, s[("zkv",)]))
        answer = A.alter(ALTER_RESPONSE, A.aleader(m), A.alepoch(m), *isr, answer_zkv, A.abep(m), error)
        t[("alt",)] = z3.Store(z3.Store(s[("alt",)], m, False), answer, True)
        return Disjunct("alter_partition", (c,), g, t, m)

    def apply_isr(self, s: dict, b: int) -> Disjunct:
        """Leader b reads the controller's answer m: an accepted change of its current epoch,
        newer than the version it knows, becomes its ISR and version and its HW is retried;
        anything else only ends the wait."""
        A, n = self.shape.alt, self.n
        m = self._fresh_msg(A)
        g = z3.And(s[("alt",)][m], A.akind(m) == ALTER_RESPONSE, A.aleader(m) == b, s[("st", b)] == UP)
        consumed = dict(s)
        consumed[("alt",)] = z3.Store(s[("alt",)], m, False)
        taken = z3.And(s[("role", b)] == LEADER, A.aerr(m) == OK, A.alepoch(m) == s[("rlep", b)],
                       A.azkv(m) > s[("rzkv", b)])
        t = dict(consumed)
        for x in range(n):
            t[("risr", b, x)] = getattr(A, f"aisr{x}")(m)
        t[("rzkv", b)] = A.azkv(m)
        self.advance_hw(t, b)
        post = {k: ite(taken, t[k], consumed[k]) for k in s}
        return Disjunct("apply_isr", (b,), g, post, m)
