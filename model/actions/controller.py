"""The controller: its election and resignation, leader elections, the startups it owes.

Seed 000 A (``on_broker_change``), D (controller failover); seed 002 (controller epochs: a
superseded controller backs off); seed 003 (a registration gets the LeaderAndISR of its
partitions with the new max broker epoch).  Every leader change is one conditional
ZooKeeper write and the LeaderAndISR requests it sends (``write_and_send``), so all of them
are traced as ``elect_leader`` with a ``reason`` saying which one it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.actions.common import (
    acting_controller,
    added,
    brokers_args,
    max_broker_epoch,
    put_at,
    removed,
    set_znode,
    shutting_down,
    stop_removed_replicas,
    stops_controlling,
)
from model.actions.entry import (
    DRIVEN,
    SILENT,
    Args,
    Coverage,
    Emitted,
    Entry,
    Supported,
    Traced,
    View,
)
from model.actions.views import (
    always,
    leader_write_view,
    nothing_observed,
    unclean_election,
    written,
    znode_event,
)
from model.state import NO_LEADER, UP, LeaderAndIsr, PartitionZnode, State, Zk

if TYPE_CHECKING:
    from model.config import Config


def elections_args(s: State, cfg: Config) -> Iterator[tuple]:
    """Each election's (controller, partition, leader) and, with
    ``Config.offline_replica_writes``, each dead replica's removal from the ISR, its
    ``offline`` argument the replica (``offline_replica_write``)."""
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p in range(len(s.zk.partitions)):
        for leader, _isr, _unclean in election_outcomes(s.zk, p, cfg, shutting_down(s)):
            yield (c, p, leader)
        for r in offline_replicas(s.zk, p, cfg):
            yield (c, p, offline_replica_write(s.zk.partitions[p], r)[0], r)


def startups_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c != NO_LEADER:
        yield from ((c, b) for b in s.brokers[c].new_brokers)


def controller_elect(s: State, cfg: Config, b: int) -> State | None:
    """Seed 000 D / seed 002: /controller is gone, so broker b creates it, bumps
    /controller_epoch, and sends every partition's current LeaderAndISR with INIT."""
    broker = s.brokers[b]
    if s.zk.controller != NO_LEADER or broker.status != UP or b not in s.zk.live:
        return None
    epoch = s.zk.controller_epoch + 1
    zk = s.zk._replace(controller=b, controller_epoch=epoch)
    brokers = put_at(s.brokers, b, broker._replace(is_controller=True, controller_epoch=epoch, new_brokers=()))
    sent = s.leader_and_isr
    mbe = max_broker_epoch(zk)
    for p, zn in enumerate(zk.partitions):
        for to in zn.ar:
            sent = added(sent, LeaderAndIsr(to, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, epoch, mbe, zn.topic_id))
    return s._replace(zk=zk, brokers=brokers, leader_and_isr=sent)


def controller_resign(s: State, cfg: Config, b: int) -> State | None:
    """Seed 002: a broker that acted as controller sees /controller name someone else (or
    its epoch overtaken) and backs off."""
    broker = s.brokers[b]
    if broker.status != UP or not broker.is_controller:
        return None
    if s.zk.controller == b and s.zk.controller_epoch == broker.controller_epoch:
        return None
    return s._replace(brokers=put_at(s.brokers, b, stops_controlling(broker)))


def election_outcomes(zk: Zk, p: int, cfg: Config, stopping: tuple[int, ...] = ()) -> list[tuple[int, tuple[int, ...], bool]]:
    """Seed 000 A 3.2 -- the new (leader, ISR, unclean?) choices for partition p, or none if
    the live brokers leave it unchanged:

    * the leader is alive: it stays, and the ISR loses its dead members;
    * else any live ISR member may lead, with the live ISR;
    * else, only with unclean election enabled, any live assigned replica, alone in the ISR
      ("potential data loss in this case");
    * else the leader becomes -1 and the ISR is kept, so the last in-sync replica can lead
      again when it returns.

    With ``Config.offline_replica_writes`` (Kafka's controller) only the elections stay
    here: a dead replica leaves the ISR by a write of its own (``offline_replica_write``), so
    a live leader's ISR is not rewritten here and a partition with no one to elect is left
    as it is.
    With ``Config.reassign_phases`` a reassignment's removed replica still in the ISR, once its
    completion moved the leader into RAR, is not elected with (``removal_owed``): it leaves
    the ISR by a write of its own, as a dead one does.

    ``stopping`` are the brokers shutting down (``shutting_down``): a new leader is never one
    of them, nor does one stay in the new ISR (Kafka 2.7's ``liveBrokerIds`` leaves them
    out); a live leader stays even if it is stopping -- it could not leave.
    """
    zn = zk.partitions[p]
    if not zn.ar:  # a deleted topic's partition: nothing to elect
        return []
    live = zk.live
    removing = removal_owed(zn, cfg)
    live_isr = tuple(b for b in zn.isr if b in live and (not removing or b in zn.rar))
    if zn.leader != NO_LEADER and zn.leader in live:
        if len(live_isr) == len(zn.isr) or cfg.offline_replica_writes:
            return []
        return [(zn.leader, live_isr, False)]
    electable = tuple(b for b in live_isr if b not in stopping)
    if electable:
        return [(b, electable, False) for b in electable]
    if cfg.unclean:
        live_ar = [b for b in zn.ar if b in live and b not in stopping]
        if live_ar:
            return [(b, (b,), True) for b in live_ar]
    if zn.leader == NO_LEADER or cfg.offline_replica_writes:
        return []
    return [(NO_LEADER, zn.isr, False)]


