"""Durability by induction: ``committed_durable`` and ``acked_durable`` with the lemmas that
strengthen them into an inductive invariant, as the KIP-101/279/320 argument states it.

The argument: a leader's ISR contains ZooKeeper's; a leader commits an offset only once
every member of its ISR has fetched past it, and a follower's fetch offset is the end of a
log that is a prefix of the leader's -- its KIP-320 truncation (fenced: only against a
leader in its own epoch) keeps exactly what it shares with the leader; so every member of
ZooKeeper's ISR holds every committed record, and a clean election picks its leader from
that ISR.

A leader that has been replaced -- a preferred election or a controlled shutdown moved the
leadership, or its session ended under a GC pause or an expiry -- acts on until its
LeaderAndISR (or StopReplica) arrives: it appends, answers fetches, and may be handed a
request for an epoch ZooKeeper has already left.  The replaced-leader lemmas say why that
cannot lose a committed record: its epoch is stale (``leader_is_zk_leader``), so its ISR
writes fail; its ISR holds every newer leader (``newer_leaders_in_isr``), whose fetches in
its epoch are over, so its HW (``hw_current``) can move no further; and the leader in
charge -- ZooKeeper's, or one some broker has not moved past -- holds every committed record
(``leader_holds_committed``, KIP-101's leader completeness).  A replaced leader's appends
come out of value order, so log matching is stated per epoch: one record per offset and
epoch (``values_placed_once``), epochs that never decrease along a log (``log_order``) and
a leader's own epoch from its epoch start on (``epoch_start``).

These are proved on top of the lemmas of ``proofs`` (assumed, and proved there), for kip320
with every knobbed action; the design, kip101 and kip279 fail them.
"""

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
    UNKNOWN,
    UP,
)
from properties.checkers.symbolic.props import (
    prop_acked_durable,
    prop_committed_durable,
    prop_log_epochs_monotonic,
    prop_one_record_per_offset,
)
from properties.checkers.symbolic.state import EMPTY, REQ, RESP, Shape, Term, pick


def current_view(shape: Shape, s: dict) -> dict:
    """The state as the topic's current incarnation sees it: a replica of another
    incarnation, or deleted, is a replica not yet created -- no role, no log, no leader
    epoch, as it will be once it takes a request of the current one (``for_incarnation``);
    a LeaderAndISR or a fetch of another incarnation, or between such replicas, is not in
    flight; and while the topic is deleted there is no incarnation at all.  The lemmas of
    durability, which speak of one incarnation, are stated of this view with deletions.
    (The state itself without the topic's identity.)"""
    if not shape.topic:
        return s
    n, r, R = shape.n, shape.r, shape.req
    exists = z3.Or([s[("ar", x)] for x in range(n)])
    current = [z3.And(exists, s[("rtid", b)] == s[("tid",)], s[("role", b)] != DELETED) for b in range(n)]
    v = dict(s)
    for b in range(n):
        blank = {("role", b): NONE, ("rl", b): NO_LEADER, ("rlep", b): 0, ("rzkv", b): -1, ("leo", b): 0,
                 ("hw", b): 0, ("fs", b): IDLE, ("es", b): 0}
        blank.update({("risr", b, x): False for x in range(n)})
        blank.update({("fleo", b, x): UNKNOWN for x in range(n)})
        blank.update({(k, b, i): 0 for k in ("val", "ep") for i in range(r)})
        for k, value in blank.items():
            v[k] = z3.If(current[b], s[k], value)
        for ld in range(n):
            if ld != b:
                ours = z3.And(current[b], current[ld], s[("ftid", b, ld)] == s[("tid",)])
                v[("fk", b, ld)] = z3.If(ours, s[("fk", b, ld)], EMPTY)
    m = z3.Const("q_view", R)
    v[("lai",)] = z3.Lambda([m], z3.And(s[("lai",)][m], R.tid(m) == s[("tid",)], exists))
    return v


def _entries_equal(s: dict, a: int, b: int, i: int) -> Term:
    return z3.And(s[("val", a, i)] == s[("val", b, i)], s[("ep", a, i)] == s[("ep", b, i)])


def lemma_live_is_up(shape: Shape, s: dict) -> Term:
    """A broker in ZooKeeper's live set is up (a session may end while its broker runs on --
    a GC pause, a session expiry -- but a broker that is down or paused has none)."""
    return z3.And([z3.Implies(s[("live", b)], s[("st", b)] == UP) for b in range(shape.n)])


def lemma_log_slots_clean(shape: Shape, s: dict) -> Term:
    """A log holds produced values with epochs ZooKeeper has reached below its LEO, and
    nothing above it."""
    parts = []
    for b in range(shape.n):
        for i in range(shape.r):
            inside = i < s[("leo", b)]
            parts.append(z3.If(inside,
                               z3.And(s[("val", b, i)] >= 1, s[("val", b, i)] <= s[("produced",)],
                                      s[("ep", b, i)] >= 1, s[("ep", b, i)] <= s[("lep",)]),
                               z3.And(s[("val", b, i)] == 0, s[("ep", b, i)] == 0)))
        for ld in range(shape.n):
            if ld != b:  # a fetch response carries such records
                resp = s[("fk", b, ld)] == RESP
                parts.append(z3.Implies(resp, z3.And(s[("fe", b, ld)] >= 1, s[("fe", b, ld)] <= s[("lep",)])))
                parts += [z3.Implies(z3.And(resp, i < s[("frl", b, ld)]),
                                     z3.And(s[("frv", b, ld, i)] >= 1, s[("frv", b, ld, i)] <= s[("produced",)],
                                            s[("fre", b, ld, i)] >= 1, s[("fre", b, ld, i)] <= s[("lep",)]))
                          for i in range(shape.r)]
    return z3.And(parts)


def lemma_leader_epochs_positive(shape: Shape, s: dict) -> Term:
    """Every broker knows a leader epoch >= 1 (the first is 1, and they only grow) -- with
    topic deletions, every replica of the current incarnation that has a role or a log (one
    not yet created knows none)."""
    if shape.topic:  # ... and every LeaderAndISR carries one (a replica takes its epoch)
        m = z3.Const("q_positive", shape.req)
        return z3.And(z3.ForAll([m], z3.Implies(s[("lai",)][m], shape.req.lepoch(m) >= 1)),
                      *[z3.Or(s[("rlep", b)] >= 1, z3.And(s[("role", b)] == NONE, s[("leo", b)] == 0))
                        for b in range(shape.n)])
    return z3.And([s[("rlep", b)] >= 1 for b in range(shape.n)])


