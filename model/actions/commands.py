"""Brokers acting on the controller's LeaderAndISR requests (seed 000 C): becoming leader or
follower, refusing a stale request, truncating after an epoch lookup; and the requests the
model forgets once no broker can act on them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from model.actions.common import (
    added,
    broker_partitions_args,
    drop_responses_to,
    following,
    for_incarnation,
    is_current,
    put_at,
    replica,
    set_replica,
    stops_controlling,
    unknown_leos,
)
from model.actions.entry import (
    DRIVEN,
    Args,
    Coverage,
    Emitted,
    Entry,
    Supported,
    Traced,
    Unsupported,
    View,
)
from model.actions.replication import advance_hw
from model.actions.views import REJECT_CFG, replica_post, replica_view
from model.state import (
    DELETED,
    EPOCH_DURING_DELETE,
    FETCHING,
    FOLLOWER,
    IDLE,
    LEADER,
    NO_LEADER,
    NONE,
    TRUNCATING,
    UP,
    LeaderAndIsr,
    Replica,
    State,
    StopReplica,
)
from model.text import brokers_text, leader_text, log_text
from model.truncation import truncation_point

if TYPE_CHECKING:
    from model.config import Config


def requests_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.leader_and_isr)


def forget_stale_requests(s: State, cfg: Config) -> State:
    """Drop LeaderAndISR requests every addressee will refuse forever.

    A broker's known leader epoch and controller epoch never go backwards (they survive a
    crash: the epoch cache is on disk, and a restart only reads newer ones from ZK), so a
    request that is stale now is stale for ever: delivering it is a self-loop.  Forgetting
    it changes no behaviour and keeps the set of requests ever sent from growing.
    """
    kept = tuple(m for m in s.leader_and_isr if not _stale_for_ever(s, cfg, m))
    return s if len(kept) == len(s.leader_and_isr) else s._replace(leader_and_isr=kept)


def _stale_for_ever(s: State, cfg: Config, m: LeaderAndIsr) -> bool:
    """Whether m is stale now and will stay so.  Without topic ids a deleted topic's (or
    removed partition's, when its id may come back) replica forgets its leader epoch with
    its directory (seed 000 B 2), so a request refused for its leader epoch may be taken
    later.  A removed id added again without its own identity brings a deleted replica back
    at a restart, with the epoch ZooKeeper has -- news to a request the restart's new broker
    epoch does not fence.  Every other reason is for ever: controller and broker epochs never
    go back, and with topic ids a replica's id never does either."""
    why = stale_reason(s, cfg, m)
    if why is None:
        return False
    reborn = cfg.reuse_partition_ids and not cfg.partition_identity and not cfg.fence_broker_epoch
    if why == "stale leader epoch":
        return not (((cfg.deletions or cfg.reuse_partition_ids) and not cfg.topic_ids) or reborn)
    return not (why == "stale topic id" and reborn)


def stale_reason(s: State, cfg: Config, m: LeaderAndIsr) -> str | None:
    """Why broker m.to must refuse m, or None: an older controller epoch (seed 002), a
    request meant for an older incarnation of the broker (seed 003), or a leader epoch no
    newer than the one it has (seed 000, 'only follow ... if its epoc is larger')."""
    broker = s.brokers[m.to]
    if cfg.fence_controller_epoch and m.controller_epoch < broker.controller_epoch:
        return "stale controller epoch"
    if cfg.fence_broker_epoch and m.max_broker_epoch < broker.broker_epoch:
        return "stale broker epoch"
    r = broker.replicas[m.partition]
    if cfg.topic_ids and (m.topic_id < r.topic_id or (m.topic_id == r.topic_id and r.role == DELETED)):
        return "stale topic id"
    known = for_incarnation(cfg, r, m.topic_id).leader_epoch
    if m.leader_epoch < known or (m.leader_epoch == known and not _waiting_since_startup(cfg, r)):
        return "stale leader epoch"
    return None


