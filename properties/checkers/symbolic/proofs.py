"""Inductive proofs: the properties and the lemmas they lean on, proved together by induction
over the unbounded relation."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from model.config import Config
from model.state import (
    ALTER_RESPONSE,
    DELETED,
    DOWN,
    EPOCH_DURING_DELETE,
    FOLLOWER,
    LEADER,
    NO_LEADER,
    NONE,
    OK,
    PAUSED,
    UP,
    initial,
)
from properties.checkers.symbolic import durability
from properties.checkers.symbolic.encoding import Disjunct, Encoding, Params
from properties.checkers.symbolic.props import (
    prop_deleted_not_served,
    prop_epoch_monotonic,
    prop_hw_le_leo,
    prop_isr_well_formed,
    prop_one_leader_per_epoch,
    prop_single_controller,
)
from properties.checkers.symbolic.state import (
    EMPTY,
    RESP,
    Shape,
    Term,
    encode,
    pick,
)


def holds(formula: Term, timeout_ms: int = 10_000) -> bool:
    sol = z3.Solver()
    sol.set(timeout=timeout_ms)
    sol.add(z3.Not(formula))
    r = sol.check()
    if r == z3.unknown:
        raise RuntimeError(f"z3 gave up: {sol.reason_unknown()}")
    return r == z3.unsat


def _forall_req(shape: Shape, body: Callable[[Term], Term], name: str = "q") -> Term:
    m = z3.Const(name, shape.req)
    return z3.ForAll([m], body(m))


def _of_incarnation(shape: Shape, s: dict, tid: Term) -> Term:
    """A request (or replica) of topic id ``tid`` is of the topic's current incarnation:
    always, without the topic's identity."""
    return tid == s[("tid",)] if shape.topic else z3.BoolVal(True)


def _topic_exists(shape: Shape, s: dict) -> Term:
    return z3.Or([s[("ar", x)] for x in range(shape.n)]) if shape.topic else z3.BoolVal(True)


def lemma_well_typed(shape: Shape, s: dict, paused: bool = False) -> Term:
    """Variables stay in their domains: ids are brokers or -1, a broker is up or down (or,
    when the relation has GC pauses, ``paused``, paused), logs fit their R slots, and fetch
    responses carry a suffix that fits after their offset.  With the topic's identity, a
    replica may be deleted (and stays so while down), no topic id is ahead of the znode's,
    and the ISR is within the AR."""
    n, r = shape.n, shape.r
    statuses = (UP, DOWN, PAUSED) if paused else (UP, DOWN)
    roles = (NONE, LEADER, FOLLOWER, DELETED) if shape.topic else (NONE, LEADER, FOLLOWER)
    R = shape.req
    parts = [s[("ctl",)] >= -1, s[("ctl",)] < n, s[("ldr",)] >= -1, s[("ldr",)] < n,
             s[("produced",)] >= 0, s[("produced",)] <= r, s[("zkv",)] >= 0, s[("lep",)] >= 1, s[("cep",)] >= 1]
    for b in range(n):
        down = z3.Or([s[("role", b)] == role for role in roles if role in (NONE, DELETED)])
        parts += [z3.Or([s[("st", b)] == st for st in statuses]), z3.Or([s[("role", b)] == role for role in roles]),
                  s[("rl", b)] >= -1, s[("rl", b)] < n, s[("hw", b)] >= 0, s[("leo", b)] >= 0, s[("leo", b)] <= r,
                  s[("leo", b)] <= s[("produced",)], z3.Implies(s[("st", b)] == DOWN, down)]
        if shape.topic:
            parts += [s[("rtid", b)] >= 0, s[("rtid", b)] <= s[("tid",)], z3.Implies(s[("isr", b)], s[("ar", b)])]
        for f in range(n):
            if f != b:
                fk = s[("fk", f, b)]
                parts += [fk >= EMPTY, fk <= RESP, z3.Implies(fk != EMPTY, z3.And(s[("fo", f, b)] >= 0, s[("fo", f, b)] <= s[("produced",)])),
                          z3.Implies(fk == RESP, z3.And(s[("frl", f, b)] >= 0, s[("fhw", f, b)] >= 0,
                                                        s[("fo", f, b)] + s[("frl", f, b)] <= s[("produced",)]))]
    parts.append(_forall_req(shape, lambda m: z3.Implies(
        s[("lai",)][m], z3.And(R.to(m) >= 0, R.to(m) < n, R.leader(m) >= -1, R.leader(m) < n,
                               *([R.tid(m) >= 0, R.tid(m) <= s[("tid",)]] if shape.topic else [])))))
    return z3.And(parts)


