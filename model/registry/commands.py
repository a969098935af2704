"""Brokers acting on the controller's commands (seed 000 C): LeaderAndISR makes a replica
leader or follower, or is refused as stale (seeds 002 and 003 add the controller and
broker epochs it is judged by); a new follower reconciles its log with the leader before
fetching (KIP-101/279/320); StopReplica stops and deletes a replica."""

from __future__ import annotations

from typing import Any

from model.actions import (
    become_follower,
    become_leader,
    broker_partitions_args,
    reject_leader_and_isr,
    replica,
    requests_args,
    stale_reason,
    stop_replica,
    stop_requests_args,
    truncate,
)
from model.registry.entry import (
    DELETIONS,
    DRIVEN,
    PARTITION_CHANGES,
    REASSIGNMENTS,
    SHUTDOWNS,
    Args,
    Coverage,
    Emitted,
    Entry,
    Supported,
    Traced,
    Unsupported,
    View,
)
from model.registry.views import REJECT_CFG, replica_post, replica_view
from model.state import DELETED, EPOCH_DURING_DELETE, NO_LEADER, TRUNCATING, LeaderAndIsr, State
from model.text import brokers_text, leader_text, log_text


def _addressee(args: Args) -> int:
    return args[0].to


def _request_view(args: Args, before: State, after: State) -> View:
    """What a broker's handling of a LeaderAndISR shows: the request and its replica after."""
    m: LeaderAndIsr = args[0]
    view = replica_view(after.brokers[m.to].replicas[0])
    view.update(leader=m.leader, leader_epoch=m.leader_epoch, isr=list(m.isr), zk_version=m.zk_version,
                controller_epoch=m.controller_epoch,
                truncated_to=after.brokers[m.to].replicas[0].leo)  # an implementation may name a cut that removed nothing
    return view


def _applied_event(args: Args, before: State, after: State) -> Emitted:
    m: LeaderAndIsr = args[0]
    rb, ra = before.brokers[m.to].replicas[m.partition], after.brokers[m.to].replicas[m.partition]
    return Emitted(m.to, {"leader": m.leader, "leader_epoch": m.leader_epoch, "isr": list(m.isr),
                          "zk_version": m.zk_version, "controller_epoch": m.controller_epoch,
                          "truncated_to": ra.leo if ra.log != rb.log else None}, replica_post(ra))


def _become_leader_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    ra = replica(after, m.to, m.partition)
    return f"broker {m.to} becomes leader of p{m.partition} at epoch {m.leader_epoch} with ISR {brokers_text(m.isr)}, hw={ra.hw}, log {log_text(ra.log)}"


BECOME_LEADER = Entry(
    "become_leader", become_leader, requests_args,
    section="000 C", impl="impl.node.replica.Replica.become_leader", trace=Traced("become_leader"),
    describe=_become_leader_text, view=_request_view, event=_applied_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    actor=_addressee, freezing=True,
)


def _become_follower_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.to, m.partition), replica(after, m.to, m.partition)
    text = f"broker {m.to} becomes follower of {leader_text(m.leader)} for p{m.partition} at epoch {m.leader_epoch}"
    if ra.log != rb.log:
        text += f", truncates log to hw={rb.hw}: {log_text(rb.log)} → {log_text(ra.log)}"
    elif ra.fetch_state == TRUNCATING:
        text += ", will reconcile its log by epoch before fetching"
    elif rb.leader == ra.leader:
        text += " (already following it: keeps fetching)"
    return text


BECOME_FOLLOWER = Entry(
    "become_follower", become_follower, requests_args,
    section="000 C", impl="impl.node.replica.Replica.become_follower", trace=Traced("become_follower"),
    describe=_become_follower_text, view=_request_view, event=_applied_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    actor=_addressee, freezing=True,
)


def _reject_view(args: Args, before: State, after: State) -> View:
    view = _request_view(args, before, after)
    view["reason"] = (stale_reason(before, REJECT_CFG, args[0]) or "").replace(" ", "_")
    return view


def _refused_request(fields: dict[str, Any], actor: int, s: State) -> Args:
    """The refused request, rebuilt from the event: the model forgets stale requests, and a
    max broker epoch the event does not name means the request was meant for this incarnation."""
    mbe = fields.get("max_broker_epoch", s.brokers[actor].broker_epoch)
    return (LeaderAndIsr(actor, 0, NO_LEADER, fields.get("leader_epoch", -1), (), -1, fields.get("controller_epoch", -1), mbe),)


def _reject_event(args: Args, before: State, after: State) -> Emitted:
    m = args[0]
    reason = (stale_reason(before, REJECT_CFG, m) or "stale").replace(" ", "_")
    return Emitted(m.to, {"reason": reason, "leader_epoch": m.leader_epoch, "controller_epoch": m.controller_epoch})


