"""Partitions added to and removed from an existing topic (seed 000 H).

Which partitions exist is the znode's AR, as for a deleted topic: a partition with an empty
AR has no replicas, no leader and no ISR -- it was never added, or it was removed.  Every
rule that reads the AR then does the right thing for it with no case of its own: no
election touches it (``election_outcomes``), a broker that starts deletes its local copy
(seed 000 E 4, ``broker_restart``), ``expand_isr`` admits nobody.  The model's tuple of
partitions stays fixed (``Config.partitions``: the most the topic can have), so states keep
one shape and the symmetry and native encodings need no case for a partition count.

A removed partition's id is never added again (``Ghost.removed``): the design does not say
what an added partition that reuses a removed id would be, and the topic's identity is the
topic's, not the partition's -- a broker that missed the removal's StopReplica would find its
old log under the same topic id.  Kafka never removes partitions at all.
"""

from __future__ import annotations

from model.actions.common import (
    acting_controller,
    added,
    max_broker_epoch,
    set_znode,
    shutting_down,
)
from model.actions.topics import partition_gone
from model.config import Config
from model.state import (
    LeaderAndIsr,
    PartitionZnode,
    State,
)


def add_partitions(s: State, cfg: Config, c: int, p: int, ar: tuple[int, ...], leader: int) -> State | None:
    """Seed 000 H ``on_partitions_add``: an administrator writes
    ``/admin/partitions_add/T/p`` -> AR; the controller "determine[s] the set of partitions to
    be added", "call[s] init_leaders(set_p)" -- a live AR member not shutting down leads,
    every such member is in the ISR, leader epoch 1 as a new partition's (B) -- deletes the
    PartitionAdd path and updates the topic path with the new AR, then sends LeaderAndISR to
    AR.  One step: the writes are one fenced ZooKeeper multi (as ``impl.node.controller``
    does; done in the design's three writes, a controller failing between them leaves a
    leader without an assignment).  The partition joins the topic's incarnation: its topic
    id is the topic's."""
    if not acting_controller(s, c) or s.ghost.partition_changes >= cfg.partition_changes:
        return None
    if not ar or any(b < 0 or b >= cfg.brokers for b in ar) or tuple(sorted(set(ar))) != ar:
        return None
    zn = s.zk.partitions[p]
    if zn.ar or p in s.ghost.removed:
        return None  # the partition exists, or was removed: ids are never reused
    isr = tuple(b for b in ar if b in s.zk.live and b not in shutting_down(s))
    if leader not in isr:
        return None
    znode = PartitionZnode(leader, 1, isr, zn.zk_version + 1, ar, (), zn.topic_id)
    s = set_znode(s, p, znode)
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in ar:
        sent = added(sent, LeaderAndIsr(to, p, leader, 1, isr, znode.zk_version, s.zk.controller_epoch, mbe, znode.topic_id))
    ghost = s.ghost._replace(led=added(s.ghost.led, (p, 1, leader)), partition_changes=s.ghost.partition_changes + 1)
    return s._replace(leader_and_isr=sent, ghost=ghost)


def remove_partitions(s: State, cfg: Config, c: int, p: int) -> State | None:
    """Seed 000 H ``on_partition_remove``: an administrator writes
    ``/admin/partitions_remove/T/p``; the controller "send[s] a StopReplicaCommand for each
    partition to the affected brokers" -- with delete, to the live replicas: a broker that
    is down hears nothing and deletes its copy when it starts (E 4) -- deletes the
    PartitionRemove path and updates the topic path without p.  One step, as a deletion
    (``partition_gone``): the StopReplica requests are in flight, their delivery is a step
    of each broker (``stop_replica``).

    The partition's records go with it, by design: an acknowledged write of a removed
    partition is not lost, it is removed; what must hold is that no leader serves one again
    (``deleted_not_served``).  A partition being reassigned is not removed (the agent owns
    it until the move completes)."""
    if not acting_controller(s, c) or s.ghost.partition_changes >= cfg.partition_changes:
        return None
    zn = s.zk.partitions[p]
    if not zn.ar or zn.rar:
        return None
    s = partition_gone(s, p)
    ghost = s.ghost._replace(partition_changes=s.ghost.partition_changes + 1, removed=added(s.ghost.removed, p))
    return s._replace(ghost=ghost)
