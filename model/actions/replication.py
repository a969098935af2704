"""Replication (seed 000 G): a client's write to the leader, the follower's fetch round trip,
the high watermark, and the leader's conditional ISR updates in ZooKeeper."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from model.actions.common import (
    added,
    broker_partitions_args,
    is_current,
    put_at,
    removed,
    replica,
    set_replica,
    set_znode,
    unknown_leos,
)
from model.actions.entry import (
    DRIVEN,
    Args,
    Coverage,
    Emitted,
    Entry,
    Knob,
    Supported,
    Traced,
    View,
)
from model.actions.views import ERRORS, FENCED, always, entries, new_response, records
from model.state import (
    FETCH_REQUEST,
    FETCH_RESPONSE,
    FETCHING,
    FOLLOWER,
    LEADER,
    NO_LEADER,
    NONE,
    OK,
    OUT_OF_RANGE,
    UNKNOWN,
    UP,
    Fetch,
    Replica,
    State,
)
from model.state import Entry as LogEntry
from model.text import brokers_text, log_text, record, value_text

if TYPE_CHECKING:
    from model.config import Config


FETCH_MAX_RECORDS = Knob(
    "fetch_max_records", "fetch answers cut short", default=0,
    help="the most records a leader's fetch answer carries (Kafka's byte limits), 0: every record from the offset")


def isr_changes_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((b, p, f) for b in range(cfg.brokers) for p in range(len(s.zk.partitions)) for f in range(cfg.brokers) if f != b)


def fetch_messages_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.fetches)


def advance_hw(s: State, cfg: Config, b: int, p: int, cap: int | None = None) -> State:
    """``leader.hw = min of leo of every replica in ISR`` -- never moving backwards.

    A follower's LEO is what it last fetched from (UNKNOWN until it fetches from this leader
    in this term, as Kafka's makeLeader resets it).  Records passing below the new HW are
    committed; those this leader appended in its own term are acknowledged to their acks=all
    producers if the ISR still has ``min.insync.replicas`` members.  ``cap``: where a
    follower outside the ISR holds the advance (``held_at``), if one does.
    """
    r = replica(s, b, p)
    new_hw = isr_least_leo(s, b, p, r) if cap is None else cap
    if new_hw <= r.hw:
        return s
    if not is_current(s, p, r):  # a leader of a deleted incarnation: nothing it does counts
        return set_replica(s, b, p, r._replace(hw=new_hw))
    ghost = s.ghost
    committed, acked, zombie_commits = ghost.committed, ghost.acked, ghost.zombie_commits
    superseded = any(lp == p and e > r.leader_epoch for lp, e, _ in ghost.led)
    for offset in range(r.hw, new_hw):
        entry = r.log[offset]
        committed = added(committed, (p, offset, entry))
        if entry.epoch == r.leader_epoch and len(r.isr) >= cfg.min_insync:
            acked = added(acked, (p, entry.value))
        if superseded and (p, entry.value) in ghost.zombie_appends:
            zombie_commits = added(zombie_commits, (p, entry.value))
    s = s._replace(ghost=ghost._replace(committed=committed, acked=acked, zombie_commits=zombie_commits))
    return set_replica(s, b, p, r._replace(hw=new_hw))


def isr_least_leo(s: State, b: int, p: int, r: Replica) -> int:
    """The least LEO of the leader's maximal ISR: where seed 000 G puts its HW."""
    return min(r.leo if x == b else r.follower_leo[x] for x in maximal_isr(s, b, p, r))


NO_HOLD = -1
"""A step's ``hold`` argument when no follower outside the ISR holds the leader's HW."""


def held_at(s: State, cfg: Config, b: int, p: int, hold: int) -> int | None:
    """Kafka's ``Partition.maybeIncrementLeaderHW`` (``Config.hw_waits_outside_isr``): the HW
    also waits for a remote replica outside the (maximal) ISR that
    ``shouldWaitForReplicaToJoinIsr`` -- caught up to the leader's LEO within
    replica.lag.time.max.ms and ISR-eligible (in ZooKeeper mode: alive in the leader's
    metadata).  The model has no clock, so the wait is a choice: any live assigned follower
    whose fetch offset the leader knows in this term may hold the advance at that offset (a
    lower HW is safe: it commits less).  The offset it holds the HW at, or None where
    ``hold`` holds nothing back -- not such a follower, or not below where the ISR puts it."""
    r = replica(s, b, p)
    if not cfg.hw_waits_outside_isr or hold == b or hold not in s.zk.partitions[p].ar or hold not in s.zk.live:
        return None
    leo, unheld = r.follower_leo[hold], isr_least_leo(s, b, p, r)
    if hold in maximal_isr(s, b, p, r) or leo == UNKNOWN or leo >= unheld or unheld <= r.hw:
        return None
    return leo


