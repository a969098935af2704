"""Controlled shutdown (seed 000 A): the controller moves leadership off a broker that asked
to stop and stops its follower replicas, then the broker exits cleanly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.actions.brokers import process_ends
from model.actions.common import acting_controller, added, brokers_args, put_at, removed
from model.actions.controller import write_and_send
from model.actions.entry import DRIVEN, Args, Coverage, Entry, Knob, Supported, Traced
from model.actions.views import (
    harness_event,
    leader_write_view,
    nothing_observed,
    unclean_election,
    written,
    znode_event,
)
from model.state import NO_LEADER, UP, State, StopReplica

if TYPE_CHECKING:
    from model.config import Config


SHUTDOWNS = Knob("max_shutdowns", "controlled shutdowns", default=0, failure=True,
                 help="controlled shutdowns (each then a clean stop), in all")


def shutdowns_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.shutdowns >= cfg.max_shutdowns:
        return
    stopping = s.brokers[c].shutting_down
    for p, zn in enumerate(s.zk.partitions):
        yield from ((c, p, b, zn.leader) for b in zn.ar if b not in zn.isr and b != zn.leader)  # nothing to write
        for b in zn.isr:
            moves = zn.leader == b or zn.leader in stopping  # see controlled_shutdown
            for leader in (zn.isr if moves else (zn.leader,)):
                if leader != b and not (moves and leader in stopping):
                    yield (c, p, b, leader)


def controlled_shutdown(s: State, cfg: Config, c: int, p: int, b: int, leader: int) -> State | None:
    """Controlled shutdown as Kafka 2.7 does it (beside seed 000): before broker b stops, the
    controller notes that b is shutting down (``Broker.shutting_down``, Kafka's
    ``shuttingDownBrokerIds``: no election chooses it from now on), takes b out of partition
    p's ISR and, if b led p -- or p's leader is another broker shutting down, which could not
    leave before -- elects a live ISR member not shutting down in its place: a conditional
    write with leader_epoch + 1, then LeaderAndISR to the replicas not shutting down, like
    ``elect_leader``.  b, now a follower of p, gets StopReplica without delete instead: it
    stops fetching, so its leader does not put it back into the ISR it has just left -- unless
    a reassignment names it (its LeaderAndISR goes to every replica named), and then no
    election chooses it all the same.  The last in-sync replica is left in place: moving it
    would lose the partition.

    A follower of p outside its ISR is stopped all the same (Kafka 2.7 takes every replica
    the broker follows offline): StopReplica without delete, and nothing to write -- the
    step an implementation records only as the broker's ``stop_replica``."""
    if not acting_controller(s, c) or s.brokers[b].status != UP or b not in s.zk.live:
        return None
    if s.ghost.shutdowns >= cfg.max_shutdowns:
        return None
    zn = s.zk.partitions[p]
    stopping = added(s.brokers[c].shutting_down, b)
    if b not in zn.isr and b in zn.ar and b != zn.leader and leader == zn.leader:
        s = s._replace(brokers=put_at(s.brokers, c, s.brokers[c]._replace(shutting_down=stopping)))
        stop = StopReplica(b, p, zn.leader_epoch, s.zk.controller_epoch, zn.topic_id, delete=False)
        return s._replace(stop_replica=added(s.stop_replica, stop))
    if b not in zn.isr or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    isr = removed(zn.isr, b)
    if zn.leader in stopping:
        if leader not in isr or leader not in s.zk.live or leader in stopping:
            return None
    elif leader != zn.leader or not isr:
        return None
    s = s._replace(brokers=put_at(s.brokers, c, s.brokers[c]._replace(shutting_down=stopping)))
    s = write_and_send(s, p, leader, isr)
    zn = s.zk.partitions[p]
    stop = StopReplica(b, p, zn.leader_epoch, s.zk.controller_epoch, zn.topic_id, delete=False)
    return s._replace(stop_replica=added(s.stop_replica, stop))


def broker_stop(s: State, cfg: Config, b: int) -> State | None:
    """A clean stop after controlled shutdown: like a crash (memory gone, disk kept,
    session closed), counted against the shutdown bound rather than the crash bound."""
    broker = s.brokers[b]
    if broker.status != UP or s.ghost.shutdowns >= cfg.max_shutdowns:
        return None
    if any(b in zn.isr and len(zn.isr) > 1 for zn in s.zk.partitions):
        return None  # controlled shutdown first moves it out of every ISR it can leave
    s = process_ends(s, cfg, b)
    return s._replace(ghost=s.ghost._replace(shutdowns=s.ghost.shutdowns + 1))


STOP = Entry(
    "broker_stop", broker_stop, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.stop_broker", trace=Traced("broker_stop"),
    describe=lambda args, before, after: f"broker {args[0]} stops cleanly after its controlled shutdown",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    knob=SHUTDOWNS, freezing=True,
)


def _shutdown_text(args: Args, before: State, after: State) -> str:
    c, p, b, _ = args
    if _nothing_written(args, before, after):
        return f"controller {c} stops broker {b}'s replica of partition {p} for its controlled shutdown (it is not in the ISR)"
    return f"controller {c} moves partition {p} off broker {b} for its controlled shutdown: {written(after, p)}"


def _nothing_written(args: Args, before: State, after: State) -> bool:
    """A controlled shutdown of a follower outside the ISR: its StopReplica only, no write."""
    return before.zk.partitions[args[1]] == after.zk.partitions[args[1]]


CONTROLLED_SHUTDOWN = Entry(
    "controlled_shutdown", controlled_shutdown, shutdowns_args,
    section="000 A", impl="impl.node.controller.Controller._on_controlled_shutdown",
    trace=Traced("elect_leader", ("controlled_shutdown",)),
    describe=_shutdown_text, view=leader_write_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "controlled_shutdown",
                                                  unclean_election(args[1], before, after)),
    coverage=Coverage(native=Supported(), z3=Supported(),
                      judge=Supported(), driver=DRIVEN),
    knob=SHUTDOWNS,
    silent=_nothing_written,  # a follower outside the ISR: no elect_leader to record
)


ENTRIES = (CONTROLLED_SHUTDOWN, STOP)
KNOBS = (SHUTDOWNS,)
