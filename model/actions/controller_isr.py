"""ISR changes through the controller (KIP-497's AlterPartition; Kafka's ZooKeeper mode from
inter-broker protocol 2.7, the default of the 3.9 line).

Seed 000 G has the leader write a changed ISR to ZooKeeper itself, conditionally on the
znode's version.  From IBP 2.7 the leader proposes the change instead, and only the
controller writes -- the shape of seed 004's forwarding, applied to the ISR:

* ``propose_isr`` -- the leader sends the ISR it wants (a lagging follower taken out, a
  caught-up one added: the same conditions as ``shrink_isr`` / ``expand_isr``) with its
  leader epoch, the partition epoch it knows (the znode's ``zk_version``), its broker epoch
  and its topic id.  One proposal per partition is in flight at a time, and until it is
  answered the leader's HW waits for the union of the two ISRs
  (``replication.maximal_isr``);
* ``alter_partition`` -- the acting controller validates the proposal against ZooKeeper and
  writes it, or refuses it: a registration other than the leader's (STALE_BROKER_EPOCH),
  another incarnation of the topic (UNKNOWN_TOPIC_ID), another leader epoch
  (FENCED_LEADER_EPOCH), the ISR it already holds (answered as it is, with no write),
  another version (INVALID_UPDATE_VERSION), or -- KIP-841 -- a proposed member that is not
  an assigned replica, not registered, or shutting down (INELIGIBLE_REPLICA): a broker
  being shut down or fenced never rejoins the ISR;
* ``apply_isr`` -- the leader takes the controller's answer, and only it: the ISR and
  version written.  A refusal changes nothing on the leader (it keeps leading and waits for
  the controller's LeaderAndISR: Kafka 3.9 does not resign on INVALID_UPDATE_VERSION, where
  seed 000's ``isr_update_failed`` stops leading).

With ``Config.alter_partition`` on, the leader's own writes (``shrink_isr``, ``expand_isr``,
``isr_update_failed``) are off; every other rule is ``kip320``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.actions.common import (
    acting_controller,
    added,
    removed,
    replica,
    set_replica,
    set_znode,
    shutting_down,
)
from model.actions.entry import (
    Args,
    Coverage,
    Emitted,
    Entry,
    Knob,
    Supported,
    Traced,
    Unsupported,
    View,
)
from model.actions.replication import advance_hw, caught_up, isr_changes_args, out_of_sync
from model.actions.views import always
from model.state import (
    ALTER_REQUEST,
    ALTER_RESPONSE,
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    LEADER,
    NO_LEADER,
    OK,
    STALE_BROKER_EPOCH,
    UNKNOWN_TOPIC_ID,
    UP,
    AlterPartition,
    PartitionZnode,
    State,
)
from model.text import brokers_text

if TYPE_CHECKING:
    from model.config import Config


ALTER_ERRORS = {OK: None, FENCED_LEADER_EPOCH: "FENCED_LEADER_EPOCH", INVALID_UPDATE_VERSION: "INVALID_UPDATE_VERSION",
                INELIGIBLE_REPLICA: "INELIGIBLE_REPLICA", STALE_BROKER_EPOCH: "STALE_BROKER_EPOCH",
                UNKNOWN_TOPIC_ID: "UNKNOWN_TOPIC_ID"}
"""The controller's answers, by Kafka's error names (None: accepted)."""


ALTER_PARTITION = Knob(
    "alter_partition", "AlterPartition (ISR changes written by the controller)", default=0, high=1,
    help="1: leaders propose ISR changes and the controller writes them (KIP-497, IBP 2.7+, Kafka 3.9's "
         "default), with KIP-841's eligibility; 0: leaders write the ISR themselves (seed 000 G)")


def requests_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c != NO_LEADER:
        yield from ((c, m) for m in s.alter_partition if m.kind == ALTER_REQUEST)


def answers_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.alter_partition if m.kind == ALTER_RESPONSE)


def pending(s: State, b: int, p: int) -> bool:
    """Whether leader b has a proposal for p of its current leader epoch unanswered (the
    request, or the answer it has not read): Kafka's ``PendingPartitionChange``."""
    epoch = replica(s, b, p).leader_epoch
    return any(m.leader == b and m.partition == p and m.leader_epoch == epoch for m in s.alter_partition)