def lemma_records_not_newer(shape: Shape, s: dict) -> Term:
    """A replica's log holds no record of an epoch newer than the leader epoch it knows, nor
    does a fetch response one newer than the epoch it was answered in (a leader writes in its
    own epoch, a follower takes records only from a leader of its epoch)."""
    parts = []
    for b in range(shape.n):
        parts += [z3.Implies(i < s[("leo", b)], s[("ep", b, i)] <= s[("rlep", b)]) for i in range(shape.r)]
        for ld in range(shape.n):
            if ld != b:
                resp = s[("fk", b, ld)] == RESP
                parts += [z3.Implies(z3.And(resp, i < s[("frl", b, ld)]), s[("fre", b, ld, i)] <= s[("fe", b, ld)])
                          for i in range(shape.r)]
    return z3.And(parts)


def _would_lead(shape: Shape, s: dict, m: Term, b: int) -> Term:
    """Request m is on its way to broker b, up or paused, and would make it leader (it is not
    stale; a crash makes it stale, by the broker epoch of the restart)."""
    R = shape.req
    return z3.And(s[("lai",)][m], R.to(m) == b, R.leader(m) == b, R.lepoch(m) > s[("rlep", b)], s[("st", b)] != DOWN)


def _current_request(shape: Shape, s: dict, m: Term, b: int) -> Term:
    """Request m names ZooKeeper's leader b, in an epoch newer than any other leader's."""
    R = shape.req
    older = [z3.Implies(s[("role", x)] == LEADER, s[("rlep", x)] < R.lepoch(m)) for x in range(shape.n) if x != b]
    return z3.And(s[("ldr",)] == b, *older)


def _replaced(shape: Shape, s: dict, b: int) -> Term:
    """Every other broker has moved past b's leader epoch: b has been replaced, and none will
    fetch from it in its epoch again (with two brokers, the proof's shape, the other one is
    the newer leader or follows a newer one)."""
    return z3.And([s[("rlep", x)] > s[("rlep", b)] for x in range(shape.n) if x != b])


def _in_charge(shape: Shape, s: dict, b: int) -> Term:
    """b acts as leader and has not been replaced: it is ZooKeeper's leader or in its ISR, or
    some broker has not moved past its epoch."""
    return z3.And(s[("role", b)] == LEADER, z3.Or(s[("ldr",)] == b, s[("isr", b)], z3.Not(_replaced(shape, s, b))))


def lemma_leader_holds_committed(shape: Shape, s: dict) -> Term:
    """Leader completeness (KIP-101): a leader in charge holds every committed record of an
    epoch up to its own -- it was elected from an ISR holding them, and a leader it replaced
    can commit nothing more once its followers left its epoch; so does a broker a request on
    its way would make leader in an epoch some other broker has not moved past."""
    R = shape.req
    parts = []
    for b in range(shape.n):
        m = z3.Const(f"q_complete{b}", R)
        passed = z3.And([s[("rlep", x)] > R.lepoch(m) for x in range(shape.n) if x != b])
        pending = z3.And(_would_lead(shape, s, m, b), z3.Not(passed))
        for o in range(shape.r):
            for v in range(1, shape.r + 1):
                e = s[("cmt", o, v)]
                has = z3.And(o < s[("leo", b)], s[("val", b, o)] == v, s[("ep", b, o)] == e)
                parts.append(z3.Implies(z3.And(_in_charge(shape, s, b), e != 0, e <= s[("rlep", b)]), has))
                parts.append(z3.ForAll([m], z3.Implies(z3.And(pending, e != 0, e <= R.lepoch(m)), has)))
    return z3.And(parts)


def lemma_leader_is_zk_leader(shape: Shape, s: dict) -> Term:
    """A broker acting as leader is ZooKeeper's leader or has been replaced (ZooKeeper has
    moved past its epoch), and its ISR contains ZooKeeper's (ZooKeeper's ISR only shrinks
    behind its back: an election keeps the live part, a newer leader's writes only add
    brokers that fetched from it, and those are no longer this one's followers)."""
    n = shape.n
    return z3.And([z3.Implies(s[("role", b)] == LEADER,
                              z3.And(z3.Or(s[("ldr",)] == b, s[("rlep", b)] < s[("lep",)]),
                                     *[z3.Implies(s[("isr", x)], s[("risr", b, x)]) for x in range(n)]))
                   for b in range(n)])


def lemma_leaders_in_distinct_epochs(shape: Shape, s: dict) -> Term:
    """Two brokers acting as leader do so in different leader epochs (one leader per epoch)."""
    n = shape.n
    return z3.And([z3.Not(z3.And(s[("role", a)] == LEADER, s[("role", b)] == LEADER, s[("rlep", a)] == s[("rlep", b)]))
                   for a in range(n) for b in range(a + 1, n)])


def lemma_newer_leaders_in_isr(shape: Shape, s: dict) -> Term:
    """A leader's ISR holds every broker that leads, or a request on its way would make lead,
    a later epoch: that broker was elected from ZooKeeper's ISR, which the older leader's
    contained, and the older leader's ISR writes fail ever after (its zk_version is stale)."""
    R = shape.req
    parts = []
    for b in range(shape.n):
        m = z3.Const(f"q_newer{b}", R)
        lead = s[("role", b)] == LEADER
        for x in range(shape.n):
            if x != b:
                newer = z3.And(s[("role", x)] == LEADER, s[("rlep", x)] > s[("rlep", b)])
                parts.append(z3.Implies(z3.And(lead, newer), s[("risr", b, x)]))
                pending = z3.And(_would_lead(shape, s, m, x), R.lepoch(m) > s[("rlep", b)])
                parts.append(z3.ForAll([m], z3.Implies(z3.And(lead, pending), s[("risr", b, x)])))
                # and a request on its way to make x leader has every newer leader b in its ISR
                parts.append(z3.ForAll([m], z3.Implies(z3.And(_would_lead(shape, s, m, x), lead, s[("rlep", b)] > R.lepoch(m)),
                                                       getattr(R, f"isr{b}")(m))))
    return z3.And(parts)


