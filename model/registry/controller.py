"""The controller: its election, leader elections, startups it owes, controlled shutdown and
replica reassignment.

Seed 000 A (``on_broker_change``), D (controller failover), F (the Reassignment Agent);
seed 002 (controller epochs: a superseded controller backs off); seed 003 (a registration
gets the LeaderAndISR of its partitions with the new max broker epoch).  Every leader
change is one conditional ZooKeeper write and the LeaderAndISR requests it sends, so all
of them are traced as ``elect_leader`` with a ``reason`` saying which one it was.
"""

from __future__ import annotations

from model.actions import (
    brokers_args,
    controlled_shutdown,
    controller_elect,
    controller_resign,
    create_topic,
    creations_args,
    delete_topic,
    deletions_args,
    elect_leader,
    elections_args,
    on_broker_startup,
    preferred_election,
    preferred_elections_args,
    reassign_complete,
    reassign_completions_args,
    reassign_start,
    reassign_starts_args,
    shutdowns_args,
    startups_args,
)
from model.registry.entry import (
    DELETIONS,
    DRIVEN,
    PREFERRED_ELECTIONS,
    REASSIGNMENTS,
    SHUTDOWNS,
    SILENT,
    Args,
    Coverage,
    Emitted,
    Entry,
    Supported,
    Traced,
    Unsupported,
    View,
)
from model.registry.views import nothing_observed, znode_event, znode_view
from model.state import State
from model.text import brokers_text, leader_text

NO_REASSIGNMENT_IN_C = Unsupported("reassignment is not ported to native/rules.c (one partition, AR = every broker)")
NO_REASSIGNMENT_IN_Z3 = Unsupported("reassignment is not encoded (AR stays every broker)")


def _always(args: Args, before: State, after: State) -> bool:
    return True


def _no_event(args: Args, before: State, after: State) -> Emitted | None:
    return None


# -- the controller's own election and resignation (seed 000 D, seed 002) ---------------------


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
    silent=_always,  # no ZK write, no change of role: a zombie noticing it was superseded
)


# -- leader elections and startups (seed 000 A, seed 003) --------------------------------------


def _written(after: State, p: int) -> str:
    """What a controller wrote to partition p's znode -- the words every leader change shares."""
    zn = after.zk.partitions[p]
    return (f"leader {leader_text(zn.leader)}, epoch {zn.leader_epoch}, ISR {brokers_text(zn.isr)} "
            f"(zk_version {zn.zk_version})")


def _elect_text(args: Args, before: State, after: State) -> str:
    c, p, _ = args
    unclean = " -- UNCLEAN election, possible data loss" if p in after.ghost.unclean and p not in before.ghost.unclean else ""
    return f"controller {c} writes partition {p}: {_written(after, p)} and sends LeaderAndISR{unclean}"


def _znode_view(args: Args, before: State, after: State) -> View:
    return znode_view(before, after, 0)


def _unclean(p: int, before: State, after: State) -> bool:
    return p in after.ghost.unclean and p not in before.ghost.unclean


ELECT_LEADER = Entry(
    "elect_leader", elect_leader, elections_args,
    section="000 A", impl="impl.node.controller.Controller._on_broker_change", trace=Traced("elect_leader"),
    describe=_elect_text, view=_znode_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "broker_change",
                                                  _unclean(args[1], before, after)),
    coverage=Coverage(native=Supported(), z3=Supported("clean elections only"), judge=Supported(), driver=DRIVEN),
)

ON_BROKER_STARTUP = Entry(
    "on_broker_startup", on_broker_startup, startups_args,
    section="003", impl="impl.node.controller.Controller._on_broker_change", trace=SILENT,
    describe=lambda args, before, after: (
        f"controller {args[0]} sees broker {args[1]} registered and sends it the current LeaderAndISR"),
    view=nothing_observed, event=_no_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported("as a silent internal step"),
                      driver=DRIVEN),
    silent=_always,  # implementations record no control request sent
)


def _shutdown_text(args: Args, before: State, after: State) -> str:
    c, p, b, _ = args
    if _nothing_written(args, before, after):
        return f"controller {c} stops broker {b}'s replica of partition {p} for its controlled shutdown (it is not in the ISR)"
    return f"controller {c} moves partition {p} off broker {b} for its controlled shutdown: {_written(after, p)}"


def _nothing_written(args: Args, before: State, after: State) -> bool:
    """A controlled shutdown of a follower outside the ISR: its StopReplica only, no write."""
    return before.zk.partitions[args[1]] == after.zk.partitions[args[1]]


