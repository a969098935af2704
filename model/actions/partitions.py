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
from model.actions.topics import assignments, partition_gone
from model.actions.views import nothing_observed
from model.state import NO_LEADER, LeaderAndIsr, PartitionZnode, State, Zk, ever_created
from model.text import brokers_text, leader_text

if TYPE_CHECKING:
    from model.config import Config


PARTITION_CHANGES = Knob("partition_changes", "partitions added or removed", default=0, high=2,
                         help="partitions added to or removed from the topic (seed 000 H) an admin may ask for")


def partition_adds_args(s: State, cfg: Config) -> Iterator[tuple]:
    """The topic's next fresh partition id (``fresh_partition_id``), any non-empty AR (down
    brokers included), any live member of it as leader."""
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.partition_changes >= cfg.partition_changes:
        return
    p = fresh_partition_id(s.zk)
    if p is not None:
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


NOT_IN_C = Unsupported("partitions added and removed are not ported to native/rules.c (its partitions always exist)")


NOT_IN_Z3 = Unsupported("partitions added and removed are not encoded (its partitions always exist)")


def _add_text(args: Args, before: State, after: State) -> str:
    c, p, ar, _ = args
    zn = after.zk.partitions[p]
    return (f"controller {c} adds partition {p} with AR {brokers_text(ar)} (init_leaders): leader "
            f"{leader_text(zn.leader)}, epoch {zn.leader_epoch}, ISR {brokers_text(zn.isr)}; LeaderAndISR to AR")


def _add_event(args: Args, before: State, after: State) -> Emitted:
    c, p, ar, _ = args
    return Emitted(c, {"topic": "t", "partitions": {str(p): list(ar)}}, zk=True)


ADD_PARTITIONS = Entry(
    "add_partitions", add_partitions, partition_adds_args,
    section="000 H", impl="impl.node.controller.Controller._on_partitions_add", trace=Traced("partitions_added"),
    describe=_add_text, view=nothing_observed, event=_add_event,
    coverage=Coverage(native=NOT_IN_C, z3=NOT_IN_Z3,
                      judge=Supported("the added partition's elect_leader (reason init) starts its life, as a new "
                                      "topic's; its partitions_added is the same step seen again"),
                      driver=Supported("an added partition with one replica: the implementation's follower "
                                       "fetches every partition it follows in one request, so only partition 0 "
                                       "may have followers")),
    explored=False, knob=PARTITION_CHANGES,
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
    coverage=Coverage(native=NOT_IN_C, z3=NOT_IN_Z3,
                      judge=Supported("taken at the first StopReplica(delete) a replica records, as a topic "
                                      "deletion; its partitions_removed is the same step seen again (or the step "
                                      "itself, if every replica was down)"),
                      driver=Supported("the topic's last partition too: the topic stays with no partitions, "
                                       "and a partition added later takes a fresh id")),
    explored=False, knob=PARTITION_CHANGES,
)


ENTRIES = (ADD_PARTITIONS, REMOVE_PARTITIONS)
KNOBS = (PARTITION_CHANGES,)