def lemma_leader_in_own_isr(shape: Shape, s: dict) -> Term:
    """A broker acting as leader is in its own copy of the ISR (so its HW never passes its LEO)."""
    return z3.And([z3.Implies(s[("role", b)] == LEADER, s[("risr", b, b)]) for b in range(shape.n)])


def lemma_requests_match_zk(shape: Shape, s: dict) -> Term:
    """Every request ever sent (and not yet forgotten) is a past or present ZK state: its
    epochs and version are at most ZK's, its leader is in its ISR, and one carrying the
    current version (or leader epoch) carries the current leader (and ISR).  A StopReplica
    in flight, too, carries epochs ZK has reached.  With the topic's identity, the epochs
    are the current incarnation's to compare (a deleted one's requests keep their leader
    in their ISR), and the leader epoch names ZK's leader only while the topic exists."""
    R = shape.req
    n = shape.n

    def ok(m: Term) -> Term:
        isr = [getattr(R, f"isr{x}")(m) for x in range(n)]
        same = z3.And(R.leader(m) == s[("ldr",)], R.lepoch(m) == s[("lep",)],
                      *[isr[x] == s[("isr", x)] for x in range(n)])
        current = _of_incarnation(shape, s, R.tid(m)) if shape.topic else z3.BoolVal(True)
        # a deleted incarnation's: the deletion (and a re-creation) moved the version past it
        past = [z3.Implies(z3.Not(z3.And(current, _topic_exists(shape, s))), R.zkv(m) < s[("zkv",)])] if shape.topic else []
        return z3.Implies(s[("lai",)][m], z3.And(
            z3.Implies(R.leader(m) != NO_LEADER, pick(isr, R.leader(m), z3.BoolVal(False))),
            R.zkv(m) <= s[("zkv",)], R.cepoch(m) <= s[("cep",)], *past,
            z3.Implies(current, z3.And(
                R.lepoch(m) <= s[("lep",)],
                z3.Implies(z3.And(R.lepoch(m) == s[("lep",)], _topic_exists(shape, s)), R.leader(m) == s[("ldr",)]),
                z3.Implies(R.zkv(m) == s[("zkv",)], same)))))

    T, q = shape.stop, z3.Const("qs", shape.stop)
    stops = [z3.ForAll([q], z3.Implies(s[("stops", b)][q], z3.And(
        z3.Implies(_of_incarnation(shape, s, T.stid(q)) if shape.topic else z3.BoolVal(True), T.slepoch(q) <= s[("lep",)]),
        T.scepoch(q) <= s[("cep",)], *([T.stid(q) <= s[("tid",)]] if shape.topic else []))))
             for b in range(n)]
    return z3.And(_forall_req(shape, ok), *stops)


def lemma_requests_agree(shape: Shape, s: dict) -> Term:
    """Two requests for the same leader epoch (of one incarnation) name the same leader."""
    R = shape.req
    a, b = z3.Const("qa", shape.req), z3.Const("qb", shape.req)
    same = z3.And(R.lepoch(a) == R.lepoch(b), *([R.tid(a) == R.tid(b)] if shape.topic else []))
    return z3.ForAll([a, b], z3.Implies(z3.And(s[("lai",)][a], s[("lai",)][b], same), R.leader(a) == R.leader(b)))


