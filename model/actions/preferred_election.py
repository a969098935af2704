"""Preferred-replica election (later Kafka, on seed 000 A's election)."""

from __future__ import annotations

from model.actions.brokers import write_and_send
from model.actions.common import acting_controller, shutting_down
from model.config import Config
from model.preferred import preferred_leader
from model.state import (
    State,
)


def preferred_election(s: State, cfg: Config, c: int, p: int) -> State | None:
    """An administrator asks for a preferred-replica election of partition p (seed 000's
    topic path: "the first replica is the preferred replica"); the controller moves the
    leadership back to it -- only if it is alive, in the ISR and not already leading, so the
    move is a clean election and loses no committed record.  The ISR stays as it is; the
    write is a conditional one with leader_epoch + 1, then LeaderAndISR, like
    ``elect_leader``.  The model's AR is a sorted tuple, so its preferred replica is the
    lowest broker id assigned.  A broker shutting down is not electable (Kafka 2.7's
    ``liveBrokerIds``)."""
    if not acting_controller(s, c) or s.ghost.preferred_elections >= cfg.preferred_elections:
        return None
    zn = s.zk.partitions[p]
    if not zn.ar or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    live = tuple(b for b in s.zk.live if b not in shutting_down(s))
    preferred = preferred_leader(zn.ar, zn.leader, zn.isr, live)
    if preferred is None:
        return None
    s = write_and_send(s, p, preferred, zn.isr)
    return s._replace(ghost=s.ghost._replace(preferred_elections=s.ghost.preferred_elections + 1))
