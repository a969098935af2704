"""The safety properties, defined once and used by every checker.

The exhaustive checker (``properties.checkers.bfs``), z3, Hypothesis and the Spark conformance job all
import ``PROPERTIES`` from here.  Each property has a name, a one-sentence statement (its
docstring), a check that returns ``None`` when it holds or a message saying what broke, and
what it reads (``reads``, of ``READS``): the trace judge skips the check after a step that
changed none of it.
State properties look at one state; transition properties (``epoch_monotonic``) at a step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from model.state import DELETED, NO_LEADER, State

UNCLEAN_LABEL = "unclean-election loss"


READS = frozenset({"logs", "leader_log", "epochs", "controllers", "committed", "acked", "led",
                   "zombie_appends", "zombie_commits", "stale_accepts"})
"""What a property may read besides ZooKeeper (which every property may read: a changed
ZooKeeper state always means a full check): "logs" a replica's log or HW, "leader_log" the
log of the partition's leader in ZooKeeper, "epochs" a replica's known leader epoch,
"controllers" a broker's controller flag or epoch; the rest are fields of the ghost history."""


class Property(NamedTuple):
    name: str
    statement: str
    on_transition: bool
    check: Callable[..., str | None]  # (state) or (before, after) -> message | None
    reads: frozenset[str]  # of READS: a step that changes none of them cannot break it


def _values(log: tuple) -> str:
    return "[" + ", ".join(f"{chr(96 + e.value)}@{e.epoch}" for e in log) + "]"


def hw_le_leo(s: State) -> str | None:
    """Every replica's high watermark is at most its log end offset."""
    for b, broker in enumerate(s.brokers):
        for p, r in enumerate(broker.replicas):
            if r.hw > r.leo:
                return f"broker {b} partition {p}: hw={r.hw} > leo={r.leo}"
    return None


def epoch_monotonic_state(s: State) -> str | None:
    """The leader epochs along every log never go backwards."""
    for b, broker in enumerate(s.brokers):
        for p, r in enumerate(broker.replicas):
            for i in range(1, len(r.log)):
                if r.log[i].epoch < r.log[i - 1].epoch:
                    return f"broker {b} partition {p}: log epochs go backwards at offset {i}: {_values(r.log)}"
    return None


def epoch_monotonic(before: State, after: State) -> str | None:
    """ZK leader epochs, /controller_epoch, each broker's known leader epoch and the epochs
    along every log never go backwards, and every leader change in ZK bumps the leader epoch."""
    if after.zk.controller_epoch < before.zk.controller_epoch:
        return f"/controller_epoch went back from {before.zk.controller_epoch} to {after.zk.controller_epoch}"
    for p, (zb, za) in enumerate(zip(before.zk.partitions, after.zk.partitions, strict=True)):
        if za.topic_id != zb.topic_id or not za.ar or not zb.ar:
            # deleted or removed, or created (again): a new topic's or partition's epochs
            # start over -- a removed partition id added again (seed 000 H) included
            continue
        if za.leader_epoch < zb.leader_epoch:
            return f"partition {p}: ZK leader_epoch went back from {zb.leader_epoch} to {za.leader_epoch}"
        if za.leader != zb.leader and za.leader_epoch <= zb.leader_epoch:
            return f"partition {p}: ZK leader changed {zb.leader} -> {za.leader} without a new epoch"
    for b, (bb, ba) in enumerate(zip(before.brokers, after.brokers, strict=True)):
        for p, (rb, ra) in enumerate(zip(bb.replicas, ba.replicas, strict=True)):
            if ra.topic_id != rb.topic_id or ra.role == DELETED:
                continue  # its topic was deleted (and its epoch cache with it) or created again
            if ra.leader_epoch < rb.leader_epoch:
                return f"broker {b} partition {p}: known leader epoch went back from {rb.leader_epoch} to {ra.leader_epoch}"
    return None


def single_committing_leader(s: State) -> str | None:
    """No two brokers ever lead a partition in the same leader epoch, and no two different
    records are ever committed at the same offset."""
    seen: dict[tuple[int, int], int] = {}
    for p, epoch, b in s.ghost.led:
        if seen.setdefault((p, epoch), b) != b:
            return f"partition {p}: brokers {seen[(p, epoch)]} and {b} both led in epoch {epoch}"
    at: dict[tuple[int, int], object] = {}
    for p, offset, entry in s.ghost.committed:
        other = at.setdefault((p, offset), entry)
        if other != entry:
            return f"partition {p}: two records committed at offset {offset}: {_values((other,))} and {_values((entry,))}"
    return None