def advance_hw_held(s: State, cfg: Config, b: int, p: int, hold: int) -> State | None:
    """``advance_hw``, held by follower ``hold`` outside the ISR (``held_at``) unless
    ``NO_HOLD``; None if ``hold`` cannot hold it."""
    if hold == NO_HOLD:
        return advance_hw(s, cfg, b, p)
    cap = held_at(s, cfg, b, p, hold)
    return None if cap is None else advance_hw(s, cfg, b, p, cap)


def with_holds(args: Callable[[State, Config], Iterator[tuple]]) -> Callable[[State, Config], Iterator[tuple]]:
    """An action's arguments and, with ``Config.hw_waits_outside_isr``, each with a follower
    that may hold the HW advance the step makes (the step's ``hold``)."""
    def holding(s: State, cfg: Config) -> Iterator[tuple]:
        for a in args(s, cfg):
            yield a
            if cfg.hw_waits_outside_isr:
                yield from (a + (f,) for f in range(cfg.brokers))

    return holding


def maximal_isr(s: State, b: int, p: int, r: Replica) -> tuple[int, ...]:
    """The replicas the leader's HW waits for: its ISR, and while an ISR change it proposed
    to the controller is unanswered (``model.actions.alter_partition``), every member of the
    ISR it proposed too -- Kafka's ``maximalIsr`` (KIP-497): a follower being added may
    already be in the ISR ZooKeeper holds, so a record committed without it could be lost
    to its election.  With no proposal in flight (every configuration whose leaders write
    the ISR themselves) it is the ISR."""
    isr = r.isr
    for m in s.alter_partition:
        if m.leader == b and m.partition == p and m.leader_epoch == r.leader_epoch:
            isr = tuple(sorted(set(isr) | set(m.isr)))
    return isr


def produce(s: State, cfg: Config, b: int, p: int, hold: int = NO_HOLD) -> State | None:
    """A client's acks=all write reaches the broker that believes it leads p: appended in
    the leader's epoch; refused (NOT_ENOUGH_REPLICAS) below min.insync.replicas.  The HW
    advance it makes may be held by ``hold`` (``held_at``)."""
    r = replica(s, b, p)
    if s.brokers[b].status != UP or r.role != LEADER or s.ghost.produced >= cfg.records:
        return None
    if len(r.isr) < cfg.min_insync:
        return None
    value = s.ghost.produced + 1
    s = set_replica(s, b, p, r._replace(log=r.log + (LogEntry(value, r.leader_epoch),)))
    ghost = s.ghost._replace(produced=value)
    if any(lp == p and e > r.leader_epoch for lp, e, _ in ghost.led):  # a newer leader exists
        ghost = ghost._replace(zombie_appends=added(ghost.zombie_appends, (p, value)))
    s = s._replace(ghost=ghost)
    return advance_hw_held(s, cfg, b, p, hold)


def send_fetch(s: State, cfg: Config, f: int, p: int) -> State | None:
    """The ReplicaFetcherThread asks its leader for records from its LEO (one request
    outstanding at a time), carrying its leader epoch (and its topic id)."""
    r = replica(s, f, p)
    if s.brokers[f].status != UP or r.role != FOLLOWER or r.fetch_state != FETCHING or r.leader == NO_LEADER:
        return None
    for m in s.fetches:
        if m.follower == f and m.partition == p and m.leader == r.leader:
            return None
    req = Fetch(FETCH_REQUEST, f, r.leader, p, r.leo, r.leader_epoch, (), -1, OK, r.topic_id)
    return s._replace(fetches=added(s.fetches, req))


