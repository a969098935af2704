"""Creating and deleting topics (seed 000 B): a deletion stops and deletes every replica,
and the topic is created again under the same name with any assignment."""

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
from model.actions.views import nothing_observed, znode_event, znode_view
from model.state import (
    EPOCH_DURING_DELETE,
    NO_LEADER,
    LeaderAndIsr,
    PartitionZnode,
    State,
    StopReplica,
)
from model.text import brokers_text, leader_text

if TYPE_CHECKING:
    from model.config import Config


DELETIONS = Knob("deletions", "topic deletions", default=0, high=2,
                 help="topic deletions (seed 000 B), each followed by re-creation under the same name with any assignment")


def deletions_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.deletions >= cfg.deletions:
        return
    yield from ((c, p) for p, zn in enumerate(s.zk.partitions) if zn.ar and not zn.rar)


def assignments(s: State, cfg: Config, c: int, p: int) -> Iterator[tuple]:
    """Controller c's choices for a new partition p: any non-empty AR (down brokers included,
    as an administrator's explicit assignment may name them) and any live member as leader."""
    for mask in range(1, 1 << cfg.brokers):
        ar = tuple(b for b in range(cfg.brokers) if mask >> b & 1)
        yield from ((c, p, ar, leader) for leader in ar if leader in s.zk.live)


def creations_args(s: State, cfg: Config) -> Iterator[tuple]:
    """Any non-empty assignment (down brokers included) and any live member of it as leader."""
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.ar:
            continue
        yield from assignments(s, cfg, c, p)


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


def removal_pending(s: State, p: int) -> bool:
    """Whether p's deletion or removal (``partition_gone``) still waits for a live replica's
    answer to its StopReplica(delete): until every one has answered, p's name and id are not
    free again (the controller's requests to one broker are answered in order, so none of
    them takes a new incarnation's LeaderAndISR before it)."""
    return any(m.partition == p and m.leader_epoch == EPOCH_DURING_DELETE for m in s.stop_replica)


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
    if zn.ar or removal_pending(s, p):
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


DELETION_IN_Z3 = Supported("with the topic's identity: the znode's topic id and AR, each replica's and message's topic id, "
                           "the retired records; with topic ids only")


DELETION_JUDGED = Supported("from before the topic exists: its first elect_leader (reason init) creates it, "
                            "later ones re-create it, each incarnation numbered as the trace numbers it")


def _delete_text(args: Args, before: State, after: State) -> str:
    c, p = args
    zb = before.zk.partitions[p]
    live = tuple(b for b in zb.ar if b in before.zk.live)
    down = tuple(b for b in zb.ar if b not in before.zk.live)
    return (f"controller {c} deletes the topic of p{p} (topic id {zb.topic_id}): StopReplica(delete) to {brokers_text(live)}"
            + (f", nothing to {brokers_text(down)} (down)" if down else ""))


def _delete_event(args: Args, before: State, after: State) -> Emitted:
    c, p = args
    return Emitted(c, {"topic": "t", "partitions": [p], "topic_id": before.zk.partitions[p].topic_id}, zk=True)


DELETE_TOPIC = Entry(
    "delete_topic", delete_topic, deletions_args,
    section="000 B", impl="impl.node.controller.Controller._delete_topic", trace=Traced("topic_deleted"),
    describe=_delete_text, view=nothing_observed, event=_delete_event,
    coverage=Coverage(native=Supported(), z3=DELETION_IN_Z3, judge=DELETION_JUDGED, driver=DRIVEN),
    explored=False, knob=DELETIONS,
)


def _create_text(args: Args, before: State, after: State) -> str:
    c, p, ar, _ = args
    zn = after.zk.partitions[p]
    return (f"controller {c} creates the topic again (topic id {zn.topic_id}) with AR {brokers_text(ar)}: leader "
            f"{leader_text(zn.leader)}, epoch {zn.leader_epoch}, ISR {brokers_text(zn.isr)}; LeaderAndISR to AR")


def _create_view(args: Args, before: State, after: State) -> View:
    """The new znode, and the assignment (``_ar``: an ``elect_leader``'s ``replicas``)."""
    return {**znode_view(before, after, 0), "_ar": list(args[2])}


CREATE_TOPIC = Entry(
    "create_topic", create_topic, creations_args,
    section="000 B", impl="impl.node.controller.Controller._on_topic_change", trace=Traced("elect_leader", ("init",)),
    describe=_create_text, view=_create_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "init", False),
    coverage=Coverage(native=Supported(), z3=DELETION_IN_Z3, judge=DELETION_JUDGED, driver=DRIVEN),
    explored=False, knob=DELETIONS,
)


ENTRIES = (DELETE_TOPIC, CREATE_TOPIC)
KNOBS = (DELETIONS,)
