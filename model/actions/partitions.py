"""Partitions added to and removed from the topic (seed 000 H)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.actions.common import (
    acting_controller,
    added,
    max_broker_epoch,
    set_znode,
    shutting_down,
)
from model.actions.entry import Args, Coverage, Emitted, Entry, Knob, Supported, Traced, Unsupported
from model.actions.topics import assignments, partition_gone, removal_pending
from model.actions.views import nothing_observed
from model.state import NO_LEADER, LeaderAndIsr, PartitionZnode, State, Zk, ever_created
from model.text import brokers_text, leader_text

if TYPE_CHECKING:
    from model.config import Config


PARTITION_CHANGES = Knob("partition_changes", "partitions added or removed", default=0, high=2,
                         help="partitions added to or removed from the topic (seed 000 H) an admin may ask for")


REUSE_PARTITION_IDS = Knob(
    "reuse_partition_ids", "removed partition ids added again", default=0, high=1,
    help="1: an added partition takes the lowest id the topic has no partition under, a removed "
         "one's included, as an administrator re-adding it would (seed 000 H allows it); 0: an id "
         "past every id the topic ever had")


PARTITION_IDENTITY = Knob(
    "partition_identity", "partition identities", default=0, high=1,
    help="1: a partition added under a removed id is a new incarnation: a new id in its znode, "
         "carried by LeaderAndISR, StopReplica and fetches and kept beside the log, as topic ids "
         "are (needs topic ids); 0: its identity is the topic id alone")


def partition_adds_args(s: State, cfg: Config) -> Iterator[tuple]:
    """The id an added partition gets (``added_partition_id``), any non-empty AR (down
    brokers included), any live member of it as leader."""
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.partition_changes >= cfg.partition_changes:
        return
    p = added_partition_id(s.zk, cfg)
    if p is not None and not removal_pending(s, p):
        yield from assignments(s, cfg, c, p)


def partition_removals_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.partition_changes >= cfg.partition_changes:
        return
    yield from ((c, p) for p, zn in enumerate(s.zk.partitions) if zn.ar and not zn.rar)


def fresh_partition_id(zk: Zk) -> int | None:
    """The id an added partition gets: one past every id the topic ever had, created and
    still there or removed (``ever_created``) -- so a removed id is never handed out again,
    and a controller that takes over reads the same answer from ZooKeeper.  None when the
    model has no slot left (``Config.partition_ids``)."""
    had = [p for p, zn in enumerate(zk.partitions) if ever_created(zn)]
    p = max(had, default=-1) + 1
    return p if p < len(zk.partitions) else None


def added_partition_id(zk: Zk, cfg: Config) -> int | None:
    """The id an added partition gets: a fresh one (``fresh_partition_id``), or with
    ``reuse_partition_ids`` the lowest id the topic has no partition under -- a removed
    partition's included, as an administrator naming it in ``/admin/partitions_add/T/p``
    would.  Either way a controller that takes over reads the same answer from ZooKeeper."""
    if not cfg.reuse_partition_ids:
        return fresh_partition_id(zk)
    return next((p for p, zn in enumerate(zk.partitions) if not zn.ar), None)


def added_incarnation(cfg: Config, zn: PartitionZnode) -> int:
    """The identity the added partition's znode records -- the id every LeaderAndISR,
    StopReplica, fetch and AlterPartition of it carries and each replica keeps beside its log
    (the model's ``topic_id``: what brokers compare, ``for_incarnation``).  A fresh id joins
    the topic's incarnation.  A removed id added again is, with ``partition_identity``, a
    new incarnation of the partition: one more than the removed one's, as the czxid of its
    newly created partition znode is larger than any before -- so a broker holding the
    removed partition's log deletes it before acting for the new one, as for a re-created
    topic.  Without it the identity is the topic id alone, the removed partition's too, and
    a broker that missed the removal's StopReplica cannot tell the two apart.  (The topic's
    own id does not move here: partition changes and topic deletions are never combined, so
    one number orders the pair (topic incarnation, partition incarnation).)"""
    return zn.topic_id + 1 if cfg.partition_identity and ever_created(zn) else zn.topic_id


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
    the new partition is told apart from a removed one by its id alone.  With
    ``reuse_partition_ids`` the id may be a removed partition's (``added_partition_id``),
    once its removal is complete (``removal_pending``); what identity it then has is
    ``added_incarnation``'s rule."""
    if not acting_controller(s, c) or s.ghost.partition_changes >= cfg.partition_changes:
        return None
    if not ar or any(b < 0 or b >= cfg.brokers for b in ar) or tuple(sorted(set(ar))) != ar:
        return None
    if p != added_partition_id(s.zk, cfg) or removal_pending(s, p):
        return None  # the partition exists, was removed (ids not reused), is not next, or is going
    zn = s.zk.partitions[p]
    isr = tuple(b for b in ar if b in s.zk.live and b not in shutting_down(s))
    if leader not in isr:
        return None
    znode = PartitionZnode(leader, 1, isr, zn.zk_version + 1, ar, (), added_incarnation(cfg, zn))
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