NO_OFFLINE = -1
"""``elect_leader``'s ``offline`` argument when its write is an election, not a dead
replica taken out of the ISR."""


def offline_replicas(zk: Zk, p: int, cfg: Config) -> tuple[int, ...]:
    """With ``Config.offline_replica_writes``, the replicas Kafka's controller may take out
    of p's ISR, each by a write of its own: the ISR members whose broker is dead.  In any
    order -- Kafka takes them in the order of a map keyed by replica -- and at any time
    before or after an election: a new controller takes every dead replica offline before
    it elects (``ReplicaStateMachine.startup`` runs before ``PartitionStateMachine.startup``),
    a controller that sees brokers die elects first (``KafkaController.onReplicasBecomeOffline``).
    A reassignment's removed replicas still in the ISR once its target leads
    (``removal_owed``) are taken offline the same way, dead or alive: Kafka's
    ``onPartitionReassignment`` moves them to OfflineReplica, one write each."""
    zn = zk.partitions[p]
    if not cfg.offline_replica_writes or not zn.ar:
        return ()
    removing = removal_owed(zn, cfg)
    return tuple(b for b in zn.isr if b not in zk.live or (removing and b not in zn.rar))


def offline_replica_write(zn: PartitionZnode, r: int) -> tuple[int, tuple[int, ...]]:
    """Kafka's controller taking dead replica r offline (``ReplicaStateMachine``'s
    OfflineReplica transition, ``doRemoveReplicasFromIsr``, 3.9 branch): the leader it
    writes -- NoLeader if r led, else the leader as it is, dead or alive -- and the ISR: r
    left out, unless r is its only member (``if (isr.size == 1) isr``: the ISR never
    becomes empty, and a dead last member stays in it).  The write bumps the leader epoch
    (``newLeaderAndIsr``) even when it changes nothing else."""
    leader = NO_LEADER if zn.leader == r else zn.leader
    return leader, zn.isr if len(zn.isr) == 1 else tuple(b for b in zn.isr if b != r)


def removal_owed(zn: PartitionZnode, cfg: Config) -> bool:
    """``Config.reassign_phases``: a reassignment whose target is in the ISR and leads (its
    completion's write made) has its removed replicas still in the ISR to take out."""
    return bool(cfg.reassign_phases and zn.rar and zn.leader in zn.rar and set(zn.rar) <= set(zn.isr)
                and not set(zn.isr) <= set(zn.rar))


def end_reassignment(s: State, p: int, isr: tuple[int, ...]) -> State:
    """The write that takes a reassignment's removed replicas out of the ISR (``removal_owed``)
    also ends the move: AR := RAR -- Kafka writes ``/brokers/topics/<t>`` with the target
    alone right after -- and the removed replicas are sent StopReplica (delete) with the
    epoch of that write, the one ``write_and_send`` is about to make."""
    zn = s.zk.partitions[p]
    if not set(isr) <= set(zn.rar):
        return s
    s = set_znode(s, p, zn._replace(ar=zn.rar, rar=()))
    return stop_removed_replicas(s, p, tuple(b for b in zn.ar if b not in zn.rar), zn.leader_epoch + 1)