def lemma_epoch_start(shape: Shape, s: dict) -> Term:
    """A leader's epoch starts at its LEO when it took over (its epoch cache's last entry):
    every record from there on is of its own epoch."""
    parts = []
    for b in range(shape.n):
        lead = s[("role", b)] == LEADER
        parts.append(z3.Implies(lead, s[("es", b)] <= s[("leo", b)]))
        parts += [z3.Implies(z3.And(lead, s[("es", b)] <= i, i < s[("leo", b)]), s[("ep", b, i)] == s[("rlep", b)])
                  for i in range(shape.r)]
    return z3.And(parts)


def lemma_hw_current(shape: Shape, s: dict) -> Term:
    """A leader's HW is at least the least LEO over its ISR as it knows them: it recomputes
    its HW whenever one of them changes, and never moves it backwards."""
    parts = []
    for b in range(shape.n):
        least = s[("leo", b)]
        for x in range(shape.n):
            if x != b:
                least = z3.If(z3.And(s[("risr", b, x)], s[("fleo", b, x)] < least), s[("fleo", b, x)], least)
        parts.append(z3.Implies(s[("role", b)] == LEADER, least <= s[("hw", b)]))
    return z3.And(parts)


def lemma_pending_leadership(shape: Shape, s: dict) -> Term:
    """A LeaderAndISR request that would still make a broker leader has an ISR that contains
    ZooKeeper's and every broker a later request names leader, and it is current (names
    ZooKeeper's leader, in an epoch newer than any other leader's) unless ZooKeeper has moved
    past its epoch -- then it makes a replaced leader; and a request in the epoch a broker
    leads names that broker."""
    R, n = shape.req, shape.n
    m = z3.Const("q_lead", R)
    parts = []
    for b in range(n):
        isr = [z3.Implies(s[("isr", x)], getattr(R, f"isr{x}")(m)) for x in range(n)]
        parts.append(z3.ForAll([m], z3.Implies(_would_lead(shape, s, m, b), z3.And(
            z3.Or(_current_request(shape, s, m, b), R.lepoch(m) < s[("lep",)]), *isr))))
    later = z3.Const("q_later", R)
    for b in range(n):  # ... and every broker a later request names leader (elected from an ISR within it)
        named = pick([getattr(R, f"isr{x}")(m) for x in range(n)], R.leader(later), z3.BoolVal(True))
        parts.append(z3.ForAll([m, later], z3.Implies(
            z3.And(_would_lead(shape, s, m, b), s[("lai",)][later], R.lepoch(later) > R.lepoch(m)), named)))
    for b in range(n):  # a leader's epoch is its own: a request for it names it
        parts.append(z3.ForAll([m], z3.Implies(z3.And(s[("role", b)] == LEADER, s[("lai",)][m], R.lepoch(m) == s[("rlep", b)]),
                                               R.leader(m) == b)))
    return z3.And(parts)


def _replicating(shape: Shape, s: dict, x: int) -> Term:
    """x's replica may still take part in replication: it is in the AR, or has a role, or
    a LeaderAndISR on its way would give it one.  A replica the move removed is otherwise
    inert for good (``removed_replicas_stay_out``) -- and its log may be gone (its
    StopReplica, or a restart outside the AR, deleted it) while a fetch it sent before is
    still in flight, or still counted by an old leader: the prefix lemmas say nothing of
    it.  (Every replica, without reassignments.)"""
    if not shape.reassign:
        return z3.BoolVal(True)
    m = z3.Const(f"q_replicating{x}", shape.req)
    addressed = z3.Exists([m], z3.And(s[("lai",)][m], shape.req.to(m) == x))
    return z3.Or(s[("ar", x)], s[("role", x)] != NONE, addressed)


def lemma_broker_epochs_issued(shape: Shape, s: dict) -> Term:
    """No broker epoch -- a broker's own, ZooKeeper's record of it, or the max broker epoch a
    LeaderAndISR carries -- is ahead of ZooKeeper's zxid: so a restart's new broker epoch
    (the next zxid) makes every LeaderAndISR sent to the broker before it stale, and a
    broker that restarts outside the AR takes none of them.  (Asked with the topic's
    identity, where that restart happens.)"""
    if not shape.topic:
        return z3.BoolVal(True)
    R, m = shape.req, z3.Const("q_issued", shape.req)
    parts = [s[("zxid",)] >= 0]
    parts += [z3.And(s[("bep", b)] <= s[("zxid",)], s[("bbep", b)] <= s[("zxid",)]) for b in range(shape.n)]
    parts.append(z3.ForAll([m], z3.Implies(s[("lai",)][m], R.mbe(m) <= s[("zxid",)])))
    return z3.And(parts)


