"""Topics deleted and created again (seed 000 B, question 5)."""

from __future__ import annotations

from model.actions.common import (
    acting_controller,
    added,
    max_broker_epoch,
    set_znode,
    shutting_down,
)
from model.config import Config
from model.state import (
    EPOCH_DURING_DELETE,
    NO_LEADER,
    LeaderAndIsr,
    PartitionZnode,
    State,
    StopReplica,
)


def delete_topic(s: State, cfg: Config, c: int, p: int) -> State | None:
    """Seed 000 B 2: an administrator deletes the topic; the controller removes its znodes
    and "sends the StopReplicaCommand to all affected brokers" -- the live ones: a broker
    that is down hears nothing, and deletes its copy at startup if the topic is still gone
    (E 4).  The deletion completes at once, as the design has it (Kafka 2.7 waits for every
    replica to confirm).  The znode's version moves on, so a leader's conditional ISR write
    fails; its ids and versions keep counting (the model does not restart zk_version at 0)."""
    if not acting_controller(s, c) or s.ghost.deletions >= cfg.deletions:
        return None
    zn = s.zk.partitions[p]
    if not zn.ar or zn.rar:
        return None
    s = partition_gone(s, p)
    return s._replace(ghost=s.ghost._replace(deletions=s.ghost.deletions + 1))


def partition_gone(s: State, p: int) -> State:
    """Partition p is gone -- its topic deleted (B 2) or the partition removed (H): the
    controller sends StopReplica(delete) to the live replicas of its AR, and the znode loses
    its AR, leader and ISR (a moved version, so a leader's conditional ISR write fails).

    Its records are gone by design, so the history the properties hold durable forgets
    them (commits, acknowledgements, leaders, zombie appends), and every one of them is
    *retired*: no leader may serve one again (``deleted_not_served``)."""
    zn = s.zk.partitions[p]
    cepoch = s.zk.controller_epoch
    stops = s.stop_replica
    for b in zn.ar:
        if b in s.zk.live:
            stops = added(stops, StopReplica(b, p, EPOCH_DURING_DELETE, cepoch, zn.topic_id))
    s = set_znode(s, p, PartitionZnode(NO_LEADER, zn.leader_epoch, (), zn.zk_version + 1, (), (), zn.topic_id))
    g = s.ghost
    retired = set(g.retired)
    retired.update((p, e.value) for br in s.brokers for e in br.replicas[p].log)
    retired.update((p, e.value) for m in s.fetches if m.partition == p for e in m.records)
    ghost = g._replace(
        retired=tuple(sorted(retired)),
        committed=tuple(x for x in g.committed if x[0] != p),
        acked=tuple(x for x in g.acked if x[0] != p),
        led=tuple(x for x in g.led if x[0] != p),
        unclean=tuple(x for x in g.unclean if x != p),
        zombie_appends=tuple(x for x in g.zombie_appends if x[0] != p),
        zombie_commits=tuple(x for x in g.zombie_commits if x[0] != p),
    )
    return s._replace(stop_replica=stops, ghost=ghost)


def create_topic(s: State, cfg: Config, c: int, p: int, ar: tuple[int, ...], leader: int) -> State | None:
    """Seed 000 B 1 and ``init_leaders``: an administrator creates the topic again under the
    same name with an explicit assignment -- any brokers, down ones included (the design's
    "we only assign replicas to live brokers" holds only for automatic assignment).  The
    controller selects "one of the live brokers in AR as the new leader and sets all live
    brokers in AR as the new ISR", writes it with leader epoch 1 -- a new topic's epochs
    start again -- and a new topic id, and sends LeaderAndISR to the assigned brokers.

    The name is free again once the deletion is complete: every live replica it went to has
    answered its StopReplica (the controller's requests to one broker are answered in order,
    so none of them takes the new topic's LeaderAndISR first).  A replica that was down got
    nothing -- the design's gap."""
    if not acting_controller(s, c) or not ar:
        return None
    zn = s.zk.partitions[p]
    if zn.ar or any(m.partition == p and m.leader_epoch == EPOCH_DURING_DELETE for m in s.stop_replica):
        return None  # the topic exists, or its deletion still waits for a live replica's answer
    isr = tuple(b for b in ar if b in s.zk.live and b not in shutting_down(s))
    if leader not in isr:
        return None
    znode = PartitionZnode(leader, 1, isr, zn.zk_version + 1, ar, (), zn.topic_id + 1)
    s = set_znode(s, p, znode)
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in ar:
        sent = added(sent, LeaderAndIsr(to, p, leader, 1, isr, znode.zk_version, s.zk.controller_epoch, mbe, znode.topic_id))
    return s._replace(leader_and_isr=sent, ghost=s.ghost._replace(led=added(s.ghost.led, (p, 1, leader))))