def lemma_known_epochs_bounded(shape: Shape, s: dict) -> Term:
    """No broker knows a leader epoch (of the current incarnation), controller epoch or zk
    version ahead of ZooKeeper."""
    return z3.And([z3.And(z3.Implies(_of_incarnation(shape, s, s.get(("rtid", b))), s[("rlep", b)] <= s[("lep",)]),
                          s[("bcep", b)] <= s[("cep",)], s[("rzkv", b)] <= s[("zkv",)])
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
    ZK's leader, and every outstanding request for such an epoch names that broker.  With
    the topic's identity, this is the current incarnation's history, empty while the topic
    is deleted, and the requests are the current incarnation's."""
    R = shape.req
    e = z3.Int("e_hist")
    parts = []
    for b in range(shape.n):
        parts.append(z3.ForAll([e], z3.Implies(s[("led", b)][e], z3.And(
            e <= s[("lep",)], z3.Implies(e == s[("lep",)], s[("ldr",)] == b), _topic_exists(shape, s)))))
        parts.append(_forall_req(shape, lambda m, b=b: z3.Implies(
            z3.And(s[("lai",)][m], s[("led", b)][R.lepoch(m)], _of_incarnation(shape, s, R.tid(m)) if shape.topic
                   else z3.BoolVal(True)), R.leader(m) == b), name=f"qh{b}"))
    return z3.And(parts)


def lemma_alter_messages_match_zk(shape: Shape, s: dict) -> Term:
    """Every AlterPartition message in flight is of an epoch ZooKeeper has reached -- of its
    leader, if the current one -- with its leader in its ISR; and an accepted answer
    carrying ZooKeeper's current version is of the current epoch, with ZooKeeper's ISR -- so
    the leader that takes it holds the version only as ``zk_version_owner`` says.  And a
    leader in ZooKeeper's current epoch is ZooKeeper's leader (what a proposal inherits).
    (True of a shape without AlterPartition.)"""
    if not shape.alter:
        return z3.BoolVal(True)
    A, n = shape.alt, shape.n
    m = z3.Const("qa_alt", A)
    isr = [getattr(A, f"aisr{x}")(m) for x in range(n)]
    current = z3.And(A.akind(m) == ALTER_RESPONSE, A.aerr(m) == OK, A.azkv(m) == s[("zkv",)])
    messages = z3.ForAll([m], z3.Implies(s[("alt",)][m], z3.And(
        A.aleader(m) >= 0, A.aleader(m) < n, pick(isr, A.aleader(m), z3.BoolVal(False)),
        A.alepoch(m) <= s[("lep",)], A.azkv(m) <= s[("zkv",)],
        z3.Implies(A.alepoch(m) == s[("lep",)], A.aleader(m) == s[("ldr",)]),
        z3.Implies(current, z3.And(A.alepoch(m) == s[("lep",)], *[isr[x] == s[("isr", x)] for x in range(n)])))))
    leaders = [z3.Implies(z3.And(s[("role", b)] == LEADER, s[("rlep", b)] == s[("lep",)]), s[("ldr",)] == b)
               for b in range(n)]
    return z3.And(messages, *leaders)


def lemma_one_incarnation(shape: Shape, s: dict, deletions: bool = True) -> Term:
    """Without deletions, a shape with the topic's identity (reassignment's AR) has one
    incarnation: the topic exists, and every replica, LeaderAndISR, StopReplica and fetch is
    of its topic id -- no replica deleted, no deletion's StopReplica, no record retired.  So
    the lemmas that speak of one incarnation hold as they do without the identity.  (True
    of a shape without it, and not asked of a configuration with deletions.)"""
    if not shape.topic or deletions:
        return z3.BoolVal(True)
    n, r, R, T, tid = shape.n, shape.r, shape.req, shape.stop, s[("tid",)]
    parts = [_topic_exists(shape, s), _forall_req(shape, lambda m: z3.Implies(s[("lai",)][m], R.tid(m) == tid))]
    parts += [z3.Not(s[("ret", v)]) for v in range(1, r + 1)]
    for b in range(n):
        q = z3.Const(f"one_incarnation_stop{b}", T)
        parts.append(z3.ForAll([q], z3.Implies(s[("stops", b)][q], z3.And(
            T.stid(q) == tid, T.slepoch(q) != EPOCH_DURING_DELETE))))
        parts += [s[("rtid", b)] == tid, s[("role", b)] != DELETED]
        parts += [z3.Implies(s[("fk", f, b)] != EMPTY, s[("ftid", f, b)] == tid) for f in range(n) if f != b]
    return z3.And(parts)


def lemma_retired_records_gone(shape: Shape, s: dict) -> Term:
    """No record of a deleted incarnation is in a replica of the current one, nor in a fetch
    answer of it in flight; a deleted replica holds no records; and every record held or
    retired was produced, so a new one is never retired.  (True of a shape without the
    topic's identity.)"""
    if not shape.topic:
        return z3.BoolVal(True)
    n, r = shape.n, shape.r
    exists = _topic_exists(shape, s)

    def produced(v: Term) -> Term:
        return z3.And(1 <= v, v <= s[("produced",)])

    parts = [z3.Implies(s[("ret", v)], v <= s[("produced",)]) for v in range(1, r + 1)]
    for b in range(n):
        current = z3.And(exists, s[("rtid", b)] == s[("tid",)], s[("role", b)] != DELETED)
        parts.append(z3.Implies(s[("role", b)] == DELETED, s[("leo", b)] == 0))
        parts += [z3.Implies(i < s[("leo", b)], produced(s[("val", b, i)])) for i in range(r)]
        parts += [z3.Implies(z3.And(s[("fk", f, b)] == RESP, i < s[("frl", f, b)]), produced(s[("frv", f, b, i)]))
                  for f in range(n) if f != b for i in range(r)]
        parts += [s[("ftid", f, b)] <= s[("tid",)] for f in range(n) if f != b]
        parts += [z3.Implies(z3.And(current, i < s[("leo", b)]), z3.Not(pick(
            [s[("ret", v)] for v in range(1, r + 1)], s[("val", b, i)] - 1, z3.BoolVal(False)))) for i in range(r)]
        for f in range(n):
            if f != b:
                answer = z3.And(exists, s[("fk", f, b)] == RESP, s[("ftid", f, b)] == s[("tid",)])
                parts += [z3.Implies(z3.And(answer, i < s[("frl", f, b)]), z3.Not(pick(
                    [s[("ret", v)] for v in range(1, r + 1)], s[("frv", f, b, i)] - 1, z3.BoolVal(False))))
                    for i in range(r)]
    return z3.And(parts)


def lemma_controller_unique(shape: Shape, s: dict) -> Term:
    """Stated as the property itself; it is inductive together with the epoch bounds."""
    return prop_single_controller(shape, s)


def q3_stale_leader_frozen(shape: Shape, s: dict, t: dict) -> Term:
    """Seed 000 question 3 as a step property: a leader whose zk version ZK has moved past
    (a paused or superseded leader), while it stays leader in the same epoch, keeps exactly
    its ISR and stays behind ZK -- it can never shrink the ISR to commit on its own.  (With
    the topic's identity: while it stays leader of one incarnation.)"""
    parts = []
    for b in range(shape.n):
        stale = z3.And(s[("role", b)] == LEADER, s[("rzkv", b)] != s[("zkv",)])
        stays = z3.And(t[("role", b)] == LEADER, t[("rlep", b)] == s[("rlep", b)],
                       *([t[("rtid", b)] == s[("rtid", b)]] if shape.topic else []))
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
    "alter_messages_match_zk": lemma_alter_messages_match_zk,
    "retired_records_gone": lemma_retired_records_gone,
    "one_incarnation": lemma_one_incarnation,
}


STATE_GOALS: dict[str, Callable[[Shape, dict], Term]] = {
    "hw_le_leo": prop_hw_le_leo,
    "isr_well_formed": prop_isr_well_formed,
    "one_leader_per_epoch": prop_one_leader_per_epoch,
    "single_controller": prop_single_controller,
    "deleted_not_served": prop_deleted_not_served,
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
    "alter_messages_match_zk": ("leader_in_own_isr", "known_epochs_bounded", "requests_match_zk"),
    "q3_stale_leader_frozen": ("well_typed", "known_epochs_bounded", "zk_version_owner"),
    "retired_records_gone": ("well_typed",),
    "deleted_not_served": ("retired_records_gone",),
}


@dataclass
class Verdict:
    name: str
    kind: str  # "lemma", "invariant", "step", "bmc"
    status: str  # "proved", "holds to depth k", "counterexample", "failed", "unknown"
    seconds: float
    detail: str = ""
    steps: list = field(default_factory=list)
    cti: list[str] = field(default_factory=list)  # a failed consecution's state pair, readable


def _with_brokers(cfg: Config, n: int) -> Config:
    from dataclasses import replace

    return replace(cfg, brokers=n, partitions=1)


class _Induction:
    """Init => F and Hyp /\\ Next => F' for one formula F at a time, one action at a time
    (so a failure names both), against a hypothesis Hyp that conjoins the formulas proved
    together; the first failing action's model is kept as a readable CTI."""

    def __init__(self, cfg: Config, n: int, timeout_ms: int, encoding: type[Encoding], kept: tuple[str, ...] = ()) -> None:
        self.shape = Shape.of(cfg, n)
        self.enc = encoding(self.shape, Params.of(cfg, bounded=False, kept=kept))
        self.S = self.shape.fresh("s")
        self.init = encode(self.shape, initial(_with_brokers(cfg, n)))
        self.by_action: dict[str, list[Disjunct]] = {}
        for d in self.enc.disjuncts(self.S):
            self.by_action.setdefault(d.action, []).append(d)
        self.timeout_ms = timeout_ms

    def check(self, name: str, kind: str, hyp: Term, goal: Callable[[Shape, dict], Term] | None,
              step: Callable[[Shape, dict, dict], Term] | None = None, uses: tuple[str, ...] = (),
              actions: tuple[str, ...] | None = None) -> Verdict:
        import time

        from properties.checkers.symbolic.cti import describe_cti

        started = time.perf_counter()
        shape, S = self.shape, self.S
        post = (lambda d: goal(shape, d.post)) if goal is not None else (lambda d: step(shape, S, d.post))
        failures: list[str] = []
        cti: list[str] = []
        if goal is not None and not holds(goal(shape, self.init), self.timeout_ms):
            failures.append("Init")
        for action, cases in self.by_action.items():
            if actions is not None and action not in actions:
                continue
            sol = z3.Solver()
            sol.set(timeout=self.timeout_ms)
            sol.add(hyp, z3.Or([z3.And(d.guard, z3.Not(post(d))) for d in cases]))
            r = sol.check()
            if r == z3.unsat:
                continue
            failures.append(action + ("?" if r == z3.unknown else ""))
            if r == z3.sat and not cti:
                model = sol.model()
                # the case z3 took; none evaluates so when the model's quantified parts do not
                # pin it down (model completion picks other values), and then no CTI is shown
                taken = [d for d in cases if z3.is_true(model.eval(z3.And(d.guard, z3.Not(post(d))), model_completion=True))]
                if taken:
                    cti = describe_cti(model, shape, S, taken[0].action, taken[0].args, taken[0].post)
        secs = time.perf_counter() - started
        status = "proved" if not failures else ("unknown" if all(f.endswith("?") for f in failures) else "failed")
        detail = (f"lemmas: {', '.join(uses)}" if uses else "") if not failures else f"not preserved by: {', '.join(failures)}"
        return Verdict(name, kind, status, secs, detail, cti=cti)


def _of_current_view(lemma: Callable[[Shape, dict], Term], shape: Shape, s: dict) -> Term:
    """``lemma`` stated of the topic's current incarnation (``durability.current_view``)."""
    return lemma(shape, durability.current_view(shape, s))


def durability_tier(cfg: Config) -> dict[str, tuple[str, Callable[[Shape, dict], Term]]]:
    """The durability tier's formulas as ``prove`` states them for ``cfg``, each with its
    kind: with deletions its lemmas speak of the current incarnation's view (all but those
    of the topic's identity itself), and with reassignments of the configuration's moves."""
    tier = {**{k: ("lemma", f) for k, f in durability.LEMMAS.items()},
            **{k: ("invariant", f) for k, f in durability.GOALS.items()}}
    if cfg.deletions:
        tier.update({k: ("lemma", functools.partial(_of_current_view, f)) for k, (kind, f) in tier.items()
                     if kind == "lemma" and k not in durability.OF_EVERY_INCARNATION})
    if "removed_replicas_stay_out" in tier:
        tier["removed_replicas_stay_out"] = ("lemma", functools.partial(durability.lemma_removed_replicas_stay_out,
                                                                        moves=cfg.reassignments))
    return tier


def prove(cfg: Config, n: int = 2, timeout_ms: int = 60_000,
          progress: Callable[[Verdict], None] | None = None,
          encoding: type[Encoding] = Encoding, with_durability: bool = True,
          only: tuple[str, ...] | None = None, actions: tuple[str, ...] | None = None) -> list[Verdict]:
    """Induction: Init => I and I /\\ Next => I' for I the conjunction of every lemma and
    state goal, checked one formula and one action at a time (so a failure names both);
    step goals are checked as I /\\ Next => P(s, s').  Epochs, versions and the crash count
    are unbounded (the configuration's bounds are dropped).

    Durability (``durability.GOALS`` with its strengthening ``durability.LEMMAS``) is proved
    on top, by the same induction with the formulas above assumed too; where one of its
    formulas fails, the others are ``unknown`` -- preserved, but only by leaning on it (a
    failure names the actions and prints its counterexample to induction).
    ``encoding`` is the relation's class (a test passes a mutated one); ``with_durability``
    False proves the formulas above alone, and ``only`` (names) just those of them and of
    durability's -- every one still assumed in the hypothesis; ``actions`` (names) checks
    consecution under those actions alone, a part of each proof (a test's question).

    With reassignments, durability is proved for the configuration's number of moves (its
    one bound kept: ``durability.lemma_removed_replicas_stay_out``); the formulas above,
    proved for any number, are assumed."""
    ind = _Induction(cfg, n, timeout_ms, encoding)
    shape, S = ind.shape, ind.S
    lemmas = {**LEMMAS, "well_typed": functools.partial(lemma_well_typed, paused=ind.enc.p.max_pauses != 0),
              "one_incarnation": functools.partial(lemma_one_incarnation, deletions=ind.enc.p.deletions != 0)}
    base = z3.And([f(shape, S) for f in {**lemmas, **STATE_GOALS}.values()])
    out: list[Verdict] = []

    def report(v: Verdict) -> None:
        out.append(v)
        if progress:
            progress(v)

    def wanted(name: str) -> bool:
        return only is None or name in only

    for name, f in lemmas.items():
        if wanted(name):
            report(ind.check(name, "lemma", base, f, uses=USES.get(name, ()), actions=actions))
    for name, f in STATE_GOALS.items():
        if wanted(name):
            report(ind.check(name, "invariant", base, f, uses=USES.get(name, ()), actions=actions))
    for name, g in STEP_GOALS.items():
        if wanted(name):
            report(ind.check(name, "step", base, None, g, uses=USES.get(name, ()), actions=actions))

    if not with_durability:
        return out
    if cfg.reassignments:  # durability is proved for the configuration's number of moves
        ind = _Induction(cfg, n, timeout_ms, encoding, kept=("reassignments",))
        shape, S = ind.shape, ind.S
        base = z3.And([f(shape, S) for f in {**lemmas, **STATE_GOALS}.values()])
    tier = durability_tier(cfg)
    hyp = z3.And(base, *[f(shape, S) for _, f in tier.values()])
    verdicts = [ind.check(name, kind, hyp, f, uses=durability.USES.get(name, ()), actions=actions)
                for name, (kind, f) in tier.items() if wanted(name)]
    failed = [v.name for v in verdicts if v.status != "proved"]
    for v in verdicts:
        if failed and v.status == "proved":  # it leaned on a formula that is not proved
            v.status, v.detail = "unknown", f"preserved if {', '.join(failed)} held, which are not proved"
        report(v)
    for name, (g, own) in durability.STEPS.items():  # its premises are its own
        if wanted(name):
            report(ind.check(name, "step", base, None, g, actions=own if actions is None else
                             tuple(a for a in own if a in actions)))
    return out