def lemma_incarnation_settled(shape: Shape, s: dict) -> Term:
    """With topic deletions (and no reassignment, which moves the AR): while the topic
    exists no deletion's StopReplica is in flight (a re-creation waits for them, and the
    next deletion ends the incarnation), every LeaderAndISR of the current incarnation goes
    to a member of its AR, and so every replica of it is one.  (True of a shape without
    the topic's identity.)"""
    if not shape.topic or shape.reassign:
        return z3.BoolVal(True)
    n, R, T = shape.n, shape.req, shape.stop
    exists = z3.Or([s[("ar", x)] for x in range(n)])
    m = z3.Const("q_settled", R)
    parts = [z3.ForAll([m], z3.Implies(z3.And(exists, s[("lai",)][m], R.tid(m) == s[("tid",)]),
                                       pick([s[("ar", x)] for x in range(n)], R.to(m), z3.BoolVal(False))))]
    parts += [z3.Implies(z3.Not(exists), z3.And(z3.Not(s[("acked", v)]), *[s[("cmt", o, v)] == 0 for o in range(shape.r)]))
              for v in range(1, shape.r + 1)]
    for b in range(n):
        q = z3.Const(f"q_settled_stop{b}", T)
        parts.append(z3.ForAll([q], z3.Implies(s[("stops", b)][q], z3.And(
            z3.Implies(exists, T.slepoch(q) != EPOCH_DURING_DELETE),
            z3.Implies(T.slepoch(q) == EPOCH_DURING_DELETE, z3.And(T.sdel(q), T.stid(q) == s[("tid",)])),
            z3.Implies(T.sdel(q), T.slepoch(q) == EPOCH_DURING_DELETE)))))
        parts.append(z3.Implies(z3.And(exists, s[("rtid", b)] < s[("tid",)]), s[("rzkv", b)] < s[("zkv",)]))
        parts.append(z3.Implies(z3.And(exists, s[("rtid", b)] == s[("tid",)]),
                                z3.And(s[("role", b)] != DELETED, s[("ar", b)])))
        for ld in range(n):  # a fetch is of its follower's incarnation, answered by its leader's
            if ld != b:
                fk, ftid = s[("fk", b, ld)], s[("ftid", b, ld)]
                parts += [z3.Implies(fk != EMPTY, ftid <= s[("rtid", b)]), z3.Implies(fk == RESP, ftid <= s[("rtid", ld)]),
                          # one of the current incarnation comes from a replica of it, in an epoch it
                          # has reached; a request may go to a replica of an older incarnation (a
                          # follower truncates against a leader of its epoch, its topic id not
                          # compared), which refuses it -- so an answer is from a replica of it too
                          z3.Implies(z3.And(exists, fk != EMPTY, ftid == s[("tid",)]), z3.And(
                              s[("rtid", b)] == s[("tid",)],
                              z3.Implies(fk == REQ, s[("fe", b, ld)] <= s[("rlep", b)]),
                              z3.Implies(fk == RESP, z3.And(s[("rtid", ld)] == s[("tid",)],
                                                            s[("fe", b, ld)] <= s[("rlep", ld)]))))]
    return z3.And(parts)


def lemma_stray_leaders_commit_nothing(shape: Shape, s: dict) -> Term:
    """With topic deletions, of a *stray* leader: a replica of an older incarnation that a
    leader named for the current one is -- ZooKeeper's, the one a follower of it follows,
    one a LeaderAndISR of it names to another broker that will take it.  (A replica that
    refused the deletion's StopReplica, the controller having moved on, leads its old
    incarnation on in the same leader epoch; a follower of the new one truncates against
    its old log, the leader epochs matching and the topic ids not compared.)  While there
    is one, nothing of the incarnation is committed, and a leader of it that such a request
    would replace keeps the stray replica in its ISR, so it commits nothing either.  Two
    incarnations share no value (each is written once, and a fetch of another incarnation
    is refused), so a follower that kept a record truncating against a stray leader's
    old log kept no more than that log has, of other values: every value is produced
    (records=2), and no leader appends again.  A fetch in its follower's epoch is of its
    fetching from that leader.  (True of a shape without the topic's identity.)"""
    if not shape.topic or shape.reassign:
        return z3.BoolVal(True)
    n, R = shape.n, shape.req
    exists = z3.Or([s[("ar", x)] for x in range(n)])
    current = [z3.And(s[("rtid", b)] == s[("tid",)], s[("role", b)] != DELETED) for b in range(n)]
    uncommitted = _uncommitted(shape, s)
    parts = [z3.Implies(z3.And(exists, s[("ldr",)] == b, z3.Not(current[b])), uncommitted) for b in range(n)]
    for f in range(n):
        for ld in range(n):
            if ld != f:
                follows = z3.And(current[f], s[("role", f)] == FOLLOWER, s[("rl", f)] == ld, z3.Not(current[ld]))
                parts.append(z3.Implies(z3.And(exists, follows), uncommitted))
    m = z3.Const("q_stray_leader", R)
    takes = z3.Or(pick([z3.Not(c) for c in current], R.to(m), z3.BoolVal(False)),
                  R.lepoch(m) > pick([s[("rlep", x)] for x in range(n)], R.to(m), z3.IntVal(0)))
    stray = z3.And(exists, s[("lai",)][m], R.tid(m) == s[("tid",)], R.to(m) != R.leader(m), takes,
                   pick([z3.Not(c) for c in current], R.leader(m), z3.BoolVal(False)))
    parts.append(z3.ForAll([m], z3.Implies(stray, uncommitted)))
    for b in range(n):
        lead = z3.And(current[b], s[("role", b)] == LEADER)
        named = pick([s[("risr", b, x)] for x in range(n)], R.leader(m), z3.BoolVal(True))
        parts.append(z3.ForAll([m], z3.Implies(z3.And(stray, lead, R.lepoch(m) > s[("rlep", b)]), named)))
    # two incarnations share no value
    slots = _incarnation_slots(shape, s)
    for k, (p1, t1, v1) in enumerate(slots):
        parts += [z3.Implies(z3.And(p1, p2, t1 != t2), v1 != v2) for p2, t2, v2 in slots[k + 1:]]
    # so a follower of a stray leader that holds a record, or fetches past one, left no value
    # unproduced; and a fetch in its follower's epoch is of its fetching from that leader
    for x in range(n):
        for ld in range(n):
            if ld != x:
                astray = z3.And(exists, current[x], s[("role", x)] == FOLLOWER, s[("rl", x)] == ld, z3.Not(current[ld]))
                parts.append(z3.Implies(z3.And(astray, s[("fs", x)] == FETCHING, s[("leo", x)] >= 1),
                                        _values_spent(shape, s)))
                ours = z3.And(exists, current[x], s[("fk", x, ld)] == REQ, s[("ftid", x, ld)] == s[("tid",)],
                              z3.Not(current[ld]))
                parts.append(z3.Implies(z3.And(ours, s[("fo", x, ld)] >= 1), _values_spent(shape, s)))
                mine = z3.And(exists, current[x], s[("fk", x, ld)] != EMPTY, s[("ftid", x, ld)] == s[("tid",)],
                              s[("fe", x, ld)] == s[("rlep", x)], s[("role", x)] == FOLLOWER)
                parts.append(z3.Implies(mine, z3.And(s[("fs", x)] == FETCHING, s[("rl", x)] == ld)))
    return z3.And(parts)


def _values_spent(shape: Shape, s: dict) -> Term:
    """Every value the configuration has has been produced: no leader appends again."""
    return s[("produced",)] == shape.r