def handle_fetch(s: State, cfg: Config, m: Fetch, hold: int = NO_HOLD) -> State | None:
    """Seed 000 G ``on_ReplicaFetchRequest``: record the follower's LEO, advance the HW, and
    answer with the records from the fetch offset and the HW.  The answer carries what fits
    in the fetch's byte limits -- at most ``fetch_max_records`` records when that is set --
    and the leader's HW regardless, so it may be ahead of the follower's new LEO.  With fenced fetching a
    request from another leader epoch is refused (FENCED/UNKNOWN_LEADER_EPOCH).  With topic
    ids, so is a request from another incarnation of the topic: a re-created topic's epochs
    start again, so a follower's request sent before the deletion carries a current-looking
    epoch, and counting its offset would commit records nobody has (KIP-516's Fetch v13).
    The HW advance it makes may be held by ``hold`` (``held_at``); an answer that moves no
    HW takes no ``hold``."""
    if m.kind != FETCH_REQUEST or m not in s.fetches or (hold != NO_HOLD and not cfg.hw_waits_outside_isr):
        return None
    lb, p = m.leader, m.partition
    lr = replica(s, lb, p)
    if s.brokers[lb].status != UP or lr.role != LEADER:
        return None
    s = s._replace(fetches=removed(s.fetches, m))
    refused = (cfg.fenced_fetch and m.epoch != lr.leader_epoch) or (cfg.topic_ids and m.topic_id != lr.topic_id)
    if refused or m.offset > lr.leo:
        if hold != NO_HOLD:
            return None
        if refused:
            return s
        resp = Fetch(FETCH_RESPONSE, m.follower, lb, p, m.offset, lr.leader_epoch, (), lr.leo, OUT_OF_RANGE, lr.topic_id)
        return s._replace(fetches=added(s.fetches, resp))
    s = set_replica(s, lb, p, lr._replace(follower_leo=put_at(lr.follower_leo, m.follower, m.offset)))
    held = advance_hw_held(s, cfg, lb, p, hold)
    if held is None:
        return None
    s = held
    lr = replica(s, lb, p)
    answer = lr.log[m.offset : m.offset + cfg.fetch_max_records] if cfg.fetch_max_records else lr.log[m.offset :]
    resp = Fetch(FETCH_RESPONSE, m.follower, lb, p, m.offset, lr.leader_epoch, answer, lr.hw, OK, lr.topic_id)
    return s._replace(fetches=added(s.fetches, resp))


def receive_fetch(s: State, cfg: Config, m: Fetch) -> State | None:
    """Seed 000 G, the follower: append the records and take the leader's HW (never past
    its own LEO).  A response the fetcher no longer expects -- another leader, another
    offset, another epoch -- is discarded; OFFSET_OUT_OF_RANGE truncates to the leader's LEO."""
    if m.kind != FETCH_RESPONSE or m not in s.fetches:
        return None
    f, p = m.follower, m.partition
    if s.brokers[f].status != UP:
        return None
    s = s._replace(fetches=removed(s.fetches, m))
    r = replica(s, f, p)
    if (
        r.role != FOLLOWER
        or r.leader != m.leader
        or r.fetch_state != FETCHING
        or m.offset != r.leo
        or (cfg.fenced_fetch and m.epoch != r.leader_epoch)
        or (cfg.topic_ids and m.topic_id != r.topic_id)
    ):
        return s
    if m.error == OUT_OF_RANGE:
        cut = min(m.hw, r.leo)
        return set_replica(s, f, p, r._replace(log=r.log[:cut], hw=min(r.hw, cut)))
    log = r.log + m.records
    return set_replica(s, f, p, r._replace(log=log, hw=min(m.hw, len(log))))


def _conditional_isr_write(s: State, cfg: Config, b: int, p: int, isr: tuple[int, ...]) -> State | None:
    """Seed 000 G ``maybe_change_ISR``: the leader updates the ISR in ZK only if the znode is
    still at the version it knows; then adopts it locally and retries the HW."""
    lr = replica(s, b, p)
    zn = s.zk.partitions[p]
    if cfg.alter_partition or zn.zk_version != lr.zk_version:  # with AlterPartition only the controller writes
        return None
    s = set_znode(s, p, zn._replace(isr=isr, zk_version=zn.zk_version + 1))
    s = set_replica(s, b, p, lr._replace(isr=isr, zk_version=zn.zk_version + 1))
    return advance_hw(s, cfg, b, p)


def shrink_isr(s: State, cfg: Config, b: int, p: int, f: int) -> State | None:
    """A follower that lags the leader's LEO (by messages, or by time: not fetched at all in
    this term) is taken out of the ISR, so the leader can commit without it.  A follower at
    the leader's LEO is never out of sync, however long it has been silent: Kafka's
    ``isFollowerOutOfSync`` requires both ``leo != leader leo`` and the lag time passed."""
    if not out_of_sync(s, b, p, f):
        return None
    return _conditional_isr_write(s, cfg, b, p, removed(replica(s, b, p).isr, f))