def repeats_held_decision(s: State, cfg: Config, m: LeaderAndIsr) -> bool:
    """Whether ``m`` is the decision broker m.to's replica holds, sent again: the same
    leader in the leader epoch it holds, of the topic id it holds, to a replica that leads or
    follows (one stopped in its epoch holds no decision to repeat), from a controller no
    older than the broker knows -- and stale for its leader epoch alone, so a request meant
    for an older registration of the broker is still refused as one.

    A newly elected controller's INIT and a reassignment's AR+RAR send the decision a replica
    already holds.  Its leader epoch is no newer than the one held, so ``stale_reason``
    names it, and nothing changes either way; but it is no second decision for the epoch (a
    controller's every write moves the leader epoch), so a broker takes it silently: it
    records no refusal and answers no error.  A broker that answered it as fenced would
    report every failover's INIT as refused, and drop the newer ISR or assignment it
    carries."""
    broker = s.brokers[m.to]
    r = broker.replicas[m.partition]
    return r.role in (LEADER, FOLLOWER) and r.leader == m.leader and r.leader_epoch == m.leader_epoch \
        and m.topic_id == r.topic_id and m.controller_epoch >= broker.controller_epoch \
        and stale_reason(s, cfg, m) == "stale leader epoch"


def sent_earlier(cfg: Config, first: LeaderAndIsr | StopReplica, then: LeaderAndIsr | StopReplica) -> bool:
    """Whether control request ``first`` was sent before ``then``, as far as their fields
    tell: both to one broker for one partition by one controller (its controller epoch),
    and of an older incarnation of the topic, or of its incarnation with a lower leader
    epoch -- a controller sends a partition's requests with the epoch it has just read or
    written, and the znode's epoch only grows within an incarnation.  Of one epoch, a
    reassignment's StopReplica (with delete) comes first: it carries the epoch of the write
    that removed its broker, and no LeaderAndISR of that epoch went to the broker before
    it.  A deletion's StopReplica carries no epoch (``EPOCH_DURING_DELETE``), and a
    partition id re-added without an identity of its own starts its epochs again at 1:
    those are compared by topic id alone."""
    if (first.to, first.partition, first.controller_epoch) != (then.to, then.partition, then.controller_epoch):
        return False
    if first.topic_id != then.topic_id:
        return first.topic_id < then.topic_id
    if EPOCH_DURING_DELETE in (first.leader_epoch, then.leader_epoch):
        return False
    if cfg.reuse_partition_ids and not cfg.partition_identity:
        return False
    if first.leader_epoch == then.leader_epoch:
        return isinstance(first, StopReplica) and first.delete
    return first.leader_epoch < then.leader_epoch


def waits_in_channel(s: State, cfg: Config, m: LeaderAndIsr | StopReplica) -> bool:
    """Kafka's controller sends each broker its requests through one queue and one sender
    thread (``ControllerChannelManager``: a ``RequestSendThread`` takes the next request
    only once the broker has answered the last), so a broker takes one controller's
    requests in the order they were sent.  The model holds requests as sets and lets them
    arrive in any order; this is the one place the order is kept: a LeaderAndISR waits
    while a StopReplica sent before it to the same broker is in flight, and a StopReplica
    while a LeaderAndISR sent before it is one the broker would still act on
    (``stale_reason``).  Two LeaderAndISRs may still swap: the leader epoch fences the older
    one once the newer is taken, so a swap adds only runs in which the older was lost.  A
    StopReplica deletes what that fence reads, so a swap across one gives runs no FIFO
    channel can (docs/model.md, "Control requests in channel order")."""
    if isinstance(m, LeaderAndIsr):
        return any(sent_earlier(cfg, stop, m) for stop in s.stop_replica)
    return any(sent_earlier(cfg, lai, m) and stale_reason(s, cfg, lai) is None for lai in s.leader_and_isr)


def _waiting_since_startup(cfg: Config, r: Replica) -> bool:
    """A replica of a broker that started without reading ZooKeeper
    (``Config.startup_from_controller``) and has no role yet: Kafka holds no partition state
    for it in memory, so the controller's LeaderAndISR of the epoch its log already knows is
    news to it, and it applies it."""
    return cfg.startup_from_controller and r.role == NONE and r.leader == NO_LEADER