def _incarnation_slots(shape: Shape, s: dict) -> list[tuple[Term, Term, Term]]:
    """Every record anywhere, as (present, topic id of its incarnation, value)."""
    out = []
    for b in range(shape.n):
        out += [(i < s[("leo", b)], s[("rtid", b)], s[("val", b, i)]) for i in range(shape.r)]
        for ld in range(shape.n):
            if ld != b:
                out += [(z3.And(s[("fk", b, ld)] == RESP, i < s[("frl", b, ld)]), s[("ftid", b, ld)], s[("frv", b, ld, i)])
                        for i in range(shape.r)]
    return out


def _astray(shape: Shape, s: dict, b: int) -> Term:
    """With topic deletions, in the current incarnation's view: a follower of b may hold a
    log that is no prefix of b's, or fetch in an epoch b has not reached, having truncated
    against b's replica of an older incarnation (``stray_leaders_commit_nothing``) -- but
    then every value is produced and b's log (empty since it took the incarnation) stays
    empty while it fetches from no leader, so b answers the follower's fetch out of range
    and the follower truncates to nothing.  (False without deletions.)"""
    if not shape.topic or shape.reassign:
        return z3.BoolVal(False)
    return z3.And(_values_spent(shape, s), s[("leo", b)] == 0, z3.Not(_fetching(s, b)))


def _fetching(s: dict, b: int) -> Term:
    """b fetches from a leader (so its log may grow though no leader appends)."""
    return z3.And(s[("role", b)] == FOLLOWER, s[("fs", b)] == FETCHING, s[("rl", b)] != NO_LEADER)


def _uncommitted(shape: Shape, s: dict) -> Term:
    """Nothing is committed."""
    return z3.And([s[("cmt", o, v)] == 0 for o in range(shape.r) for v in range(1, shape.r + 1)])


def lemma_removed_replicas_stay_out(shape: Shape, s: dict, moves: int | None = 1) -> Term:
    """With one reassignment (``moves``, the configuration's bound, which the durability
    proof keeps): a broker is outside the AR only once the move is done, and stays out --
    no LeaderAndISR is sent to it again, nor is it in the ISR (which is within the AR).  A
    reassignment's StopReplica (with delete, of a leader epoch) goes only to such a
    broker, while it is up, and no LeaderAndISR on its way to the broker would overtake it:
    each is of an older controller (the StopReplica's acceptance makes it stale), or of the
    StopReplica's controller and an older leader epoch (the channel delivers it first).  So
    the replica it deletes was out of the ISR and will never lead nor follow again.  (True
    of a shape without reassignment; more moves than one may bring a removed replica back,
    and this is not asked of them.)"""
    if not shape.reassign or moves != 1:
        return z3.BoolVal(True)
    n, R, T = shape.n, shape.req, shape.stop
    moving = z3.Or([s[("rar", x)] for x in range(n)])
    done = z3.And(s[("reas",)] == 1, z3.Not(moving))
    parts = [s[("reas",)] >= 0, s[("reas",)] <= 1, z3.Implies(moving, s[("reas",)] == 1)]
    parts += [z3.Implies(s[("rar", x)], s[("ar", x)]) for x in range(n)]
    parts += [z3.Implies(z3.Not(s[("ar", x)]), done) for x in range(n)]
    for b in range(n):
        q, m = z3.Const(f"q_removal{b}", T), z3.Const(f"q_removal_lai{b}", R)
        parts.append(z3.ForAll([q], z3.Implies(z3.And(s[("stops", b)][q], T.sdel(q)), z3.And(
            done, z3.Not(s[("ar", b)]), s[("st", b)] != DOWN))))
        parts.append(z3.ForAll([q, m], z3.Implies(z3.And(s[("stops", b)][q], T.sdel(q), s[("lai",)][m], R.to(m) == b),
            z3.And(R.cepoch(m) <= T.scepoch(q), z3.Implies(R.cepoch(m) == T.scepoch(q), R.lepoch(m) < T.slepoch(q))))))
    return z3.And(parts)


def lemma_follower_prefix(shape: Shape, s: dict) -> Term:
    """What a leader knows of a follower's LEO is the end of a prefix of the leader's log
    that the follower holds: the follower fetched there, from this leader, in its epoch."""
    parts = []
    for b in range(shape.n):
        for x in range(shape.n):
            if x == b:
                continue
            fl = s[("fleo", b, x)]
            known = z3.And(s[("role", b)] == LEADER, fl != UNKNOWN, _replicating(shape, s, x))
            same = [z3.Implies(i < fl, _entries_equal(s, x, b, i)) for i in range(shape.r)]
            parts.append(z3.Implies(known, z3.And(fl <= s[("leo", x)], fl <= s[("leo", b)], *same)))
    return z3.And(parts)


def _serving(s: dict, b: int) -> Term:
    """b's log is the log of the leader of its epoch: it leads, or it led ZooKeeper's current
    epoch and is down or has given up (its log is as it left it)."""
    return z3.Or(s[("role", b)] == LEADER,
                 z3.And(s[("role", b)] == NONE, s[("ldr",)] == b, s[("rlep", b)] == s[("lep",)]))


def _slots(shape: Shape, s: dict) -> list[tuple[Term, Term, Term, Term]]:
    """Every record anywhere, as (present, offset, value, epoch): a log's and a fetch
    response's (at the response's offset onwards)."""
    out = []
    for b in range(shape.n):
        out += [(i < s[("leo", b)], z3.IntVal(i), s[("val", b, i)], s[("ep", b, i)]) for i in range(shape.r)]
        for ld in range(shape.n):
            if ld != b:
                out += [(z3.And(s[("fk", b, ld)] == RESP, i < s[("frl", b, ld)]), s[("fo", b, ld)] + i,
                         s[("frv", b, ld, i)], s[("fre", b, ld, i)]) for i in range(shape.r)]
    return out


def _prefix(shape: Shape, s: dict, x: int, b: int, upto: Term) -> Term:
    """x holds b's log below ``upto``."""
    return z3.And(upto <= s[("leo", x)], upto <= s[("leo", b)],
                  *[z3.Implies(i < upto, _entries_equal(s, x, b, i)) for i in range(shape.r)])