REJECT_LEADER_AND_ISR = Entry(
    "reject_leader_and_isr", reject_leader_and_isr, requests_args,
    section="000 C", impl="impl.node.broker.Broker.on_leader_and_isr", trace=Traced("reject_leader_and_isr"),
    describe=lambda args, before, after: (
        f"broker {args[0].to} rejects LeaderAndISR(p{args[0].partition}, leader {args[0].leader}, epoch {args[0].leader_epoch}, "
        f"controller epoch {args[0].controller_epoch}) as stale"),
    view=_reject_view, event=_reject_event,
    coverage=Coverage(native=Unsupported("a self-loop: no search takes it"),
                      z3=Unsupported("a self-loop: no search takes it"),
                      judge=Supported("rebuilt from the event: the model forgets refused requests"),
                      driver=DRIVEN),
    explored=False, actor=_addressee, from_event=_refused_request,
)


def _truncate_text(args: Args, before: State, after: State) -> str:
    f, p = args
    rb, ra = replica(before, f, p), replica(after, f, p)
    return f"broker {f} asks leader {rb.leader} where its epoch ends and truncates p{p} to offset {ra.leo}: {log_text(rb.log)} → {log_text(ra.log)}"


def _truncate_view(args: Args, before: State, after: State) -> View:
    f = args[0]
    return {"leader": before.brokers[f].replicas[0].leader, "truncated_to": after.brokers[f].replicas[0].leo}


def _truncate_event(args: Args, before: State, after: State) -> Emitted:
    f, p = args
    return Emitted(f, {"leader": before.brokers[f].replicas[p].leader, "truncated_to": after.brokers[f].replicas[p].leo})


def _nothing_to_look_up(args: Args, before: State, after: State) -> bool:
    """An epoch lookup on an empty log: implementations (like Kafka) send none."""
    return before.brokers[args[0]].replicas[0].leo == 0


TRUNCATE = Entry(
    "truncate", truncate, broker_partitions_args,
    section="000 C", impl="impl.node.broker.Broker._truncate_by_epoch", trace=Traced("truncate"),
    describe=_truncate_text, view=_truncate_view, event=_truncate_event,
    coverage=Coverage(native=Supported(), z3=Supported("all four truncation rules; of KIP-279 the first "
                                                       "OffsetsForLeaderEpoch round only, which no reachable "
                                                       "state tells from the rounds (model.truncation.single_round)"),
                      judge=Supported(),
                      driver=DRIVEN),
    silent=_nothing_to_look_up,
)


def _stop_replica_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.to, m.partition), replica(after, m.to, m.partition)
    if m.leader_epoch == EPOCH_DURING_DELETE:
        if ra.role != DELETED:
            return f"broker {m.to} refuses the deletion of p{m.partition}'s topic id {m.topic_id} (its replica is of topic id {rb.topic_id})"
        return f"broker {m.to} deletes its replica of p{m.partition} (StopReplica for the deletion of topic id {m.topic_id})"
    if m.controller_epoch < before.brokers[m.to].controller_epoch or m.leader_epoch < rb.leader_epoch:
        return f"broker {m.to} refuses a stale StopReplica(p{m.partition}, epoch {m.leader_epoch}, controller epoch {m.controller_epoch})"
    if not m.delete:
        return f"broker {m.to} stops fetching p{m.partition} for its controlled shutdown (StopReplica without delete, epoch {m.leader_epoch})"
    return f"broker {m.to} stops its replica of p{m.partition} and deletes it (StopReplica, epoch {m.leader_epoch})"


def _stop_replica_view(args: Args, before: State, after: State) -> View:
    """Whether the replica was deleted: a controlled shutdown's StopReplica only stops it."""
    return {"delete": args[0].delete} if args else {}


STOP_REPLICA = Entry(
    "stop_replica", stop_replica, stop_requests_args,
    section="000 C", impl="impl.node.broker.Broker.on_stop_replica", trace=Traced("stop_replica"),
    describe=_stop_replica_text, view=_stop_replica_view,
    event=lambda args, before, after: Emitted(args[0].to, {"delete": args[0].delete, "reason": "stop_replica"}),
    coverage=Coverage(native=Unsupported("reassignment is not ported to native/rules.c (one partition, AR = every broker)"),
                      z3=Unsupported("reassignment is not encoded (AR stays every broker)"),
                      judge=Supported("a topic deletion's, a partition removal's and a controlled shutdown's; a reassignment's is replayed or left as recorded only"),
                      driver=DRIVEN),
    explored=False, feature=REASSIGNMENTS, actor=_addressee, also_enabled_by=(DELETIONS, PARTITION_CHANGES, SHUTDOWNS),
)
