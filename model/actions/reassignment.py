"""Replica reassignment (seed 000 F): the controller's Reassignment Agent."""

from __future__ import annotations

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
    stopped_replica,
    stops_controlling,
    topic_deleted,
)
from model.config import Config
from model.state import (
    EPOCH_DURING_DELETE,
    UP,
    LeaderAndIsr,
    PartitionZnode,
    State,
    StopReplica,
)


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
    s = set_znode(s, p, zn._replace(ar=ar, rar=rar))
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in rar:
        sent = added(sent, LeaderAndIsr(to, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent, ghost=ghost)


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
    around 3.1-3.2.2, and the topic path is written in the same ZooKeeper multi)."""
    if not acting_controller(s, c):
        return None
    zn = s.zk.partitions[p]
    rar = zn.rar
    if not rar or not set(rar) <= set(zn.isr) or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    live_rar = [b for b in rar if b in s.zk.live]
    if leader not in live_rar or (zn.leader in live_rar and leader != zn.leader):
        return None
    isr = tuple(b for b in zn.isr if b in rar)
    znode = PartitionZnode(leader, zn.leader_epoch + 1, isr, zn.zk_version + 1, rar, (), zn.topic_id)
    s = set_znode(s, p, znode)
    mbe = max_broker_epoch(s.zk)
    cepoch = s.zk.controller_epoch
    sent = s.leader_and_isr
    for to in rar:
        sent = added(sent, LeaderAndIsr(to, p, leader, znode.leader_epoch, isr, znode.zk_version, cepoch, mbe, zn.topic_id))
    stops = s.stop_replica
    for b in zn.ar:
        if b not in rar:
            stops = added(stops, StopReplica(b, p, znode.leader_epoch, cepoch, zn.topic_id))
    return s._replace(leader_and_isr=sent, stop_replica=stops)


def stop_replica(s: State, cfg: Config, m: StopReplica) -> State | None:
    """Seed 000 C ``on_StopReplicaCommand``: the broker stops its replica of the partition
    and deletes it (a controlled shutdown's StopReplica, Kafka 2.7's without delete, only
    stops it).  A request from an older controller epoch (seed 002), or older than
    the LeaderAndISR the replica has since taken, is refused -- either way it is consumed."""
    b, p = m.to, m.partition
    broker = s.brokers[b]
    if m not in s.stop_replica or broker.status != UP:
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
