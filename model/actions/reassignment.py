"""Replica reassignment (seed 000 F): the Reassignment Agent's start and completion, and the
StopReplica requests that reassignment, topic deletion, partition removal and controlled
shutdown send."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.actions.commands import request_addressee, waits_in_channel
from model.actions.common import (
    acting_controller,
    added,
    deleted_replica,
    drop_responses_to,
    max_broker_epoch,
    put_at,
    removed,
    replica,
    set_replica,
    set_znode,
    shutting_down,
    stop_removed_replicas,
    stopped_replica,
    stops_controlling,
    topic_deleted,
)
from model.actions.entry import (
    DRIVEN,
    Args,
    Coverage,
    Emitted,
    Entry,
    Knob,
    Supported,
    Traced,
    View,
)
from model.actions.partitions import PARTITION_CHANGES
from model.actions.shutdown import SHUTDOWNS
from model.actions.topics import DELETIONS
from model.actions.views import leader_write_view, znode_event
from model.state import (
    DELETED,
    EPOCH_DURING_DELETE,
    NO_LEADER,
    UP,
    LeaderAndIsr,
    PartitionZnode,
    State,
    StopReplica,
)
from model.text import brokers_text, leader_text

if TYPE_CHECKING:
    from model.config import Config


REASSIGNMENTS = Knob("reassignments", "reassignments", default=0,
                     help="partition reassignments (seed 000 F) an admin may ask for")


def reassign_starts_args(s: State, cfg: Config) -> Iterator[tuple]:
    """A pending reassignment restarted at INIT, or -- within the bound -- a new one to any
    non-empty replica set (the current AR too: a reordering, see ``reassign_start``)."""
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.rar:
            yield (c, p, zn.rar)
        elif s.ghost.reassignments < cfg.reassignments:
            for mask in range(1, 1 << cfg.brokers):
                yield (c, p, tuple(b for b in range(cfg.brokers) if mask >> b & 1))


def reassign_completions_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.rar:
            yield from ((c, p, b) for b in zn.rar if b in s.zk.live and b not in shutting_down(s))


def stop_requests_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.stop_replica)


def reassign_start(s: State, cfg: Config, c: int, p: int, rar: tuple[int, ...]) -> State | None:
    """Seed 000 F, a partition in INIT state: "issue LeaderAndISR command to the brokers in
    RAR (to start bootstrapping new replicas)", then "mark partition p as in IN_PROGRESS".

    The administrative process's write of ``/admin/partitions_reassigned/T/P`` -> RAR (not a
    protocol step: any replica set may be asked for) and the agent picking it up are taken
    together.  While the move is in progress the topic path records AR := AR + RAR, as
    the design's "ISR == AR+RAR" test presumes and Kafka does, so that elections, startup
    recovery and ISR expansion (which only admits assigned replicas) know the new replicas;
    that write is to the topic path, not the leaderAndISR znode, whose version stays put.
    The same RAR may be started again: a new controller restarts pending reassignments at
    INIT (seed 000 D 7).  RAR may name the replicas AR already has: the model's AR is a set,
    so such a move is Kafka's reordering of the replicas (a new preferred leader) -- nothing
    to copy and nobody to stop, but it still completes through a new leader epoch."""
    if not acting_controller(s, c) or not rar or any(b < 0 or b >= cfg.brokers for b in rar):
        return None
    zn = s.zk.partitions[p]
    if not zn.ar:  # the topic is deleted
        return None
    ghost = s.ghost
    if not zn.rar:
        if ghost.reassignments >= cfg.reassignments:
            return None
        ghost = ghost._replace(reassignments=ghost.reassignments + 1)
    elif zn.rar != rar:
        return None
    ar = tuple(sorted(set(zn.ar) | set(rar)))
    if cfg.reassign_phases:
        return _kafka_start(s._replace(ghost=ghost), cfg, p, ar, rar)
    s = set_znode(s, p, zn._replace(ar=ar, rar=rar))
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in rar:
        sent = added(sent, LeaderAndIsr(to, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent, ghost=ghost)


def _kafka_start(s: State, cfg: Config, p: int, ar: tuple[int, ...], rar: tuple[int, ...]) -> State | None:
    """``Config.reassign_phases``: Kafka's ``onPartitionReassignment`` writes the assignment
    (AR := AR + RAR), and -- the target not yet all in the ISR -- bumps the leader epoch for
    the same leader and ISR (``updateLeaderEpochAndSendRequest``, a conditional write of the
    state znode) and sends that LeaderAndISR to every replica of AR + RAR.  A target already
    in the ISR (a reordering, a shrink) goes straight to the completion: no epoch, no
    request."""
    zn = s.zk.partitions[p]
    if set(rar) <= set(zn.isr):
        return set_znode(s, p, zn._replace(ar=ar, rar=rar))
    if zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    znode = zn._replace(ar=ar, rar=rar, leader_epoch=zn.leader_epoch + 1, zk_version=zn.zk_version + 1)
    s = set_znode(s, p, znode)
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in ar:
        sent = added(sent, LeaderAndIsr(to, p, zn.leader, znode.leader_epoch, zn.isr, znode.zk_version,
                                        s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent)


def reassign_complete(s: State, cfg: Config, c: int, p: int, leader: int) -> State | None:
    """Seed 000 F, a partition IN_PROGRESS: "read the ISR from the LeaderAndISR path in ZK;
    if ISR == AR+RAR // all replicas have caught up ... switch the current ISR and AR to
    RAR": conditionally update the leaderAndISR znode (3.2.2), "send a LeaderAndISR command
    to inform the leader of the new ISR" (3.2.3), "send a StopReplica command to the
    brokers in the current AR (but not in RAR)" (3.2.4), "change AR to RAR" (3.2.5) and
    delete the admin path (3.2.6).

    The design waits for the whole of AR+RAR; what the move needs (and Kafka waits for) is
    RAR ⊆ ISR -- a replica about to be removed need not be in sync.  The design leaves the
    leader alone; if it is not in RAR it would lead a partition it no longer replicates,
    so a live member of RAR takes over (every one is in the ISR: a clean election).  Any
    leader change needs a new leader epoch, and Kafka bumps it on every controller write of
    the znode, so the write is ``leader_epoch + 1`` with ISR := ISR ∩ RAR, conditional on
    the version read (one step, as ``elect_leader``: the design asks for a retry loop
    around 3.1-3.2.2, and the topic path is written in the same ZooKeeper multi).

    A broker shutting down does not lead, nor keep its lead: Kafka's reassignment election
    takes the first RAR member in the ISR among ``liveReplicas``, which leave out the
    brokers shutting down (``isReplicaOnline`` without them), and it elects afresh when the
    current leader is one of them.

    With ``Config.reassign_phases`` (Kafka's controller) the write keeps the ISR -- a new
    leader from RAR (``ReassignPartitionLeaderElectionStrategy``: ``newLeader`` keeps the ISR),
    or the leader's epoch bumped (``updateLeaderEpochAndSendRequest``) -- and leaves the
    assignment (AR + RAR, as ``/brokers/topics/<t>`` says until the end) and RAR pending:
    the removed replicas still in the ISR leave it by a write of their own, an
    ``elect_leader`` (Kafka's replica state machine taking them to OfflineReplica), which
    ends the move and sends them StopReplica.  Like a new controller resuming the move,
    this write may come again.  With none of them in the ISR (a move that only adds, or
    removes replicas already out of it) this write ends the move itself."""
    if not acting_controller(s, c):
        return None
    zn = s.zk.partitions[p]
    rar = zn.rar
    if not rar or not set(rar) <= set(zn.isr) or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    live_rar = [b for b in rar if b in s.zk.live and b not in shutting_down(s)]
    if leader not in live_rar or (zn.leader in live_rar and leader != zn.leader):
        return None
    owed = cfg.reassign_phases and not set(zn.isr) <= set(rar)
    if owed:
        # Kafka's: the ISR, the assignment (AR + RAR, as /brokers/topics/<t> still says) and
        # the move in progress stay; the removed replicas leave the ISR by a write of their
        # own (model.actions.controller.election_outcomes), which ends the move
        znode = zn._replace(leader=leader, leader_epoch=zn.leader_epoch + 1, zk_version=zn.zk_version + 1)
    elif cfg.reassign_phases:  # none to take out of the ISR: Kafka writes the target and is done
        znode = zn._replace(leader=leader, leader_epoch=zn.leader_epoch + 1, zk_version=zn.zk_version + 1,
                            ar=rar, rar=())
    else:
        znode = PartitionZnode(leader, zn.leader_epoch + 1, tuple(b for b in zn.isr if b in rar),
                               zn.zk_version + 1, rar, (), zn.topic_id)
    s = set_znode(s, p, znode)
    mbe = max_broker_epoch(s.zk)
    cepoch = s.zk.controller_epoch
    sent = s.leader_and_isr
    for to in rar:
        sent = added(sent, LeaderAndIsr(to, p, leader, znode.leader_epoch, znode.isr, znode.zk_version, cepoch, mbe,
                                        zn.topic_id))
    if owed:
        return s._replace(leader_and_isr=sent)
    s = s._replace(leader_and_isr=sent)
    return stop_removed_replicas(s, p, tuple(b for b in zn.ar if b not in rar), znode.leader_epoch)


def stop_replica(s: State, cfg: Config, m: StopReplica) -> State | None:
    """Seed 000 C ``on_StopReplicaCommand``: the broker stops its replica of the partition
    and deletes it (a controlled shutdown's StopReplica, Kafka 2.7's without delete, only
    stops it).  A request from an older controller epoch (seed 002), or older than
    the LeaderAndISR the replica has since taken, is refused -- either way it is consumed."""
    b, p = m.to, m.partition
    broker = s.brokers[b]
    if m not in s.stop_replica or broker.status != UP or waits_in_channel(s, cfg, m):
        return None
    s = s._replace(stop_replica=removed(s.stop_replica, m))
    r = replica(s, b, p)
    if cfg.fence_controller_epoch and m.controller_epoch < broker.controller_epoch:
        return s
    deletion = m.leader_epoch == EPOCH_DURING_DELETE
    if deletion and cfg.topic_ids and m.topic_id < r.topic_id:
        return s  # the deletion of an older incarnation: this replica is a newer one's
    if not deletion and m.leader_epoch < r.leader_epoch:
        return s
    if m.controller_epoch > broker.controller_epoch:  # seed 002: a newer controller exists
        s = s._replace(brokers=put_at(s.brokers, b, stops_controlling(broker._replace(controller_epoch=m.controller_epoch))))
    if not m.delete:  # a controlled shutdown's follower: it stops fetching, keeps its log
        return set_replica(drop_responses_to(s, b, p), b, p, stopped_replica(cfg, r))
    gone = topic_deleted(cfg, r, max(r.topic_id, m.topic_id)) if deletion else deleted_replica(cfg, r)
    return set_replica(drop_responses_to(s, b, p), b, p, gone)


def _stop_replica_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.to, m.partition), replica(after, m.to, m.partition)
    if m.leader_epoch == EPOCH_DURING_DELETE:
        if m.controller_epoch < before.brokers[m.to].controller_epoch:
            return (f"broker {m.to} refuses the deletion of p{m.partition} from controller epoch "
                    f"{m.controller_epoch} (it knows controller epoch {before.brokers[m.to].controller_epoch})")
        if ra.role != DELETED:
            return f"broker {m.to} refuses the deletion of p{m.partition}'s topic id {m.topic_id} (its replica is of topic id {rb.topic_id})"
        return f"broker {m.to} deletes its replica of p{m.partition} (StopReplica for the deletion of topic id {m.topic_id})"
    if m.controller_epoch < before.brokers[m.to].controller_epoch or m.leader_epoch < rb.leader_epoch:
        return f"broker {m.to} refuses a stale StopReplica(p{m.partition}, epoch {m.leader_epoch}, controller epoch {m.controller_epoch})"
    if not m.delete:
        return f"broker {m.to} stops fetching p{m.partition} for its controlled shutdown (StopReplica without delete, epoch {m.leader_epoch})"
    return f"broker {m.to} stops its replica of p{m.partition} and deletes it (StopReplica, epoch {m.leader_epoch})"


def _stop_replica_view(args: Args, before: State, after: State) -> View:
    """Whether the replica was deleted: a controlled shutdown's StopReplica only stops it."""
    return {"delete": args[0].delete} if args else {}


def _only_consumed(args: Args, before: State, after: State) -> bool:
    """A StopReplica refused (an older controller's, an older incarnation's, an older
    epoch's) or meeting nothing to stop: only the request is gone.  An implementation
    records no ``stop_replica`` of the partition then -- this one a cluster-wide
    ``request_rejected`` for an older controller's, nothing for the others -- so the judge
    may take it unrecorded, and a re-creation it held back (``removal_pending``) follows."""
    return after == before._replace(stop_replica=after.stop_replica)


STOP_REPLICA = Entry(
    "stop_replica", stop_replica, stop_requests_args,
    section="000 C", impl="impl.node.broker.Broker.on_stop_replica", trace=Traced("stop_replica"),
    describe=_stop_replica_text, view=_stop_replica_view,
    event=lambda args, before, after: Emitted(args[0].to, {"delete": args[0].delete, "reason": "stop_replica"}),
    coverage=Coverage(native=Supported("a controlled shutdown's, a topic deletion's and a reassignment's (native/shutdown.c)"),
                      z3=Supported("a controlled shutdown's, a topic deletion's and a reassignment's (seed 000 F's, "
                                   "not Kafka's phases): partition removals are not encoded"),
                      judge=Supported("a topic deletion's, a partition removal's and a controlled shutdown's; a reassignment's is replayed or left as recorded only"),
                      driver=DRIVEN),
    explored=False, knob=REASSIGNMENTS, actor=request_addressee, also_enabled_by=(DELETIONS, PARTITION_CHANGES, SHUTDOWNS),
    # a leader answers no fetch of the replica once it is stopped, so the judge must be able
    # to place the fetches it answered silently before the StopReplica (the search's FREEZING)
    freezing=True, silent=_only_consumed,
)


REASSIGNMENT_IN_Z3 = Supported("seed 000 F's (symbolic/reassign.py, on the AR of the topic's identity); "
                               "Kafka's phases (reassign_phases) are refused")


def _reassign_start_text(args: Args, before: State, after: State) -> str:
    c, p, rar = args
    zn = after.zk.partitions[p]
    return (f"controller {c} starts reassigning p{p} to RAR {brokers_text(rar)}: AR := {brokers_text(zn.ar)}, "
            f"sends LeaderAndISR (epoch {zn.leader_epoch}) to RAR")


def _reassign_start_view(args: Args, before: State, after: State) -> View:
    """The agent's IN_PROGRESS: RAR, and AR as it was before AR+RAR."""
    return {"rar": list(after.zk.partitions[0].rar), "ar": list(before.zk.partitions[0].ar)}


def _reassign_start_event(args: Args, before: State, after: State) -> Emitted:
    c, p, rar = args
    return Emitted(c, {"state": "IN_PROGRESS", "rar": list(rar), "ar": list(before.zk.partitions[p].ar)}, zk=True)


REASSIGN_START = Entry(
    "reassign_start", reassign_start, reassign_starts_args,
    section="000 F", impl="impl.node.controller.Controller._reassignment_wakeup", trace=Traced("reassignment"),
    describe=_reassign_start_text, view=_reassign_start_view, event=_reassign_start_event,
    coverage=Coverage(native=Supported("native/reassign.c"), z3=REASSIGNMENT_IN_Z3, judge=Supported(), driver=DRIVEN),
    explored=False, knob=REASSIGNMENTS,
)


def _reassign_complete_text(args: Args, before: State, after: State) -> str:
    c, p, _ = args
    zb, zn = before.zk.partitions[p], after.zk.partitions[p]
    gone = tuple(b for b in zb.ar if b not in zn.ar)
    return (
        f"controller {c} completes the reassignment of p{p} (RAR ⊆ ISR): leader {leader_text(zn.leader)}, epoch {zn.leader_epoch}, "
        f"ISR {brokers_text(zn.isr)}, AR {brokers_text(zn.ar)} (zk_version {zn.zk_version}); LeaderAndISR to RAR, StopReplica to {brokers_text(gone)}"
    )


REASSIGN_COMPLETE = Entry(
    "reassign_complete", reassign_complete, reassign_completions_args,
    section="000 F", impl="impl.node.controller.Controller._reassignment_wakeup",
    trace=Traced("elect_leader", ("reassign", "reassignment")),
    describe=_reassign_complete_text, view=leader_write_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "reassign", False),
    coverage=Coverage(native=Supported("native/reassign.c"), z3=REASSIGNMENT_IN_Z3, judge=Supported(), driver=DRIVEN),
    explored=False, knob=REASSIGNMENTS,
)


ENTRIES = (REASSIGN_START, REASSIGN_COMPLETE, STOP_REPLICA)
KNOBS = (REASSIGNMENTS,)