def propose_isr(s: State, cfg: Config, b: int, p: int, f: int) -> State | None:
    """Leader b asks the controller to take lagging follower f out of p's ISR, or to add
    caught-up f to it (Kafka's ``prepareIsrShrink`` / ``prepareIsrExpand``), with its leader
    epoch, the version it knows, its broker epoch and topic id; it changes its ISR only on
    the answer."""
    if not cfg.alter_partition or pending(s, b, p):
        return None
    lr = replica(s, b, p)
    if out_of_sync(s, b, p, f):
        isr = removed(lr.isr, f)
    elif caught_up(s, cfg, b, p, f):
        isr = added(lr.isr, f)
    else:
        return None
    req = AlterPartition(ALTER_REQUEST, b, p, lr.leader_epoch, isr, lr.zk_version, s.brokers[b].broker_epoch, OK, lr.topic_id)
    return s._replace(alter_partition=added(s.alter_partition, req))


def refusal(s: State, cfg: Config, m: AlterPartition, zn: PartitionZnode) -> int:
    """Why the controller refuses proposal m against p's znode ``zn`` (Kafka's
    ``KafkaController.processAlterPartition``, in its order), or OK."""
    if m.leader not in s.zk.live or s.zk.broker_epochs[m.leader] != m.broker_epoch:
        return STALE_BROKER_EPOCH
    if not zn.ar or (cfg.topic_ids and m.topic_id != zn.topic_id):
        return UNKNOWN_TOPIC_ID
    if m.leader_epoch != zn.leader_epoch:
        return FENCED_LEADER_EPOCH
    if m.isr == zn.isr:
        return OK  # already so: answered with the znode as it is
    if m.zk_version != zn.zk_version:
        return INVALID_UPDATE_VERSION
    stopping = shutting_down(s)
    if any(x not in zn.ar or x not in s.zk.live or x in stopping for x in m.isr):
        return INELIGIBLE_REPLICA  # KIP-841
    return OK


def alter_partition(s: State, cfg: Config, c: int, m: AlterPartition) -> State | None:
    """The acting controller validates leader m.leader's proposal and, if it holds and
    changes the ISR, writes it to the znode (the version moves on, the leader epoch does
    not); it answers with the znode as it left it, or with the refusal."""
    if m.kind != ALTER_REQUEST or m not in s.alter_partition or not acting_controller(s, c):
        return None
    s = s._replace(alter_partition=removed(s.alter_partition, m))
    zn = s.zk.partitions[m.partition]
    error = refusal(s, cfg, m, zn)
    if error != OK:
        answer = m._replace(kind=ALTER_RESPONSE, error=error)  # the proposal echoed: the leader's HW keeps waiting on it
    else:
        if m.isr != zn.isr:
            zn = zn._replace(isr=m.isr, zk_version=zn.zk_version + 1)
            s = set_znode(s, m.partition, zn)
        answer = m._replace(kind=ALTER_RESPONSE, isr=zn.isr, zk_version=zn.zk_version)
    return s._replace(alter_partition=added(s.alter_partition, answer))


def apply_isr(s: State, cfg: Config, m: AlterPartition) -> State | None:
    """Leader m.leader reads the controller's answer: an accepted change of its current
    epoch, newer than the version it knows, becomes its ISR and version (and its HW is
    retried); anything else -- a refusal, an answer to an older epoch or incarnation -- only
    ends the wait."""
    b, p = m.leader, m.partition
    if m.kind != ALTER_RESPONSE or m not in s.alter_partition or s.brokers[b].status != UP:
        return None
    s = s._replace(alter_partition=removed(s.alter_partition, m))
    r = replica(s, b, p)
    if (r.role != LEADER or m.error != OK or m.leader_epoch != r.leader_epoch or m.zk_version <= r.zk_version
            or (cfg.topic_ids and m.topic_id != r.topic_id)):
        return s
    s = set_replica(s, b, p, r._replace(isr=m.isr, zk_version=m.zk_version))
    return advance_hw(s, cfg, b, p)


NOT_DRIVEN = Unsupported("Epochal's brokers write the ISR themselves (seed 000 G): it has no AlterPartition to drive")
IMPL = "impl.harness.kafka.relay.KafkaRelay._observe"  # Apache Kafka's, as the relay observes it


def _propose_text(args: Args, before: State, after: State) -> str:
    b, p, f = args
    m = _sent(args, before, after)
    verb = "removing" if f in replica(before, b, p).isr else "adding"
    return (f"leader {b} proposes ISR {brokers_text(m.isr)} for p{p} ({verb} {f}) to the controller "
            f"(epoch {m.leader_epoch}, zk_version {m.zk_version})")


def _sent(args: Args, before: State, after: State) -> AlterPartition:
    """The AlterPartition message the step put in flight (a proposal, or an answer)."""
    return next(m for m in after.alter_partition if m not in before.alter_partition)