def lemma_values_placed_once(shape: Shape, s: dict) -> Term:
    """A value is written once, by one leader at one offset: wherever it is (a log, a fetch
    response, the committed records) it has that offset and that epoch; and an offset and an
    epoch fix the value (one leader per epoch writes each offset once).  A later value need
    not have a newer epoch: a replaced leader appends in its old one."""
    slots = _slots(shape, s)
    parts = []
    for k, (p1, o1, v1, e1) in enumerate(slots):
        for p2, o2, v2, e2 in slots[k + 1:]:
            both = z3.And(p1, p2)
            parts.append(z3.Implies(z3.And(both, v1 == v2), z3.And(o1 == o2, e1 == e2)))
            parts.append(z3.Implies(z3.And(both, o1 == o2, e1 == e2), v1 == v2))
        for o in range(shape.r):
            for v in range(1, shape.r + 1):
                c = s[("cmt", o, v)]
                parts.append(z3.Implies(z3.And(p1, v1 == v, c != 0), z3.And(o1 == o, e1 == c)))
    for o in range(shape.r):
        for v in range(1, shape.r + 1):
            for o2 in range(shape.r):
                if o2 != o:
                    parts.append(z3.Not(z3.And(s[("cmt", o, v)] != 0, s[("cmt", o2, v)] != 0)))
    return z3.And(parts)


def lemma_log_order(shape: Shape, s: dict) -> Term:
    """A log's values increase with their offsets, and its epochs never decrease; a fetch
    response's records continue its follower's log in that order."""
    parts = [z3.Implies(j < s[("leo", b)], s[("val", b, i)] < s[("val", b, j)])
             for b in range(shape.n) for i in range(shape.r) for j in range(i + 1, shape.r)]
    for x in range(shape.n):  # a fetch response's records continue its follower's log in order
        for b in range(shape.n):
            if x == b:
                continue
            resp, fo, frl = s[("fk", x, b)] == RESP, s[("fo", x, b)], s[("frl", x, b)]
            for i in range(shape.r):
                later = s[("frv", x, b, i)]
                parts += [z3.Implies(z3.And(resp, i < frl, o < fo), s[("val", x, o)] < later) for o in range(shape.r)]
                parts += [z3.Implies(z3.And(resp, j < frl), later < s[("frv", x, b, j)]) for j in range(i + 1, shape.r)]
                parts += [z3.Implies(z3.And(resp, i < frl, o < fo), s[("ep", x, o)] <= s[("fre", x, b, i)]) for o in range(shape.r)]
                parts += [z3.Implies(z3.And(resp, j < frl), s[("fre", x, b, i)] <= s[("fre", x, b, j)]) for j in range(i + 1, shape.r)]
    return z3.And(*parts, prop_log_epochs_monotonic(shape, s))


def lemma_leader_epoch_newest(shape: Shape, s: dict) -> Term:
    """No record is yet of the epoch a request on its way would make a broker leader in; and
    one of ZooKeeper's current epoch was written by ZooKeeper's leader, in that epoch."""
    R = shape.req
    m = z3.Const("q_new", R)
    slots = _slots(shape, s)
    parts = []
    for b in range(shape.n):
        parts.append(z3.ForAll([m], z3.Implies(_would_lead(shape, s, m, b), z3.And([z3.Implies(p, e != R.lepoch(m)) for p, _, _, e in slots]))))
    rl = pick([s[("rlep", b)] for b in range(shape.n)], s[("ldr",)], z3.IntVal(-1))
    parts += [z3.Implies(z3.And(p, e == s[("lep",)]), rl == s[("lep",)]) for p, _, _, e in slots]
    return z3.And(parts)


def lemma_leader_holds_its_epoch(shape: Shape, s: dict) -> Term:
    """A serving leader's log holds every record of its own epoch, wherever it is."""
    parts = []
    for b in range(shape.n):
        for p, o, v, e in _slots(shape, s):
            mine = [z3.And(o == i, i < s[("leo", b)], s[("val", b, i)] == v) for i in range(shape.r)]
            parts.append(z3.Implies(z3.And(_serving(s, b), p, e == s[("rlep", b)]), z3.Or(mine)))
    return z3.And(parts)


def lemma_followers_follow_zk(shape: Shape, s: dict) -> Term:
    """A follower follows another broker, and in ZooKeeper's current epoch ZooKeeper's leader."""
    return z3.And([z3.And(z3.Implies(z3.And(s[("role", b)] == FOLLOWER, s[("rlep", b)] == s[("lep",)]), s[("rl", b)] == s[("ldr",)]),
                          z3.Implies(s[("role", b)] == FOLLOWER, s[("rl", b)] != b))
                   for b in range(shape.n)])


def lemma_fetches_follow_leaders(shape: Shape, s: dict) -> Term:
    """A follower fetches only from a broker that has led its epoch (it truncated against it
    as leader), and a fetch carries an epoch that broker has reached, a request one its
    follower has too; a leader knows the LEO only of a follower that has reached its epoch."""
    parts = []
    for x in range(shape.n):
        for b in range(shape.n):
            if x == b:
                continue
            fetching = z3.And(s[("role", x)] == FOLLOWER, s[("fs", x)] == FETCHING, s[("rl", x)] == b)
            fk, fe = s[("fk", x, b)], s[("fe", x, b)]
            known = z3.And(s[("role", b)] == LEADER, s[("fleo", b, x)] != UNKNOWN)  # x fetched in b's epoch
            # (with deletions: unless x truncated against b's replica of an older incarnation,
            # and b, which has since taken the current one, maybe in an older epoch, is astray)
            ahead, behind = z3.BoolVal(False), z3.BoolVal(False)
            if shape.topic and not shape.reassign:
                idle = z3.Not(_fetching(s, b))
                ahead = z3.And(fk == REQ, idle, z3.Or(_prefix(shape, s, x, b, s[("fo", x, b)]), _astray(shape, s, b)))
                behind = z3.And(idle, z3.Or(_prefix(shape, s, x, b, s[("leo", x)]), z3.And(_astray(shape, s, b), _uncommitted(shape, s))))
            reached = z3.Or(s[("rlep", b)] >= s[("rlep", x)], behind)
            parts += [z3.Implies(fetching, reached), z3.Implies(known, s[("rlep", x)] >= s[("rlep", b)]),
                      z3.Implies(fk != EMPTY, z3.Or(fe <= s[("rlep", b)], ahead)),
                      z3.Implies(fk == REQ, fe <= s[("rlep", x)])]
    return z3.And(parts)

