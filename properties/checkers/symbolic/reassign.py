"""Replica reassignment (``model.actions.reassignment``, seed 000 F) as cases of the
relation: the agent's start (AR := AR + RAR, LeaderAndISR to RAR) and completion (the
znode's leader, ISR and AR switched to RAR, LeaderAndISR to RAR, StopReplica(delete) to
the live replicas removed).  The AR is the topic's identity's (``deletion``): a shape with
``reassign`` also has ``topic``, and adds only the pending RAR and the count of moves
started.  Kafka's reassignment in phases (``Config.reassign_phases``) is not encoded."""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from properties.checkers.symbolic.cases import Disjunct, below

if TYPE_CHECKING:
    from properties.checkers.symbolic.cases import Params
    from properties.checkers.symbolic.state import Shape, Term


class ReassignActions:
    """The reassignment cases; the helpers they share with the others (``_acting``,
    ``_req``, ``_mbe``, ``exists`` ...) are ``encoding.Encoding``'s."""

    shape: Shape
    p: Params
    n: int

    def reassign_cases(self, s: dict, c: int) -> list[Disjunct]:
        """The cases with broker c as the acting controller: a start to every non-empty
        RAR (``reassign_starts_args``) and a completion with every broker as the leader."""
        if not self.shape.reassign:
            return []
        out = []
        for mask in range(1, 1 << self.n):
            out.append(self.reassign_start(s, c, tuple(b for b in range(self.n) if mask >> b & 1)))
        return out + [self.reassign_complete(s, c, leader) for leader in range(self.n)]

    def moving(self, s: dict) -> Term:
        """A reassignment is in progress: the znode has a RAR."""
        if not self.shape.reassign:
            return z3.BoolVal(False)
        return z3.Or([s[("rar", x)] for x in range(self.n)])

    def reassign_start(self, s: dict, c: int, rar: tuple[int, ...]) -> Disjunct:
        """``reassign_start``: a new move within the bound, or the pending one restarted (the
        same RAR, as a new controller does); AR := AR + RAR on the topic path (the
        leaderAndISR znode's version stays) and the current LeaderAndISR to RAR."""
        n = self.n
        same = z3.And([s[("rar", x)] == (x in rar) for x in range(n)])
        fresh = z3.And(z3.Not(self.moving(s)), below(s[("reas",)], self.p.reassignments))
        g = z3.And(self._acting(s, c), self.exists(s), z3.Or(same, fresh))
        t = dict(s)
        t[("reas",)] = z3.If(fresh, s[("reas",)] + 1, s[("reas",)])
        isr = [s[("isr", x)] for x in range(n)]
        lai = s[("lai",)]
        for x in range(n):
            t[("rar", x)] = z3.BoolVal(x in rar)
            if x in rar:
                t[("ar", x)] = z3.BoolVal(True)
                lai = z3.Store(lai, self._req(x, s[("ldr",)], s[("lep",)], isr, s[("zkv",)], s[("cep",)],
                                              self._mbe(s), s[("tid",)]), True)
        t[("lai",)] = lai
        return Disjunct("reassign_start", (c, 0, rar), g, t)

    def reassign_complete(self, s: dict, c: int, leader: int) -> Disjunct:
        """``reassign_complete``: once RAR is in the ISR, one conditional write of leader
        ``leader`` (the current one if it is a live RAR member not shutting down, else any
        such member), leader epoch + 1, ISR := ISR ∩ RAR and AR := RAR, the move done;
        LeaderAndISR to RAR and StopReplica(delete) of the new epoch to each live replica
        the move removed (``stop_removed_replicas``)."""
        n = self.n
        rar = [s[("rar", x)] for x in range(n)]
        live_rar = [z3.And(rar[x], s[("live", x)], z3.Not(s[("sd", c, x)])) for x in range(n)]
        ldr = s[("ldr",)]
        g = z3.And(self._acting(s, c), self.moving(s), *[z3.Implies(rar[x], s[("isr", x)]) for x in range(n)],
                   live_rar[leader],
                   z3.Or(ldr == leader, z3.Not(z3.Or([z3.And(ldr == x, live_rar[x]) for x in range(n)]))))
        if self.p.max_epoch is not None:
            g = z3.And(g, s[("lep",)] + 1 <= self.p.max_epoch)
        t = dict(s)
        lep, zkv, cep = s[("lep",)] + 1, s[("zkv",)] + 1, s[("cep",)]
        isr = [z3.And(s[("isr", x)], rar[x]) for x in range(n)]
        t[("ldr",)], t[("lep",)], t[("zkv",)] = z3.IntVal(leader), lep, zkv
        lai, mbe = s[("lai",)], self._mbe(s)
        stop = self.shape.stop.stop(lep, cep, s[("tid",)], z3.BoolVal(True))
        for x in range(n):
            t[("isr", x)], t[("ar", x)], t[("rar", x)] = isr[x], rar[x], z3.BoolVal(False)
            lai = z3.If(rar[x], z3.Store(lai, self._req(x, z3.IntVal(leader), lep, isr, zkv, cep, mbe, s[("tid",)]), True),
                        lai)
            removed = z3.And(s[("ar", x)], z3.Not(rar[x]), s[("live", x)])
            t[("stops", x)] = z3.If(removed, z3.Store(s[("stops", x)], stop, True), s[("stops", x)])
        t[("lai",)] = lai
        return Disjunct("reassign_complete", (c, 0, leader), g, t)
