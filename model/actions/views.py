"""Helpers shared by the judge views and exported events of several actions.

A *view* is every field an event of a step could carry, in model terms (``traces/SCHEMA.md``
names the fields; the judge compares only those an event actually carries).  An *event* is
what a step of the model is exported as, in trace terms (record values as text).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from model.actions.entry import Args, Emitted, View
from model.state import FETCH_RESPONSE, OUT_OF_RANGE, ROLE_NAMES, Fetch, Replica, State
from model.state import Entry as LogEntry
from model.text import brokers_text, leader_text, value_text

HARNESS = -1
"""The node id of the fault-injecting harness; its events name their broker in params."""


ERRORS = {OUT_OF_RANGE: "OFFSET_OUT_OF_RANGE"}


FENCED = "FENCED_LEADER_EPOCH"


class _Fenced(NamedTuple):
    """The fences ``stale_reason`` reads, all on as in every named configuration: why a
    refused request was stale reads no other bound."""

    fence_controller_epoch: bool = True
    fence_broker_epoch: bool = True
    topic_ids: bool = True
    startup_from_controller: bool = False  # a refusal's reason is the same either way
    brokers: int = 0  # the LEOs a newer incarnation's replica starts with: not part of any reason


REJECT_CFG = _Fenced()


def nothing_observed(args: Args, before: State, after: State) -> View:
    """Broker lifecycle: broker epochs are zxids, not comparable with the model's."""
    return {}


def harness_event(kind_args: Args, before: State, after: State) -> Emitted:
    """A fault the harness injected: its node is the harness, the victim is in params."""
    return Emitted(HARNESS, {"broker": kind_args[0]})


def registration_event(args: Args, before: State, after: State) -> Emitted:
    """A (re-)registration: a ZooKeeper write carrying the new broker epoch."""
    b = args[0]
    return Emitted(b, {"broker": b, "broker_epoch": after.brokers[b].broker_epoch}, zk=True)


def entries(offset: int, log: Iterable[LogEntry]) -> list[tuple[int, int, int]]:
    """Records as the judge compares them: (offset, epoch, model value)."""
    return [(offset + i, e.epoch, e.value) for i, e in enumerate(log)]


def records(offset: int, log: Iterable[LogEntry]) -> list[list[Any]]:
    """Records as a trace carries them: [offset, epoch, value text]."""
    return [[offset + i, e.epoch, value_text(e.value)] for i, e in enumerate(log)]


def new_response(before: State, after: State, m: Fetch) -> Fetch | None:
    """The fetch response a step answering ``m`` sent, if it sent one."""
    for x in after.fetches:
        if x.kind == FETCH_RESPONSE and x.follower == m.follower and x.leader == m.leader and x not in before.fetches:
            return x
    return None


def replica_view(r: Replica) -> View:
    """A replica's post-state, as the judge compares it."""
    return {"post.role": ROLE_NAMES[r.role], "post.leader": r.leader, "post.leader_epoch": r.leader_epoch,
            "post.hw": r.hw, "post.leo": r.leo, "post.log_end_epoch": r.log[-1].epoch if r.log else None,
            "post.isr": list(r.isr)}


def replica_post(r: Replica) -> dict[str, Any]:
    """A replica's post-state, as a trace carries it."""
    return {"role": ROLE_NAMES[r.role], "leader": r.leader, "leader_epoch": r.leader_epoch, "hw": r.hw, "leo": r.leo,
            "log_end_epoch": r.log[-1].epoch if r.log else None}


def znode_view(before: State, after: State, p: int) -> View:
    """A controller's write of the partition znode: what ``elect_leader`` events carry."""
    zn = after.zk.partitions[p]
    return {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr), "zk_version": zn.zk_version,
            "controller_epoch": after.zk.controller_epoch,
            "unclean": p in after.ghost.unclean and p not in before.ghost.unclean}


def znode_event(c: int, p: int, before: State, after: State, reason: str, unclean: bool) -> Emitted:
    zn = after.zk.partitions[p]
    return Emitted(c, {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr),
                       "zk_version": zn.zk_version, "controller_epoch": after.zk.controller_epoch,
                       "reason": reason, "replicas": list(zn.ar), "unclean": unclean}, zk=True)


def always(args: Args, before: State, after: State) -> bool:
    return True


def written(after: State, p: int) -> str:
    """What a controller wrote to partition p's znode -- the words every leader change shares."""
    zn = after.zk.partitions[p]
    return (f"leader {leader_text(zn.leader)}, epoch {zn.leader_epoch}, ISR {brokers_text(zn.isr)} "
            f"(zk_version {zn.zk_version})")


def leader_write_view(args: Args, before: State, after: State) -> View:
    return znode_view(before, after, 0)


def unclean_election(p: int, before: State, after: State) -> bool:
    return p in after.ghost.unclean and p not in before.ghost.unclean
