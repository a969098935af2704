"""Partitions added to and removed from an existing topic (seed 000 H).

Both are controller steps an administrator asks for, bounded by ``--partition-changes N``
(``Config.partition_changes``, 0 by default: no named configuration's state space moves).
The implementation records each as one cluster event after its ZooKeeper multi:
``partitions_added`` (after the new partitions' ``elect_leader`` with reason ``init``) and
``partitions_removed`` (after the StopReplica(delete) its replicas recorded).
"""

from __future__ import annotations

from model.actions import (
    add_partitions,
    partition_adds_args,
    partition_removals_args,
    remove_partitions,
)
from model.registry.entry import (
    PARTITION_CHANGES,
    Args,
    Coverage,
    Emitted,
    Entry,
    Supported,
    Traced,
    Unsupported,
)
from model.registry.views import nothing_observed
from model.state import State
from model.text import brokers_text, leader_text

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
    explored=False, feature=PARTITION_CHANGES,
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
    explored=False, feature=PARTITION_CHANGES,
)
