"""Partitions added to and removed from an existing topic (seed 000 H).

Which partitions exist is the znode's AR, as for a deleted topic: a partition with an empty
AR has no replicas, no leader and no ISR -- it is not created yet, or it was removed.  Every
rule that reads the AR then does the right thing for it with no case of its own: no
election touches it (``election_outcomes``), a broker that starts deletes its local copy
of a removed one (seed 000 E 4, ``broker_restart``), ``expand_isr`` admits nobody.

The model's tuple of partitions has one slot per id the topic can ever have
(``Config.partition_ids``): the ``Config.partitions`` it starts with, then one not created
yet (``model.state.NOT_CREATED``) per partition change the bound allows, for
``add_partitions`` to fill.  A fixed tuple rather than one that grows keeps every state of a
configuration one shape, so the symmetry reduction and the state encodings need no case for
a partition count, and with no partition changes the states are exactly as before.

Partition ids are never reused: an added partition takes a fresh id past every id the topic
ever had (``fresh_partition_id``), read from the topic znode, where a removed partition
keeps its entry (no AR, its last leader epoch).  The design does not say what an added
partition that reuses a removed id would be, and the topic's identity is the topic's, not
the partition's: a broker down during the removal, later named in the new AR, would find its
old log under the same topic id and serve the removed records.  Kafka numbers new
partitions from the current count and never removes any, so it never meets the question.
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
    Zk,
    ever_created,
)


def fresh_partition_id(zk: Zk) -> int | None:
    """The id an added partition gets: one past every id the topic ever had, created and
    still there or removed (``ever_created``) -- so a removed id is never handed out again,
    and a controller that takes over reads the same answer from ZooKeeper.  None when the
    model has no slot left (``Config.partition_ids``)."""
    had = [p for p, zn in enumerate(zk.partitions) if ever_created(zn)]
    p = max(had, default=-1) + 1
    return p if p < len(zk.partitions) else None


def add_partitions(s: State, cfg: Config, c: int, p: int, ar: tuple[int, ...], leader: int) -> State | None:
    """Seed 000 H ``on_partitions_add``: an administrator writes
    ``/admin/partitions_add/T/p`` -> AR; the controller "determine[s] the set of partitions to
    be added", "call[s] init_leaders(set_p)" -- a live AR member not shutting down leads,
    every such member is in the ISR, leader epoch 1 as a new partition's (B) -- deletes the
    PartitionAdd path and updates the topic path with the new AR, then sends LeaderAndISR to
    AR.  One step: the writes are one fenced ZooKeeper multi (as ``impl.node.controller``
    does; done in the design's three writes, a controller failing between them leaves a
    leader without an assignment).  The partition joins the topic's incarnation: its topic
    id is the topic's, which is why its partition id must be fresh (``fresh_partition_id``):
    the new partition is told apart from a removed one by its id alone."""
    if not acting_controller(s, c) or s.ghost.partition_changes >= cfg.partition_changes:
        return None
    if not ar or any(b < 0 or b >= cfg.brokers for b in ar) or tuple(sorted(set(ar))) != ar:
        return None
    if p != fresh_partition_id(s.zk):
        return None  # the partition exists, was removed (ids are never reused), or is not next
    zn = s.zk.partitions[p]
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