def _label(s: State, p: int, message: str) -> str:
    return f"{message} [{UNCLEAN_LABEL}]" if p in s.ghost.unclean else message


def committed_durable(s: State) -> str | None:
    """Every committed record stays in the current leader's log at its offset."""
    for p, offset, entry in s.ghost.committed:
        leader = s.zk.partitions[p].leader
        if leader == NO_LEADER:
            continue
        log = s.brokers[leader].replicas[p].log
        if offset >= len(log) or log[offset] != entry:
            return _label(s, p, f"partition {p}: committed {_values((entry,))} at offset {offset} is not in leader {leader}'s log {_values(log)}")
    return None


def replicas_consistent(s: State) -> str | None:
    """Two replicas agree on every offset below the smaller of their high watermarks (two
    replicas of the topic's current incarnation: a deleted one's data is not compared)."""
    for p, zn in enumerate(s.zk.partitions):
        reps = [(b, broker.replicas[p]) for b, broker in enumerate(s.brokers)
                if broker.replicas[p].topic_id == zn.topic_id and broker.replicas[p].role != DELETED]
        for i, (b1, r1) in enumerate(reps):
            for b2, r2 in reps[i + 1 :]:
                upto = min(r1.hw, r2.hw)
                if r1.log[:upto] != r2.log[:upto]:
                    return _label(s, p, f"partition {p}: brokers {b1} {_values(r1.log)} and {b2} {_values(r2.log)} disagree below hw={upto}")
    return None


def isr_well_formed(s: State) -> str | None:
    """In ZooKeeper, the leader is in the ISR and the ISR is within the assigned replicas,
    or the leader is -1."""
    for p, zn in enumerate(s.zk.partitions):
        if zn.leader == NO_LEADER:
            continue
        if zn.leader not in zn.isr or not set(zn.isr) <= set(zn.ar):
            return f"partition {p}: leader={zn.leader} isr={list(zn.isr)} ar={list(zn.ar)}"
    return None


def single_controller(s: State) -> str | None:
    """No two brokers act as controller in the same controller epoch, and no broker acts on
    a request from an older controller epoch or meant for an older incarnation of itself."""
    epochs: dict[int, int] = {}
    for b, broker in enumerate(s.brokers):
        if broker.is_controller and epochs.setdefault(broker.controller_epoch, b) != b:
            return f"brokers {epochs[broker.controller_epoch]} and {b} both act as controller in epoch {broker.controller_epoch}"
    if s.ghost.stale_accepts:
        return f"a broker acted on a control request from an older controller epoch or meant for an older incarnation of itself ({s.ghost.stale_accepts} times)"
    return None


def acked_durable(s: State) -> str | None:
    """An acks=all write acknowledged with ISR >= min.insync.replicas is never lost under
    clean election (a loss after an unclean election is reported, labelled as such).  The
    writes are the current incarnation's: deleting a topic deletes its acknowledged writes.

    Likewise a removed partition's (seed 000 H): its records are gone by design, so an
    acknowledged write of a partition that no longer exists is not "lost" -- the removal
    forgets it (``partition_gone``), and what still must hold of its records is that no
    leader serves them again (``deleted_not_served``).  A partition's id is never added
    again, so no later incarnation of it could be judged by the old acknowledgements."""
    present: dict[int, set[int]] = {}
    for p, value in s.ghost.acked:
        leader = s.zk.partitions[p].leader
        if leader == NO_LEADER:
            continue
        log = s.brokers[leader].replicas[p].log
        if p not in present:
            present[p] = {e.value for e in log}
        if value not in present[p]:
            return _label(s, p, f"partition {p}: acknowledged write {chr(96 + value)} is missing from leader {leader}'s log {_values(log)}")
    return None


def zombie_cannot_commit(s: State) -> str | None:
    """A leader that has been superseded (another broker became leader in a newer epoch)
    never commits a record it accepted afterwards (seed 000, question 3).

    "Commits" means the superseded leader itself moves its high watermark over the record
    (the seed's argument: it would need the ISR, and its ISR update fails on the moved
    zk_version).  Whether such a record may *survive* is a different question: at three
    brokers a follower still in the old epoch can fetch it from the zombie, be elected
    later and commit it in its own, newer term.  That write was never acknowledged, so
    nothing is lost (``acked_durable`` holds); the model shows it
    (tests/model/test_reassignment.py) rather than forbidding it."""
    for p, value in s.ghost.zombie_commits:
        return f"partition {p}: {chr(96 + value)}, written to a superseded leader, was committed by a superseded leader"
    return None