def lemma_fetching_follower_prefix(shape: Shape, s: dict) -> Term:
    """A follower fetching from its leader, in the epoch that leader serves, holds a prefix of
    the leader's log (its truncation left no record the leader lacks)."""
    parts = []
    for x in range(shape.n):
        for b in range(shape.n):
            if x != b:
                on = z3.And(s[("role", x)] == FOLLOWER, s[("fs", x)] == FETCHING, s[("rl", x)] == b,
                            _serving(s, b), s[("rlep", x)] == s[("rlep", b)], _replicating(shape, s, x))
                parts.append(z3.Implies(on, z3.Or(_prefix(shape, s, x, b, s[("leo", x)]),
                                                  z3.And(_astray(shape, s, b), _uncommitted(shape, s)))))
    return z3.And(parts)


def lemma_fetch_prefix(shape: Shape, s: dict) -> Term:
    """A fetch request or response in the epoch its leader serves continues a prefix of the
    leader's log the follower holds (a response with the leader's records after it, and a
    HW up to them); no response its follower will take is out of range, and below its HW
    every record of the log it makes is committed."""
    parts = []
    for x in range(shape.n):
        for b in range(shape.n):
            if x == b:
                continue
            fk, fo, frl, fhw = s[("fk", x, b)], s[("fo", x, b)], s[("frl", x, b)], s[("fhw", x, b)]
            on = z3.And(_serving(s, b), s[("fe", x, b)] == s[("rlep", b)])
            astray = _astray(shape, s, b)
            parts.append(z3.Implies(z3.And(fk == REQ, on, _replicating(shape, s, x)), z3.Or(_prefix(shape, s, x, b, fo), astray)))
            # one its follower will take
            resp = z3.And(fk == RESP, s[("fe", x, b)] == s[("rlep", x)], _replicating(shape, s, x))
            vals, eps = [s[("val", b, j)] for j in range(shape.r)], [s[("ep", b, j)] for j in range(shape.r)]
            recs = [z3.Implies(i < frl, z3.And(s[("frv", x, b, i)] == pick(vals, fo + i, z3.IntVal(0)),
                                               s[("fre", x, b, i)] == pick(eps, fo + i, z3.IntVal(0))))
                    for i in range(shape.r)]
            follows = z3.And(s[("role", x)] == FOLLOWER, s[("rl", x)] == b)
            out_of_range = z3.And(fhw == 0, frl == 0, z3.Implies(follows, z3.And(s[("fs", x)] == FETCHING, astray,
                                                                                 _uncommitted(shape, s))))
            if not shape.topic or shape.reassign:
                out_of_range = z3.BoolVal(False)
            parts.append(z3.Implies(resp, z3.Or(z3.And(s[("ferr", x, b)] == 0, fo <= s[("leo", x)], frl >= 0, fhw <= fo + frl),
                                                out_of_range)))
            parts.append(z3.Implies(z3.And(resp, on), z3.Or(z3.And(_prefix(shape, s, x, b, fo), fo + frl <= s[("leo", b)], *recs),
                                                            out_of_range)))
            for o in range(shape.r):  # the record the response's log has at o, below its HW, is committed
                mine = z3.And(o < fo, *[z3.Implies(s[("val", x, o)] == v, s[("cmt", o, v)] == s[("ep", x, o)])
                                         for v in range(1, shape.r + 1)])
                theirs = [z3.Implies(z3.And(fo + i == o, i < frl, s[("frv", x, b, i)] == v), s[("cmt", o, v)] == s[("fre", x, b, i)])
                          for i in range(shape.r) for v in range(1, shape.r + 1)]
                parts.append(z3.Implies(z3.And(resp, o < fhw), z3.Or(mine, z3.And(o >= fo, *theirs))))
    return z3.And(parts)


def lemma_hw_committed(shape: Shape, s: dict) -> Term:
    """Below a replica's HW every record of its log is committed, so the committed offsets
    are a prefix; and a leader's committed records lie below its HW or its epoch's start."""
    parts = []
    for b in range(shape.n):
        for o in range(shape.r):
            for v in range(1, shape.r + 1):
                parts.append(z3.Implies(z3.And(o < s[("hw", b)], s[("val", b, o)] == v), s[("cmt", o, v)] == s[("ep", b, o)]))
                parts.append(z3.Implies(z3.And(_in_charge(shape, s, b), s[("cmt", o, v)] != 0),
                                        z3.Or(o < s[("hw", b)], o < s[("es", b)])))
    for v in range(1, shape.r + 1):
        for o in range(1, shape.r):
            parts.append(z3.Implies(s[("cmt", o, v)] != 0, z3.Or([s[("cmt", o - 1, w)] != 0 for w in range(1, shape.r + 1)])))
    return z3.And(parts)


def lemma_isr_holds_committed(shape: Shape, s: dict) -> Term:
    """Every member of ZooKeeper's ISR holds every committed record at its offset."""
    parts = []
    for o in range(shape.r):
        for v in range(1, shape.r + 1):
            e = s[("cmt", o, v)]
            for x in range(shape.n):
                parts.append(z3.Implies(z3.And(e != 0, s[("isr", x)]),
                                        z3.And(o < s[("leo", x)], s[("val", x, o)] == v, s[("ep", x, o)] == e)))
    return z3.And(parts)


def lemma_committed_log(shape: Shape, s: dict) -> Term:
    """The committed records form one log: one value at an offset (not implied once a
    replaced leader acts: it need not hold them), and ZooKeeper's ISR, which holds them, is
    never empty (while the topic exists: a deletion forgets its commits)."""
    isr = z3.Or([s[("isr", x)] for x in range(shape.n)])
    if shape.topic:
        isr = z3.Or(isr, z3.Not(z3.Or([s[("ar", x)] for x in range(shape.n)])))
    return z3.And(isr, prop_one_record_per_offset(shape, s))


