"""Replication: produce, fetch, high watermark and ISR (seed 000 G)."""

from __future__ import annotations

from model.actions.common import (
    added,
    is_current,
    put_at,
    removed,
    replica,
    set_replica,
    set_znode,
    unknown_leos,
)
from model.config import Config
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
    Entry,
    Fetch,
    State,
)


def advance_hw(s: State, cfg: Config, b: int, p: int) -> State:
    """``leader.hw = min of leo of every replica in ISR`` -- never moving backwards.

    A follower's LEO is what it last fetched from (UNKNOWN until it fetches from this leader
    in this term, as Kafka's makeLeader resets it).  Records passing below the new HW are
    committed; those this leader appended in its own term are acknowledged to their acks=all
    producers if the ISR still has ``min.insync.replicas`` members.
    """
    r = replica(s, b, p)
    new_hw = min(r.leo if x == b else r.follower_leo[x] for x in r.isr)
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




def produce(s: State, cfg: Config, b: int, p: int) -> State | None:
    """A client's acks=all write reaches the broker that believes it leads p: appended in
    the leader's epoch; refused (NOT_ENOUGH_REPLICAS) below min.insync.replicas."""
    r = replica(s, b, p)
    if s.brokers[b].status != UP or r.role != LEADER or s.ghost.produced >= cfg.records:
        return None
    if len(r.isr) < cfg.min_insync:
        return None
    value = s.ghost.produced + 1
    s = set_replica(s, b, p, r._replace(log=r.log + (Entry(value, r.leader_epoch),)))
    ghost = s.ghost._replace(produced=value)
    if any(lp == p and e > r.leader_epoch for lp, e, _ in ghost.led):  # a newer leader exists
        ghost = ghost._replace(zombie_appends=added(ghost.zombie_appends, (p, value)))
    s = s._replace(ghost=ghost)
    return advance_hw(s, cfg, b, p)


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


def handle_fetch(s: State, cfg: Config, m: Fetch) -> State | None:
    """Seed 000 G ``on_ReplicaFetchRequest``: record the follower's LEO, advance the HW, and
    answer with the records from the fetch offset and the HW.  With fenced fetching a
    request from another leader epoch is refused (FENCED/UNKNOWN_LEADER_EPOCH).  With topic
    ids, so is a request from another incarnation of the topic: a re-created topic's epochs
    start again, so a follower's request sent before the deletion carries a current-looking
    epoch, and counting its offset would commit records nobody has (KIP-516's Fetch v13)."""
    if m.kind != FETCH_REQUEST or m not in s.fetches:
        return None
    lb, p = m.leader, m.partition
    lr = replica(s, lb, p)
    if s.brokers[lb].status != UP or lr.role != LEADER:
        return None
    s = s._replace(fetches=removed(s.fetches, m))
    if cfg.fenced_fetch and m.epoch != lr.leader_epoch:
        return s
    if cfg.topic_ids and m.topic_id != lr.topic_id:
        return s
    if m.offset > lr.leo:
        resp = Fetch(FETCH_RESPONSE, m.follower, lb, p, m.offset, lr.leader_epoch, (), lr.leo, OUT_OF_RANGE, lr.topic_id)
        return s._replace(fetches=added(s.fetches, resp))
    s = set_replica(s, lb, p, lr._replace(follower_leo=put_at(lr.follower_leo, m.follower, m.offset)))
    s = advance_hw(s, cfg, lb, p)
    lr = replica(s, lb, p)
    resp = Fetch(FETCH_RESPONSE, m.follower, lb, p, m.offset, lr.leader_epoch, lr.log[m.offset :], lr.hw, OK, lr.topic_id)
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
    if zn.zk_version != lr.zk_version:
        return None
    s = set_znode(s, p, zn._replace(isr=isr, zk_version=zn.zk_version + 1))
    s = set_replica(s, b, p, lr._replace(isr=isr, zk_version=zn.zk_version + 1))
    return advance_hw(s, cfg, b, p)


def shrink_isr(s: State, cfg: Config, b: int, p: int, f: int) -> State | None:
    """A follower that lags the leader's LEO (by messages, or by time: not fetched at all in
    this term) is taken out of the ISR, so the leader can commit without it.  A follower at
    the leader's LEO is never out of sync, however long it has been silent: Kafka's
    ``isFollowerOutOfSync`` requires both ``leo != leader leo`` and the lag time passed."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or f == b or f not in lr.isr:
        return None
    if lr.follower_leo[f] >= lr.leo:
        return None
    return _conditional_isr_write(s, cfg, b, p, removed(lr.isr, f))


def expand_isr(s: State, cfg: Config, b: int, p: int, f: int) -> State | None:
    """A follower that has caught up to the HW rejoins the ISR -- with fenced fetching only
    once it has also reached the start of the leader's epoch (KIP-320)."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or f in lr.isr or f not in s.zk.partitions[p].ar:
        return None
    leo = lr.follower_leo[f]
    if leo == UNKNOWN or leo < lr.hw or (cfg.fenced_fetch and leo < lr.epoch_start):
        return None
    return _conditional_isr_write(s, cfg, b, p, added(lr.isr, f))


def isr_update_failed(s: State, cfg: Config, b: int, p: int) -> State | None:
    """The conditional update fails because the znode moved on: "broker A will realize that
    it's no longer the leader any more" (seed 000, question 3) -- it stops acting as leader."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or s.zk.partitions[p].zk_version == lr.zk_version:
        return None
    r = lr._replace(role=NONE, leader=NO_LEADER, isr=(), zk_version=-1, follower_leo=unknown_leos(cfg), epoch_start=0)
    return set_replica(s, b, p, r)
