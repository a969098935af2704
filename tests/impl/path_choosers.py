"""Argument choosers for hand-written model paths: each step of a path names an action and
a function from the state before it to that action's arguments, so a path reads as the
scenario it drives (the request to this broker, the fetch of that follower) rather than as
message tuples copied out of a model run."""

from __future__ import annotations

from collections.abc import Callable

from model.state import FETCH_REQUEST, FETCH_RESPONSE, State

Chooser = Callable[[State], tuple]


def given(*a: object) -> Chooser:
    """These arguments, whatever the state."""
    return lambda s: a


def stop_replica_to(to: int) -> Chooser:
    """The StopReplica in flight to broker ``to``."""
    return lambda s: next((m,) for m in s.stop_replica if m.to == to)


def fetch_of(follower: int) -> Chooser:
    """The fetch request in flight from ``follower``."""
    return lambda s: next((m,) for m in s.fetches if m.kind == FETCH_REQUEST and m.follower == follower)


def answer_to(follower: int) -> Chooser:
    """The fetch answer in flight to ``follower``."""
    return lambda s: next((m,) for m in s.fetches if m.kind == FETCH_RESPONSE and m.follower == follower)


def leader_and_isr_to(to: int) -> Chooser:
    """The LeaderAndISR to ``to`` of the partition's current leader epoch and topic id."""
    def choose(s: State) -> tuple:
        zn = s.zk.partitions[0]
        return next((m,) for m in s.leader_and_isr
                    if m.to == to and m.leader_epoch == zn.leader_epoch and m.topic_id == zn.topic_id)
    return choose