def out_of_sync(s: State, b: int, p: int, f: int) -> bool:
    """Whether leader b may take follower f out of p's ISR: f is in it and behind b's LEO."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or f == b or f not in lr.isr:
        return False
    return lr.follower_leo[f] < lr.leo


def expand_isr(s: State, cfg: Config, b: int, p: int, f: int) -> State | None:
    """A follower that has caught up to the HW rejoins the ISR -- with fenced fetching only
    once it has also reached the start of the leader's epoch (KIP-320)."""
    if not caught_up(s, cfg, b, p, f):
        return None
    return _conditional_isr_write(s, cfg, b, p, added(replica(s, b, p).isr, f))


def caught_up(s: State, cfg: Config, b: int, p: int, f: int) -> bool:
    """Whether leader b may add assigned replica f to p's ISR: f has fetched up to b's HW
    (and, with fenced fetching, to the start of b's epoch)."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or f in lr.isr or f not in s.zk.partitions[p].ar:
        return False
    leo = lr.follower_leo[f]
    return not (leo == UNKNOWN or leo < lr.hw or (cfg.fenced_fetch and leo < lr.epoch_start))


def isr_update_failed(s: State, cfg: Config, b: int, p: int) -> State | None:
    """The conditional update fails because the znode moved on: "broker A will realize that
    it's no longer the leader any more" (seed 000, question 3) -- it stops acting as leader."""
    lr = replica(s, b, p)
    if cfg.alter_partition or s.brokers[b].status != UP or lr.role != LEADER or s.zk.partitions[p].zk_version == lr.zk_version:
        return None
    r = lr._replace(role=NONE, leader=NO_LEADER, isr=(), zk_version=-1, follower_leo=unknown_leos(cfg), epoch_start=0)
    return set_replica(s, b, p, r)


COVERED_EVERYWHERE = Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN)


def _produce_text(args: Args, before: State, after: State) -> str:
    b, p = args[:2]
    r = replica(after, b, p)
    held = f" (held by follower {args[2]} outside the ISR)" if len(args) > 2 else ""
    return f"client writes {record(r.log[-1])} to leader {b} (p{p}): log {log_text(r.log)}, hw={r.hw}{held}"


def _produce_view(args: Args, before: State, after: State) -> View:
    r = after.brokers[args[0]].replicas[0]
    return {"offset": r.leo - 1, "leader_epoch": r.log[-1].epoch, "value": r.log[-1].value,
            "post.hw": r.hw, "post.leo": r.leo}


def _produce_event(args: Args, before: State, after: State) -> Emitted:
    b, p = args[:2]
    r = after.brokers[b].replicas[p]
    return Emitted(b, {"offset": r.leo - 1, "value": value_text(r.log[-1].value), "leader_epoch": r.log[-1].epoch},
                   {"hw": r.hw, "leo": r.leo})


PRODUCE = Entry(
    "produce", produce, with_holds(broker_partitions_args),
    section="000 G", impl="impl.node.broker.Broker.on_produce", trace=Traced("produce"),
    describe=_produce_text, view=_produce_view, event=_produce_event, coverage=COVERED_EVERYWHERE,
)


def _send_fetch_text(args: Args, before: State, after: State) -> str:
    f, p = args
    r = replica(before, f, p)
    return f"broker {f} sends fetch(p{p}, offset={r.leo}, epoch {r.leader_epoch}) to leader {r.leader}"


def _send_fetch_view(args: Args, before: State, after: State) -> View:
    r = before.brokers[args[0]].replicas[0]
    return {"leader": r.leader, "fetch_offset": r.leo, "leader_epoch": r.leader_epoch,
            "post.hw": r.hw, "post.leo": r.leo}


def _send_fetch_event(args: Args, before: State, after: State) -> Emitted:
    f, p = args
    r = before.brokers[f].replicas[p]
    return Emitted(f, {"leader": r.leader, "fetch_offset": r.leo, "leader_epoch": r.leader_epoch}, {"hw": r.hw, "leo": r.leo})