def _accept(s: State, cfg: Config, m: LeaderAndIsr) -> State:
    """Bookkeeping common to every accepted control request: learn the controller epoch
    (and with it that one is no longer controller), and note in the ghost history if the
    request came from a superseded controller."""
    broker = s.brokers[m.to]
    ghost = s.ghost
    if m.controller_epoch < broker.controller_epoch or m.max_broker_epoch < broker.broker_epoch:
        ghost = ghost._replace(stale_accepts=ghost.stale_accepts + 1)
    if m.controller_epoch > broker.controller_epoch:
        # seed 002: a newer controller epoch means "a new controller has been elected":
        # a broker that still acted as controller realises it no longer is.
        broker = stops_controlling(broker._replace(controller_epoch=m.controller_epoch))
    return s._replace(brokers=put_at(s.brokers, m.to, broker), ghost=ghost)


def become_leader(s: State, cfg: Config, m: LeaderAndIsr) -> State | None:
    """Seed 000 C ``becomeLeader``: stop fetching, take the ISR and zk_version from the
    command, start serving reads and writes."""
    b, p = m.to, m.partition
    if m not in s.leader_and_isr or m.leader != b or s.brokers[b].status != UP:
        return None
    if stale_reason(s, cfg, m) is not None or waits_in_channel(s, cfg, m):
        return None
    s = drop_responses_to(_accept(s, cfg, m), b, p)
    r = for_incarnation(cfg, replica(s, b, p), m.topic_id)
    r = Replica(LEADER, b, m.leader_epoch, m.isr, m.zk_version, r.log, r.hw, IDLE, followers_known(cfg, r), r.leo, m.topic_id)
    s = set_replica(s, b, p, r)
    if is_current(s, p, r):  # a deleted incarnation's leaders are no history of the current one
        s = s._replace(ghost=s.ghost._replace(led=added(s.ghost.led, (p, m.leader_epoch, b))))
    return advance_hw(s, cfg, b, p)


def followers_known(cfg: Config, r: Replica) -> tuple[int, ...]:
    """The followers' fetch offsets a replica made leader starts its epoch with: none known
    (each UNKNOWN until the follower fetches in the new epoch) -- but with
    ``Config.leader_keeps_follower_state`` a replica that already leads keeps what it knew:
    Kafka's ``Partition.makeLeader`` resets a remote replica's log end offset only for a new
    leader (``isNewLeader``); a new leader epoch for the same leader keeps it
    (``Replica.resetReplicaState``).  Safe: those offsets were fetched from this leader's own
    log, which only grew since."""
    if cfg.leader_keeps_follower_state and r.role == LEADER:
        return r.follower_leo
    return unknown_leos(cfg)


def become_follower(s: State, cfg: Config, m: LeaderAndIsr) -> State | None:
    """Seed 000 C 2.2: follow the named leader "if the broker is not already following L"
    (with fenced fetching, every new leader epoch restarts the fetcher)."""
    b, p = m.to, m.partition
    if m not in s.leader_and_isr or m.leader == b or s.brokers[b].status != UP:
        return None
    if stale_reason(s, cfg, m) is not None or waits_in_channel(s, cfg, m):
        return None
    s = _accept(s, cfg, m)
    r = for_incarnation(cfg, replica(s, b, p), m.topic_id)
    if m.leader == NO_LEADER:
        r = Replica(FOLLOWER, NO_LEADER, m.leader_epoch, (), -1, r.log, r.hw, IDLE, unknown_leos(cfg), 0, m.topic_id)
        return set_replica(drop_responses_to(s, b, p), b, p, r)
    already = r.role == FOLLOWER and r.leader == m.leader and not cfg.refollow_on_new_epoch
    if already:
        return set_replica(s, b, p, r._replace(leader_epoch=m.leader_epoch, topic_id=m.topic_id))
    return set_replica(drop_responses_to(s, b, p), b, p, following(cfg, r, m.leader, m.leader_epoch, m.topic_id))


def reject_leader_and_isr(s: State, cfg: Config, m: LeaderAndIsr) -> State | None:
    """A broker refuses a stale LeaderAndISR: nothing changes.  (Never explored by the
    checker -- it is a self-loop -- but traces record it and conformance replays it.)  A
    repetition of the decision its replica holds (``repeats_held_decision``) is stale too,
    but no broker refuses it: it takes it silently, which changes nothing and records
    nothing, so its delivery is no step at all."""
    if s.brokers[m.to].status != UP:
        return None
    if stale_reason(s, cfg, m) is None or repeats_held_decision(s, cfg, m):
        return None
    return s