NOT_IN_Z3 = Unsupported("partitions added and removed are not encoded (its partitions always exist)")


def _add_text(args: Args, before: State, after: State) -> str:
    c, p, ar, _ = args
    zn = after.zk.partitions[p]
    again = f" again (a removed id; identity {zn.topic_id})" if ever_created(before.zk.partitions[p]) else ""
    return (f"controller {c} adds partition {p}{again} with AR {brokers_text(ar)} (init_leaders): leader "
            f"{leader_text(zn.leader)}, epoch {zn.leader_epoch}, ISR {brokers_text(zn.isr)}; LeaderAndISR to AR")


def _add_event(args: Args, before: State, after: State) -> Emitted:
    c, p, ar, _ = args
    return Emitted(c, {"topic": "t", "partitions": {str(p): list(ar)}}, zk=True)


ADD_PARTITIONS = Entry(
    "add_partitions", add_partitions, partition_adds_args,
    section="000 H", impl="impl.node.controller.Controller._on_partitions_add", trace=Traced("partitions_added"),
    describe=_add_text, view=nothing_observed, event=_add_event,
    coverage=Coverage(native=Supported("native/partitions.c"), z3=NOT_IN_Z3,
                      judge=Supported("the added partition's elect_leader (reason init) starts its life, as a new "
                                      "topic's; its partitions_added is the same step seen again"),
                      driver=Supported("an added partition with one replica: the implementation's follower "
                                       "fetches every partition it follows in one request, so only partition 0 "
                                       "may have followers")),
    explored=False, knob=PARTITION_CHANGES, modifiers=(REUSE_PARTITION_IDS, PARTITION_IDENTITY),
)


def _remove_text(args: Args, before: State, after: State) -> str:
    c, p = args
    zb = before.zk.partitions[p]
    live = tuple(b for b in zb.ar if b in before.zk.live)
    down = tuple(b for b in zb.ar if b not in before.zk.live)
    return (f"controller {c} removes partition {p}: StopReplica(delete) to {brokers_text(live)}"
            + (f", nothing to {brokers_text(down)} (down)" if down else ""))


def _remove_event(args: Args, before: State, after: State) -> Emitted:
    c, p = args
    return Emitted(c, {"topic": "t", "partitions": [p]}, zk=True)


REMOVE_PARTITIONS = Entry(
    "remove_partitions", remove_partitions, partition_removals_args,
    section="000 H", impl="impl.node.controller.Controller._on_partitions_remove",
    trace=Traced("partitions_removed"),
    describe=_remove_text, view=nothing_observed, event=_remove_event,
    coverage=Coverage(native=Supported("native/partitions.c"), z3=NOT_IN_Z3,
                      judge=Supported("taken at the first StopReplica(delete) a replica records, as a topic "
                                      "deletion; its partitions_removed is the same step seen again (or the step "
                                      "itself, if every replica was down)"),
                      driver=Supported("the topic's last partition too: the topic stays with no partitions, "
                                       "and a partition added later takes a fresh id")),
    explored=False, knob=PARTITION_CHANGES,
)


ENTRIES = (ADD_PARTITIONS, REMOVE_PARTITIONS)
KNOBS = (PARTITION_CHANGES, REUSE_PARTITION_IDS, PARTITION_IDENTITY)