SEND_FETCH = Entry(
    "send_fetch", send_fetch, broker_partitions_args,
    section="000 G", impl="impl.node.broker.Broker._fetcher", trace=Traced("send_fetch"),
    describe=_send_fetch_text, view=_send_fetch_view, event=_send_fetch_event, coverage=COVERED_EVERYWHERE,
    silent=always,  # a request changes nothing a trace shows
)


def _fetch_leader(args: Args) -> int:
    return args[0].leader


def _handle_fetch_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.leader, m.partition), replica(after, m.leader, m.partition)
    r = new_response(before, after, m)
    if r is None:
        return f"leader {m.leader} refuses fetch from {m.follower} (request epoch {m.epoch} ≠ its epoch {rb.leader_epoch})"
    if r.error == OUT_OF_RANGE:
        return f"leader {m.leader} answers fetch from {m.follower} at offset {m.offset} with OFFSET_OUT_OF_RANGE (its LEO is {rb.leo})"
    hw = f"HW {rb.hw} → {ra.hw}, commits {log_text(ra.log[rb.hw:ra.hw])}" if ra.hw != rb.hw else f"hw={ra.hw}"
    hw += f" (held by follower {args[1]} outside the ISR)" if len(args) > 1 else ""
    return f"leader {m.leader} handles fetch from {m.follower} at offset {m.offset} (epoch {m.epoch}): {hw}; replies {log_text(r.records)}"


def _handle_fetch_view(args: Args, before: State, after: State) -> View:
    m = args[0]
    lr = after.brokers[m.leader].replicas[0]
    resp = new_response(before, after, m)
    view = {"follower": m.follower, "fetch_offset": m.offset, "leader_epoch": lr.leader_epoch,
            "post.hw": lr.hw, "post.leo": lr.leo, "post.isr": list(lr.isr)}
    if resp is None:
        view.update(error=FENCED, records=[], leader_hw=None)
    else:
        view.update(error=ERRORS.get(resp.error), records=entries(m.offset, resp.records), leader_hw=resp.hw)
    return view


def _handle_fetch_event(args: Args, before: State, after: State) -> Emitted:
    m = args[0]
    lr = after.brokers[m.leader].replicas[m.partition]
    resp = new_response(before, after, m)
    params: dict = {"follower": m.follower, "fetch_offset": m.offset, "leader_epoch": lr.leader_epoch}
    if resp is None:
        params.update(records=[], leader_hw=None, error=FENCED)
    else:
        params.update(records=records(m.offset, resp.records), leader_hw=resp.hw, error=ERRORS.get(resp.error))
    return Emitted(m.leader, params, {"hw": lr.hw, "leo": lr.leo, "isr": list(lr.isr)})


def _answered_without_news(args: Args, before: State, after: State) -> bool:
    """The leader's replica did not change and the answer carries no records."""
    m = args[0]
    resp = new_response(before, after, m)
    same = before.brokers[m.leader].replicas[0] == after.brokers[m.leader].replicas[0]
    return same and (resp is None or not resp.records)


HANDLE_FETCH = Entry(
    "handle_fetch", handle_fetch, with_holds(fetch_messages_args),
    section="000 G", impl="impl.node.broker.Broker._replica_fetch", trace=Traced("handle_fetch"),
    describe=_handle_fetch_text, view=_handle_fetch_view, event=_handle_fetch_event, coverage=COVERED_EVERYWHERE,
    knob=FETCH_MAX_RECORDS, actor=_fetch_leader, silent=_answered_without_news,
)


def _fetch_follower(args: Args) -> int:
    return args[0].follower


def _receive_fetch_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.follower, m.partition), replica(after, m.follower, m.partition)
    if ra == rb:
        return f"broker {m.follower} discards a stale fetch response from {m.leader}"
    if m.error == OUT_OF_RANGE:
        return f"broker {m.follower} gets OFFSET_OUT_OF_RANGE from {m.leader} and truncates: {log_text(rb.log)} → {log_text(ra.log)}"
    return f"broker {m.follower} appends {log_text(m.records)} from leader {m.leader} and takes hw={ra.hw}: log {log_text(ra.log)}"


def _receive_fetch_view(args: Args, before: State, after: State) -> View:
    m = args[0]
    rb, ra = before.brokers[m.follower].replicas[0], after.brokers[m.follower].replicas[0]
    appended = ra.log[rb.leo:] if ra.log[: rb.leo] == rb.log else ()
    return {"leader": m.leader, "fetch_offset": m.offset, "leader_epoch": ra.leader_epoch,
            "records": entries(rb.leo, appended), "leader_hw": m.hw, "error": ERRORS.get(m.error),
            "post.hw": ra.hw, "post.leo": ra.leo}