def truncate(s: State, cfg: Config, f: int, p: int) -> State | None:
    """KIP-101/279/320: a new follower asks its leader where its latest epoch ends
    (OffsetsForLeaderEpoch) and truncates there before fetching.  With fenced fetching the
    request carries the follower's leader epoch and a leader in another epoch refuses it."""
    r = replica(s, f, p)
    if s.brokers[f].status != UP or r.role != FOLLOWER or r.fetch_state != TRUNCATING:
        return None
    if r.leader == NO_LEADER or s.brokers[r.leader].status != UP:
        return None
    lr = replica(s, r.leader, p)
    if lr.role != LEADER or (cfg.fenced_fetch and lr.leader_epoch != r.leader_epoch):
        return None
    cut = truncation_point(cfg.truncation, r.log, r.hw, lr.log, lr.leader_epoch)
    r = r._replace(log=r.log[:cut], hw=min(r.hw, cut), fetch_state=FETCHING)
    return set_replica(s, f, p, r)


def request_addressee(args: Args) -> int:
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
    actor=request_addressee, freezing=True,
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
    actor=request_addressee, freezing=True,
)


def _reject_view(args: Args, before: State, after: State) -> View:
    view = _request_view(args, before, after)
    view["reason"] = (stale_reason(before, REJECT_CFG, args[0]) or "").replace(" ", "_")
    return view


UNNAMED_LEADER = -2
"""The leader of a refused request rebuilt from an event that does not name it: no broker,
and not ``NO_LEADER`` either, so the rebuilt request repeats no decision a replica holds
(``repeats_held_decision``) -- a refusal that does not say what it refused is judged by
its epochs alone."""


def _refused_request(fields: dict[str, Any], actor: int, s: State) -> Args:
    """The refused request, rebuilt from the event: the model forgets stale requests, and a
    max broker epoch the event does not name means the request was meant for this incarnation."""
    mbe = fields.get("max_broker_epoch", s.brokers[actor].broker_epoch)
    return (LeaderAndIsr(actor, 0, fields.get("leader", UNNAMED_LEADER), fields.get("leader_epoch", -1), (), -1,
                         fields.get("controller_epoch", -1), mbe),)


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
    coverage=Coverage(native=Supported("native/expire.c: a self-loop no search takes; the successors mode answers it"),
                      z3=Unsupported("a self-loop: no search takes it"),
                      judge=Supported("rebuilt from the event: the model forgets refused requests"),
                      driver=DRIVEN),
    explored=False, actor=request_addressee, from_event=_refused_request,
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


def _nothing_cut(args: Args, before: State, after: State) -> bool:
    """An epoch lookup that cuts nothing: on an empty log implementations (like Kafka) send
    none, and from inter-broker protocol 2.7 Kafka looks up no epoch at all -- the Fetch
    carries the last fetched epoch and the leader answers a diverging epoch in it (KIP-595's
    truncation inside Fetch), so a follower whose log agrees logs no truncation."""
    return before.brokers[args[0]].replicas[0].log == after.brokers[args[0]].replicas[0].log


TRUNCATE = Entry(
    "truncate", truncate, broker_partitions_args,
    section="000 C", impl="impl.node.broker.Broker._truncate_by_epoch", trace=Traced("truncate"),
    describe=_truncate_text, view=_truncate_view, event=_truncate_event,
    coverage=Coverage(native=Supported(), z3=Supported("all four truncation rules; of KIP-279 the first "
                                                       "OffsetsForLeaderEpoch round only, which no reachable "
                                                       "state tells from the rounds (model.truncation.single_round)"),
                      judge=Supported(),
                      driver=DRIVEN),
    silent=_nothing_cut,
)


ENTRIES = (BECOME_LEADER, BECOME_FOLLOWER, REJECT_LEADER_AND_ISR, TRUNCATE)
KNOBS = ()