def deleted_not_served(s: State) -> str | None:
    """No leader serves a record of a deleted incarnation of its topic (seed 000, question 5:
    a broker down while its topic was deleted and created again must not bring the old
    records back), nor a record of a removed partition (seed 000 H): the records of both
    are *retired* when the controller removes the znode."""
    if not s.ghost.retired:
        return None
    retired = set(s.ghost.retired)
    for p, zn in enumerate(s.zk.partitions):
        if not zn.ar or zn.leader == NO_LEADER:
            continue
        r = s.brokers[zn.leader].replicas[p]
        if r.topic_id != zn.topic_id or r.role == DELETED:
            continue  # not yet acting for this incarnation: it serves nothing of it
        log = r.log
        old = [e for e in log if (p, e.value) in retired]
        if old:
            return f"partition {p}: leader {zn.leader} serves {_values(tuple(old))} of a deleted incarnation in {_values(log)}"
    return None


PROPERTIES: tuple[Property, ...] = (
    Property("hw_le_leo", hw_le_leo.__doc__ or "", False, hw_le_leo, frozenset({"logs"})),
    # the logs' epochs; ZooKeeper's and the replicas' known leader epochs
    Property("epoch_monotonic", epoch_monotonic.__doc__ or "", True, epoch_monotonic, frozenset({"logs", "epochs"})),
    Property("single_committing_leader", single_committing_leader.__doc__ or "", False, single_committing_leader,
             frozenset({"led", "committed"})),
    Property("committed_durable", committed_durable.__doc__ or "", False, committed_durable,
             frozenset({"committed", "leader_log"})),
    Property("replicas_consistent", replicas_consistent.__doc__ or "", False, replicas_consistent, frozenset({"logs"})),
    Property("isr_well_formed", isr_well_formed.__doc__ or "", False, isr_well_formed, frozenset()),  # ZooKeeper only
    Property("single_controller", single_controller.__doc__ or "", False, single_controller,
             frozenset({"controllers", "stale_accepts"})),
    Property("acked_durable", acked_durable.__doc__ or "", False, acked_durable, frozenset({"acked", "leader_log"})),
    Property("zombie_cannot_commit", zombie_cannot_commit.__doc__ or "", False, zombie_cannot_commit,
             frozenset({"zombie_commits"})),
    Property("deleted_not_served", deleted_not_served.__doc__ or "", False, deleted_not_served,
             frozenset({"retired", "leader_log"})),
)

BY_NAME = {p.name: p for p in PROPERTIES}
STATE_PROPERTIES = tuple(p for p in PROPERTIES if not p.on_transition)
TRANSITION_PROPERTIES = tuple(p for p in PROPERTIES if p.on_transition)


def first_violation(before: State | None, after: State) -> tuple[str, str] | None:
    """(property name, message) of the first property ``after`` (or the step to it) breaks."""
    bad = state_violation(after)
    if bad is None and before is not None:
        bad = transition_violation(before, after)
    return bad


def state_violation(s: State) -> tuple[str, str] | None:
    """(name, message) of the first state property s breaks (the epochs along logs included)."""
    for prop in STATE_PROPERTIES:
        msg = prop.check(s)
        if msg is not None:
            return prop.name, msg
    msg = epoch_monotonic_state(s)
    return ("epoch_monotonic", msg) if msg else None


def transition_violation(before: State, after: State) -> tuple[str, str] | None:
    """(name, message) of the first transition property the step before -> after breaks."""
    for prop in TRANSITION_PROPERTIES:
        msg = prop.check(before, after)
        if msg is not None:
            return prop.name, msg
    return None


def all_violations(before: State | None, after: State) -> list[tuple[str, str]]:
    """Every property ``after`` (or the step to it) breaks, as (name, message) pairs."""
    out = []
    for prop in STATE_PROPERTIES:
        msg = prop.check(after)
        if msg is not None:
            out.append((prop.name, msg))
    msg = epoch_monotonic_state(after)
    if msg is not None:
        out.append(("epoch_monotonic", msg))
    if before is not None:
        for prop in TRANSITION_PROPERTIES:
            msg = prop.check(before, after)
            if msg is not None:
                out.append((prop.name, msg))
    return out