def lemma_acked_committed(shape: Shape, s: dict) -> Term:
    """An acknowledged write is a committed record."""
    return z3.And([z3.Implies(s[("acked", v)], z3.Or([s[("cmt", o, v)] != 0 for o in range(shape.r)]))
                   for v in range(1, shape.r + 1)])


def truncation_keeps_common_prefix(shape: Shape, s: dict, t: dict) -> Term:
    """KIP-320's truncation, as a step: a follower whose log the leader's extends (both with
    epochs that never decrease, the leader's up to its own) keeps its whole log -- the
    truncation point from the leader's epoch cache is never below the common prefix, so never
    below a committed record.  (That the follower's log *is* such a prefix in every reachable
    state is ``follower_prefix``'s territory, not yet inductive.)"""
    parts = []
    for f in range(shape.n):
        for b in range(shape.n):
            if f == b:
                continue
            fl, bl = s[("leo", f)], s[("leo", b)]
            prefix = z3.And(fl <= bl, *[z3.Implies(i < fl, _entries_equal(s, f, b, i)) for i in range(shape.r)])
            sane = z3.And(prop_log_epochs_monotonic(shape, s),
                          *[z3.Implies(i < bl, s[("ep", b, i)] <= s[("rlep", b)]) for i in range(shape.r)])
            against = z3.And(s[("role", b)] == LEADER, s[("rl", f)] == b, prefix, sane)
            kept = z3.And(t[("leo", f)] == fl,
                          *[z3.Implies(i < fl, z3.And(t[("val", f, i)] == s[("val", f, i)], t[("ep", f, i)] == s[("ep", f, i)]))
                            for i in range(shape.r)])
            parts.append(z3.Implies(against, kept))
    return z3.And(parts)


LEMMAS: dict[str, Callable[[Shape, dict], Term]] = {
    "broker_epochs_issued": lemma_broker_epochs_issued,
    "removed_replicas_stay_out": lemma_removed_replicas_stay_out,
    "incarnation_settled": lemma_incarnation_settled,
    "stray_leaders_commit_nothing": lemma_stray_leaders_commit_nothing,
    "live_is_up": lemma_live_is_up,
    "leader_epochs_positive": lemma_leader_epochs_positive,
    "log_slots_clean": lemma_log_slots_clean,
    "records_not_newer": lemma_records_not_newer,
    "leader_is_zk_leader": lemma_leader_is_zk_leader,
    "leaders_in_distinct_epochs": lemma_leaders_in_distinct_epochs,
    "pending_leadership": lemma_pending_leadership,
    "newer_leaders_in_isr": lemma_newer_leaders_in_isr,
    "epoch_start": lemma_epoch_start,
    "hw_current": lemma_hw_current,
    "values_placed_once": lemma_values_placed_once,
    "log_order": lemma_log_order,
    "leader_epoch_newest": lemma_leader_epoch_newest,
    "leader_holds_its_epoch": lemma_leader_holds_its_epoch,
    "followers_follow_zk": lemma_followers_follow_zk,
    "fetches_follow_leaders": lemma_fetches_follow_leaders,
    "fetching_follower_prefix": lemma_fetching_follower_prefix,
    "fetch_prefix": lemma_fetch_prefix,
    "hw_committed": lemma_hw_committed,
    "follower_prefix": lemma_follower_prefix,
    "isr_holds_committed": lemma_isr_holds_committed,
    "leader_holds_committed": lemma_leader_holds_committed,
    "committed_log": lemma_committed_log,
    "acked_committed": lemma_acked_committed,
}


OF_EVERY_INCARNATION = ("broker_epochs_issued", "removed_replicas_stay_out", "incarnation_settled",
                        "stray_leaders_commit_nothing")
"""The lemmas that speak of the topic's identity itself: stated of the state, not of the
current incarnation's view (``current_view``)."""


GOALS: dict[str, Callable[[Shape, dict], Term]] = {
    "committed_durable": prop_committed_durable,
    "acked_durable": prop_acked_durable,
}


STEPS: dict[str, tuple[Callable[[Shape, dict, dict], Term], tuple[str, ...]]] = {
    # step goal -> (formula, the actions it is a claim about)
    "truncation_keeps_common_prefix": (truncation_keeps_common_prefix, ("truncate",)),
}


USES = {  # which lemmas each formula's proof leans on (all are proved together, by induction)
    "log_slots_clean": ("leader_epochs_positive",),
    "epoch_start": ("records_not_newer",),
    "leader_is_zk_leader": ("live_is_up", "pending_leadership"),
    "leaders_in_distinct_epochs": ("leader_is_zk_leader", "pending_leadership"),
    "pending_leadership": ("leader_is_zk_leader",),
    "newer_leaders_in_isr": ("leader_is_zk_leader", "pending_leadership"),
    "values_placed_once": ("log_slots_clean", "records_not_newer", "leader_epoch_newest", "leader_holds_its_epoch",
                           "fetch_prefix"),
    "log_order": ("values_placed_once", "records_not_newer", "epoch_start", "fetch_prefix"),
    "leader_epoch_newest": ("leader_is_zk_leader", "pending_leadership", "log_slots_clean"),
    "leader_holds_its_epoch": ("leader_epoch_newest", "followers_follow_zk", "fetch_prefix"),
    "fetching_follower_prefix": ("values_placed_once", "log_order", "leader_holds_its_epoch", "fetch_prefix"),
    "fetch_prefix": ("fetching_follower_prefix", "fetches_follow_leaders", "hw_committed"),
    "hw_committed": ("fetch_prefix", "values_placed_once", "epoch_start", "leader_holds_committed"),
    "follower_prefix": ("fetching_follower_prefix", "fetch_prefix", "removed_replicas_stay_out"),
    "isr_holds_committed": ("leader_is_zk_leader", "newer_leaders_in_isr", "hw_current", "follower_prefix",
                            "hw_committed", "values_placed_once"),
    "leader_holds_committed": ("isr_holds_committed", "newer_leaders_in_isr", "hw_current", "epoch_start",
                               "pending_leadership", "fetch_prefix", "follower_prefix"),
    "committed_log": ("isr_holds_committed", "leader_holds_committed", "hw_committed"),
    "acked_committed": ("log_slots_clean",),
    "committed_durable": ("isr_holds_committed",),
    "acked_durable": ("acked_committed", "isr_holds_committed"),
}