def write_and_send(s: State, p: int, leader: int, isr: tuple[int, ...]) -> State:
    """The controller's conditional write of p's znode with leader_epoch + 1 (its version
    moves on), then LeaderAndISR to every assigned replica with the max broker epoch -- but
    a broker shutting down only if it leads (Kafka 2.7 sends LeaderAndISR to live replicas,
    which leave out the brokers shutting down: as a follower it would fetch again and
    rejoin the ISR it has left)."""
    zn = s.zk.partitions[p]
    # a reassignment in progress stays so: its request lives in its own admin path
    znode = zn._replace(leader=leader, leader_epoch=zn.leader_epoch + 1, isr=isr, zk_version=zn.zk_version + 1)
    stopping = shutting_down(s)
    s = set_znode(s, p, znode)
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in zn.ar:
        if to in stopping and to != leader:
            continue
        sent = added(sent, LeaderAndIsr(to, p, leader, znode.leader_epoch, isr, znode.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent)


def elect_leader(s: State, cfg: Config, c: int, p: int, leader: int, offline: int = NO_OFFLINE) -> State | None:
    """Seed 000 A ``on_broker_change`` (and ``init_leaders``) for partition p: write the new
    leader, ISR and leader_epoch + 1 conditionally on zk_version, then send LeaderAndISR to
    the assigned replicas.  With ``offline`` (``Config.offline_replica_writes`` only) the
    write is Kafka's taking that dead replica out of the ISR (``offline_replica_write``),
    ``leader`` the leader it leaves."""
    if not acting_controller(s, c):
        return None
    zn = s.zk.partitions[p]
    if zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    if offline != NO_OFFLINE:
        if offline not in offline_replicas(s.zk, p, cfg):
            return None
        left, isr = offline_replica_write(zn, offline)
        if left != leader:
            return None
        if removal_owed(zn, cfg):
            s = end_reassignment(s, p, isr)
        return write_and_send(s, p, leader, isr)
    for new_leader, isr, unclean in election_outcomes(s.zk, p, cfg, shutting_down(s)):
        if new_leader != leader:
            continue
        if removal_owed(zn, cfg):
            s = end_reassignment(s, p, isr)
        s = write_and_send(s, p, leader, isr)
        if unclean:
            s = s._replace(ghost=s.ghost._replace(unclean=added(s.ghost.unclean, p)))
        return s
    return None


def on_broker_startup(s: State, cfg: Config, c: int, b: int) -> State | None:
    """Kafka's ``onBrokerStartup``: when a broker (re-)registers, the controller sends it the
    current LeaderAndISR of every partition assigned to it, carrying the new max broker
    epoch -- requests sent to its previous incarnation are fenced (seed 003).

    Once per registration (``Broker.new_brokers``, filled by ``_announce``): the
    broker-change event names b among its new brokers, and the controller handles it once.
    A guard of "b is live" alone let a controller send b the LeaderAndISR of every later ISR
    version as well -- a behaviour neither Kafka nor ``impl.node.controller`` has, and the source
    of a three-broker state space that did not end (docs/checking.md, "Three-broker searches")."""
    if not acting_controller(s, c) or b not in s.brokers[c].new_brokers:
        return None
    s = s._replace(brokers=put_at(s.brokers, c, s.brokers[c]._replace(new_brokers=removed(s.brokers[c].new_brokers, b))))
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for p, zn in enumerate(s.zk.partitions):
        if b in zn.ar:
            sent = added(sent, LeaderAndIsr(b, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent)


def _no_event(args: Args, before: State, after: State) -> Emitted | None:
    return None


def _elect_controller_view(args: Args, before: State, after: State) -> View:
    return {"controller_epoch": after.zk.controller_epoch}


def _elect_controller_event(args: Args, before: State, after: State) -> Emitted:
    return Emitted(args[0], {"controller_epoch": after.zk.controller_epoch}, zk=True)


CONTROLLER_ELECT = Entry(
    "controller_elect", controller_elect, brokers_args,
    section="000 D", impl="impl.node.controller.Controller._elect", trace=Traced("controller_elect"),
    describe=lambda args, before, after: (
        f"broker {args[0]} creates /controller and becomes controller (controller epoch {after.zk.controller_epoch}); sends INIT LeaderAndISR"),
    view=_elect_controller_view, event=_elect_controller_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
)


def _resign_view(args: Args, before: State, after: State) -> View:
    return {"controller_epoch": before.brokers[args[0]].controller_epoch}


def _resign_event(args: Args, before: State, after: State) -> Emitted:
    return Emitted(args[0], {"controller_epoch": before.brokers[args[0]].controller_epoch})


CONTROLLER_RESIGN = Entry(
    "controller_resign", controller_resign, brokers_args,
    section="002", impl="impl.node.controller.Controller._resign", trace=Traced("controller_resign"),
    describe=lambda args, before, after: f"broker {args[0]} sees another controller and stops acting as controller",
    view=_resign_view, event=_resign_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    silent=always,  # no ZK write, no change of role: a zombie noticing it was superseded
)


def _elect_text(args: Args, before: State, after: State) -> str:
    c, p = args[:2]
    if len(args) > 3 and args[3] != NO_OFFLINE:
        return f"controller {c} takes dead broker {args[3]} out of partition {p}'s ISR: {written(after, p)}"
    unclean = " -- UNCLEAN election, possible data loss" if p in after.ghost.unclean and p not in before.ghost.unclean else ""
    return f"controller {c} writes partition {p}: {written(after, p)} and sends LeaderAndISR{unclean}"


ELECT_LEADER = Entry(
    "elect_leader", elect_leader, elections_args,
    section="000 A", impl="impl.node.controller.Controller._on_broker_change", trace=Traced("elect_leader"),
    describe=_elect_text, view=leader_write_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "broker_change",
                                                  unclean_election(args[1], before, after)),
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
)


ON_BROKER_STARTUP = Entry(
    "on_broker_startup", on_broker_startup, startups_args,
    section="003", impl="impl.node.controller.Controller._on_broker_change", trace=SILENT,
    describe=lambda args, before, after: (
        f"controller {args[0]} sees broker {args[1]} registered and sends it the current LeaderAndISR"),
    view=nothing_observed, event=_no_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported("as a silent internal step"),
                      driver=DRIVEN),
    silent=always,  # implementations record no control request sent
)


ENTRIES = (CONTROLLER_ELECT, CONTROLLER_RESIGN, ELECT_LEADER, ON_BROKER_STARTUP)
KNOBS = ()
