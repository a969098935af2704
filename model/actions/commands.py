"""Brokers acting on LeaderAndISR (seed 000 C)."""

from __future__ import annotations

from model.actions.common import (
    added,
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
from model.actions.replication import advance_hw
from model.config import Config
from model.state import (
    DELETED,
    FETCHING,
    FOLLOWER,
    IDLE,
    LEADER,
    NO_LEADER,
    TRUNCATING,
    UP,
    LeaderAndIsr,
    Replica,
    State,
)
from model.truncation import truncation_point


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
    if m.leader_epoch <= for_incarnation(cfg, r, m.topic_id).leader_epoch:
        return "stale leader epoch"
    return None


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
    if stale_reason(s, cfg, m) is not None:
        return None
    s = drop_responses_to(_accept(s, cfg, m), b, p)
    r = for_incarnation(cfg, replica(s, b, p), m.topic_id)
    r = Replica(LEADER, b, m.leader_epoch, m.isr, m.zk_version, r.log, r.hw, IDLE, unknown_leos(cfg), r.leo, m.topic_id)
    s = set_replica(s, b, p, r)
    if is_current(s, p, r):  # a deleted incarnation's leaders are no history of the current one
        s = s._replace(ghost=s.ghost._replace(led=added(s.ghost.led, (p, m.leader_epoch, b))))
    return advance_hw(s, cfg, b, p)




def become_follower(s: State, cfg: Config, m: LeaderAndIsr) -> State | None:
    """Seed 000 C 2.2: follow the named leader "if the broker is not already following L"
    (with fenced fetching, every new leader epoch restarts the fetcher)."""
    b, p = m.to, m.partition
    if m not in s.leader_and_isr or m.leader == b or s.brokers[b].status != UP:
        return None
    if stale_reason(s, cfg, m) is not None:
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
    checker -- it is a self-loop -- but traces record it and conformance replays it.)"""
    if s.brokers[m.to].status != UP:
        return None
    return s if stale_reason(s, cfg, m) is not None else None


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