def _receive_fetch_event(args: Args, before: State, after: State) -> Emitted:
    m = args[0]
    rb, ra = before.brokers[m.follower].replicas[m.partition], after.brokers[m.follower].replicas[m.partition]
    appended = ra.log[rb.leo:] if ra.log[: rb.leo] == rb.log else ()
    return Emitted(m.follower, {"leader": m.leader, "fetch_offset": m.offset, "leader_epoch": ra.leader_epoch,
                                "records": records(rb.leo, appended), "leader_hw": m.hw,
                                "error": ERRORS.get(m.error)}, {"hw": ra.hw, "leo": ra.leo})


def _follower_unchanged(args: Args, before: State, after: State) -> bool:
    """A response dropped, or one that brought nothing new."""
    f = args[0].follower
    return before.brokers[f].replicas[0] == after.brokers[f].replicas[0]


RECEIVE_FETCH = Entry(
    "receive_fetch", receive_fetch, fetch_messages_args,
    section="000 G", impl="impl.node.broker.Broker._apply_fetched", trace=Traced("receive_fetch"),
    describe=_receive_fetch_text, view=_receive_fetch_view, event=_receive_fetch_event, coverage=COVERED_EVERYWHERE,
    actor=_fetch_follower, silent=_follower_unchanged,
)


def _isr_change_text(verb: str) -> Callable[[Args, State, State], str]:
    def text(args: Args, before: State, after: State) -> str:
        b, p, f = args
        rb, ra = replica(before, b, p), replica(after, b, p)
        hw = f", HW {rb.hw} → {ra.hw}" if ra.hw != rb.hw else ""
        return (f"leader {b} {verb} {f} {'from' if verb == 'removes' else 'to'} the ISR of p{p} by conditional ZK write: "
                f"{brokers_text(ra.isr)} (zk_version {rb.zk_version} → {ra.zk_version}){hw}")

    return text


def _isr_change_view(args: Args, before: State, after: State) -> View:
    zn = after.zk.partitions[0]
    return {"follower": args[2], "isr": list(zn.isr), "zk_version": zn.zk_version}


def _isr_change_event(args: Args, before: State, after: State) -> Emitted:
    b, p, f = args
    zn = after.zk.partitions[p]
    return Emitted(b, {"follower": f, "isr": list(zn.isr), "zk_version": zn.zk_version}, zk=True)


SHRINK_ISR = Entry(
    "shrink_isr", shrink_isr, isr_changes_args,
    section="000 G", impl="impl.node.broker.Broker._isr_checker", trace=Traced("shrink_isr"),
    describe=_isr_change_text("removes"), view=_isr_change_view, event=_isr_change_event,
    coverage=COVERED_EVERYWHERE, cut_short=True,
)


EXPAND_ISR = Entry(
    "expand_isr", expand_isr, isr_changes_args,
    section="000 G", impl="impl.node.broker.Broker._replica_fetch", trace=Traced("expand_isr"),
    describe=_isr_change_text("adds"), view=_isr_change_view, event=_isr_change_event,
    coverage=COVERED_EVERYWHERE, cut_short=True,
)


def _isr_failed_text(args: Args, before: State, after: State) -> str:
    b, p = args
    rb = replica(before, b, p)
    return (f"leader {b}'s conditional ISR write for p{p} fails (ZK at version {before.zk.partitions[p].zk_version}, "
            f"it knew {rb.zk_version}): it stops acting as leader")


ISR_UPDATE_FAILED = Entry(
    "isr_update_failed", isr_update_failed, broker_partitions_args,
    section="000 G", impl="impl.node.broker.Broker._write_isr", trace=Traced("isr_update_failed"),
    describe=_isr_failed_text,
    view=lambda args, before, after: {"expected_zk_version": before.brokers[args[0]].replicas[0].zk_version},
    event=lambda args, before, after: Emitted(args[0], {"expected_zk_version": before.brokers[args[0]].replicas[args[1]].zk_version}),
    coverage=COVERED_EVERYWHERE,
)


ENTRIES = (PRODUCE, SEND_FETCH, HANDLE_FETCH, RECEIVE_FETCH, SHRINK_ISR, EXPAND_ISR, ISR_UPDATE_FAILED)
KNOBS = (FETCH_MAX_RECORDS,)
