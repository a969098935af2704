"""Preferred-replica election (an admin's request): leadership moves back to the first
replica of the assignment that is alive and in the ISR."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.actions.common import acting_controller, shutting_down
from model.actions.controller import write_and_send
from model.actions.entry import DRIVEN, Args, Coverage, Entry, Knob, Supported, Traced
from model.actions.views import leader_write_view, written, znode_event
from model.preferred import preferred_leader
from model.state import NO_LEADER, State

if TYPE_CHECKING:
    from model.config import Config


PREFERRED_ELECTIONS = Knob("preferred_elections", "preferred-replica elections", default=0,
                           help="preferred-replica elections an admin may ask for")


def reads_broker_order(s: State, cfg: Config) -> bool:
    """Whether a preferred-replica election may still happen from s.  The preferred replica
    is the lowest broker id of the (sorted) AR, so while one may happen broker ids are not
    interchangeable: renaming brokers changes which replica an election moves the
    leadership to, and a symmetry reduction must keep the naming as it is."""
    return s.ghost.preferred_elections < cfg.preferred_elections


def preferred_elections_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.preferred_elections >= cfg.preferred_elections:
        return
    yield from ((c, p) for p in range(len(s.zk.partitions)))


def preferred_election(s: State, cfg: Config, c: int, p: int) -> State | None:
    """An administrator asks for a preferred-replica election of partition p (seed 000's
    topic path: "the first replica is the preferred replica"); the controller moves the
    leadership back to it -- only if it is alive, in the ISR and not already leading, so the
    move is a clean election and loses no committed record.  The ISR stays as it is; the
    write is a conditional one with leader_epoch + 1, then LeaderAndISR, like
    ``elect_leader``.  The model's AR is a sorted tuple, so its preferred replica is the
    lowest broker id assigned.  A broker shutting down is not electable (Kafka's
    ``preferredReplicaPartitionLeaderElection`` takes its live replicas without the brokers
    shutting down).

    A request the controller declines -- its preferred replica leads already, is down, out
    of the ISR or shutting down -- changes nothing (Kafka answers it
    PREFERRED_LEADER_NOT_AVAILABLE): a self-loop, which no search takes, but a driven run
    can, to see the implementation write nothing."""
    if not acting_controller(s, c) or s.ghost.preferred_elections >= cfg.preferred_elections:
        return None
    zn = s.zk.partitions[p]
    if not zn.ar:
        return None
    live = tuple(b for b in s.zk.live if b not in shutting_down(s))
    preferred = preferred_leader(zn.ar, zn.leader, zn.isr, live)
    if preferred is None:
        return s
    if zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    s = write_and_send(s, p, preferred, zn.isr)
    return s._replace(ghost=s.ghost._replace(preferred_elections=s.ghost.preferred_elections + 1))


def _preferred_text(args: Args, before: State, after: State) -> str:
    c, p = args
    if before == after:
        return f"controller {c} declines a preferred-replica election of partition {p}: its preferred replica cannot lead"
    return f"controller {c} moves partition {p} back to its preferred replica: {written(after, p)} and sends LeaderAndISR"


PREFERRED_ELECTION = Entry(
    "preferred_election", preferred_election, preferred_elections_args,
    section="000 A", impl="impl.node.controller.Controller._on_preferred",
    trace=Traced("elect_leader", ("preferred",)),
    describe=_preferred_text, view=leader_write_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "preferred", False),
    coverage=Coverage(native=Supported(),
                      z3=Supported("the preferred replica is broker 0: the encoding's AR is every broker"),
                      judge=Supported(), driver=DRIVEN),
    explored=False, knob=PREFERRED_ELECTIONS,
)


ENTRIES = (PREFERRED_ELECTION,)
KNOBS = (PREFERRED_ELECTIONS,)