def _propose_view(args: Args, before: State, after: State) -> View:
    m = _sent(args, before, after)
    return {"follower": args[2], "isr": list(m.isr), "leader_epoch": m.leader_epoch, "zk_version": m.zk_version}


def _propose_event(args: Args, before: State, after: State) -> Emitted:
    return Emitted(args[0], _propose_view(args, before, after))


PROPOSE_ISR = Entry(
    "propose_isr", propose_isr, isr_changes_args,
    section="000 G", impl=IMPL, trace=Traced("propose_isr"),
    describe=_propose_text, view=_propose_view, event=_propose_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported("a request changes nothing a trace shows"),
                      driver=NOT_DRIVEN),
    explored=False, knob=ALTER_PARTITION, silent=always,
)


def _alter_text(args: Args, before: State, after: State) -> str:
    c, m = args
    a = _sent(args, before, after)
    if a.error != OK:
        return f"controller {c} refuses leader {m.leader}'s ISR {brokers_text(m.isr)} for p{m.partition}: {ALTER_ERRORS[a.error]}"
    zb = before.zk.partitions[m.partition]
    if a.zk_version == zb.zk_version:
        return f"controller {c} answers leader {m.leader}: p{m.partition}'s ISR is already {brokers_text(a.isr)}"
    return (f"controller {c} writes leader {m.leader}'s ISR {brokers_text(a.isr)} for p{m.partition} "
            f"(zk_version {zb.zk_version} → {a.zk_version}) and answers")


def _alter_view(args: Args, before: State, after: State) -> View:
    c, m = args
    a = _sent(args, before, after)
    return {"leader": m.leader, "isr": list(a.isr), "leader_epoch": m.leader_epoch, "zk_version": a.zk_version,
            "error": ALTER_ERRORS[a.error]}


def _alter_event(args: Args, before: State, after: State) -> Emitted:
    return Emitted(args[0], _alter_view(args, before, after), zk=not _nothing_written(args, before, after))


def _nothing_written(args: Args, before: State, after: State) -> bool:
    """The answer came without a write -- a refusal, or the ISR already so: nothing a trace
    shows changed but the message in flight."""
    p = args[1].partition
    return before.zk.partitions[p] == after.zk.partitions[p]


ALTER = Entry(
    "alter_partition", alter_partition, requests_args,
    section="000 G", impl=IMPL, trace=Traced("alter_partition"),
    describe=_alter_text, view=_alter_view, event=_alter_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=NOT_DRIVEN),
    explored=False, knob=ALTER_PARTITION, silent=_nothing_written,
)


def _answer_leader(args: Args) -> int:
    return args[0].leader


def _apply_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.leader, m.partition), replica(after, m.leader, m.partition)
    if ra.isr == rb.isr and ra.zk_version == rb.zk_version:
        why = ALTER_ERRORS[m.error] or "stale"
        return f"leader {m.leader} reads the controller's answer for p{m.partition} ({why}): its ISR stays {brokers_text(rb.isr)}"
    hw = f", HW {rb.hw} → {ra.hw}" if ra.hw != rb.hw else ""
    return f"leader {m.leader} takes ISR {brokers_text(ra.isr)} (zk_version {ra.zk_version}) for p{m.partition}{hw}"


def _apply_view(args: Args, before: State, after: State) -> View:
    r = after.brokers[args[0].leader].replicas[args[0].partition]
    return {"isr": list(r.isr), "zk_version": r.zk_version, "post.hw": r.hw}


def _apply_event(args: Args, before: State, after: State) -> Emitted:
    r = after.brokers[args[0].leader].replicas[args[0].partition]
    return Emitted(args[0].leader, {"isr": list(r.isr), "zk_version": r.zk_version}, {"hw": r.hw, "leo": r.leo})


def _leader_unchanged(args: Args, before: State, after: State) -> bool:
    m = args[0]
    return before.brokers[m.leader].replicas[m.partition] == after.brokers[m.leader].replicas[m.partition]


APPLY_ISR = Entry(
    "apply_isr", apply_isr, answers_args,
    section="000 G", impl=IMPL, trace=Traced("apply_isr"),
    describe=_apply_text, view=_apply_view, event=_apply_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=NOT_DRIVEN),
    explored=False, knob=ALTER_PARTITION, actor=_answer_leader, silent=_leader_unchanged,
)


ENTRIES = (PROPOSE_ISR, ALTER, APPLY_ISR)
KNOBS = (ALTER_PARTITION,)