CONTROLLED_SHUTDOWN = Entry(
    "controlled_shutdown", controlled_shutdown, shutdowns_args,
    section="000 A", impl="impl.node.controller.Controller._on_controlled_shutdown",
    trace=Traced("elect_leader", ("controlled_shutdown",)),
    describe=_shutdown_text, view=_znode_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "controlled_shutdown",
                                                  _unclean(args[1], before, after)),
    coverage=Coverage(native=Unsupported("controlled shutdown is not ported to native/rules.c (no named configuration shuts down)"),
                      z3=Unsupported("controlled shutdown is not encoded (no named configuration shuts down)"),
                      judge=Supported(), driver=DRIVEN),
    feature=SHUTDOWNS,
    silent=_nothing_written,  # a follower outside the ISR: no elect_leader to record
)


# -- replica reassignment (seed 000 F) -------------------------------------------------------


def _reassign_start_text(args: Args, before: State, after: State) -> str:
    c, p, rar = args
    zn = after.zk.partitions[p]
    return (f"controller {c} starts reassigning p{p} to RAR {brokers_text(rar)}: AR := {brokers_text(zn.ar)}, "
            f"sends LeaderAndISR (epoch {zn.leader_epoch}) to RAR")


def _reassign_start_view(args: Args, before: State, after: State) -> View:
    """The agent's IN_PROGRESS: RAR, and AR as it was before AR+RAR."""
    return {"rar": list(after.zk.partitions[0].rar), "ar": list(before.zk.partitions[0].ar)}


def _reassign_start_event(args: Args, before: State, after: State) -> Emitted:
    c, p, rar = args
    return Emitted(c, {"state": "IN_PROGRESS", "rar": list(rar), "ar": list(before.zk.partitions[p].ar)}, zk=True)


REASSIGN_START = Entry(
    "reassign_start", reassign_start, reassign_starts_args,
    section="000 F", impl="impl.node.controller.Controller._reassignment_wakeup", trace=Traced("reassignment"),
    describe=_reassign_start_text, view=_reassign_start_view, event=_reassign_start_event,
    coverage=Coverage(native=NO_REASSIGNMENT_IN_C, z3=NO_REASSIGNMENT_IN_Z3, judge=Supported(), driver=DRIVEN),
    explored=False, feature=REASSIGNMENTS,
)


def _reassign_complete_text(args: Args, before: State, after: State) -> str:
    c, p, _ = args
    zb, zn = before.zk.partitions[p], after.zk.partitions[p]
    gone = tuple(b for b in zb.ar if b not in zn.ar)
    return (
        f"controller {c} completes the reassignment of p{p} (RAR ⊆ ISR): leader {leader_text(zn.leader)}, epoch {zn.leader_epoch}, "
        f"ISR {brokers_text(zn.isr)}, AR {brokers_text(zn.ar)} (zk_version {zn.zk_version}); LeaderAndISR to RAR, StopReplica to {brokers_text(gone)}"
    )


REASSIGN_COMPLETE = Entry(
    "reassign_complete", reassign_complete, reassign_completions_args,
    section="000 F", impl="impl.node.controller.Controller._reassignment_wakeup",
    trace=Traced("elect_leader", ("reassign", "reassignment")),
    describe=_reassign_complete_text, view=_znode_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "reassign", False),
    coverage=Coverage(native=NO_REASSIGNMENT_IN_C, z3=NO_REASSIGNMENT_IN_Z3, judge=Supported(), driver=DRIVEN),
    explored=False, feature=REASSIGNMENTS,
)


# -- topics deleted and created again (seed 000 B, question 5) -------------------------------

NO_DELETION_IN_C = Unsupported("topic deletion is not ported to native/rules.c (its state has no topic identity)")
NO_DELETION_IN_Z3 = Unsupported("topic deletion is not encoded (its state has no topic identity)")
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
    coverage=Coverage(native=NO_DELETION_IN_C, z3=NO_DELETION_IN_Z3, judge=DELETION_JUDGED, driver=DRIVEN),
    explored=False, feature=DELETIONS,
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
    coverage=Coverage(native=NO_DELETION_IN_C, z3=NO_DELETION_IN_Z3, judge=DELETION_JUDGED, driver=DRIVEN),
    explored=False, feature=DELETIONS,
)


# -- preferred-replica election (later Kafka, on seed 000 A's election) --------------------------


def _preferred_text(args: Args, before: State, after: State) -> str:
    c, p = args
    return f"controller {c} moves partition {p} back to its preferred replica: {_written(after, p)} and sends LeaderAndISR"


PREFERRED_ELECTION = Entry(
    "preferred_election", preferred_election, preferred_elections_args,
    section="000 A", impl="impl.node.controller.Controller._on_preferred",
    trace=Traced("elect_leader", ("preferred",)),
    describe=_preferred_text, view=_znode_view,
    event=lambda args, before, after: znode_event(args[0], args[1], before, after, "preferred", False),
    coverage=Coverage(native=Unsupported("preferred-replica election is not ported to native/rules.c (no named configuration asks for one)"),
                      z3=Unsupported("preferred-replica election is not encoded (no named configuration asks for one)"),
                      judge=Supported(), driver=DRIVEN),
    explored=False, feature=PREFERRED_ELECTIONS,
)
