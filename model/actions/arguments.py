"""The arguments worth trying in a state: the registry names one enumerator per action, and
the forgetting of requests every addressee refuses for ever."""

from __future__ import annotations

from collections.abc import Iterator

from model.actions.brokers import election_outcomes
from model.actions.commands import stale_reason
from model.actions.common import shutting_down
from model.actions.partitions import fresh_partition_id
from model.config import Config
from model.state import (
    NO_LEADER,
    LeaderAndIsr,
    State,
)


def brokers_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((b,) for b in range(cfg.brokers))


def broker_partitions_args(s: State, cfg: Config) -> Iterator[tuple]:
    # every partition id of the state (``Config.partition_ids``), created or not: a guard
    # refuses what a replica of an absent partition cannot do
    return ((b, p) for b in range(cfg.brokers) for p in range(len(s.zk.partitions)))


def isr_changes_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((b, p, f) for b in range(cfg.brokers) for p in range(len(s.zk.partitions)) for f in range(cfg.brokers) if f != b)


def elections_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p in range(len(s.zk.partitions)):
        for leader, _isr, _unclean in election_outcomes(s.zk, p, cfg, shutting_down(s)):
            yield (c, p, leader)


def startups_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c != NO_LEADER:
        yield from ((c, b) for b in s.brokers[c].new_brokers)


def shutdowns_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.shutdowns >= cfg.max_shutdowns:
        return
    stopping = s.brokers[c].shutting_down
    for p, zn in enumerate(s.zk.partitions):
        yield from ((c, p, b, zn.leader) for b in zn.ar if b not in zn.isr and b != zn.leader)  # nothing to write
        for b in zn.isr:
            moves = zn.leader == b or zn.leader in stopping  # see controlled_shutdown
            for leader in (zn.isr if moves else (zn.leader,)):
                if leader != b and not (moves and leader in stopping):
                    yield (c, p, b, leader)


def reassign_starts_args(s: State, cfg: Config) -> Iterator[tuple]:
    """A pending reassignment restarted at INIT, or -- within the bound -- a new one to any
    non-empty replica set (the current AR too: a reordering, see ``reassign_start``)."""
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.rar:
            yield (c, p, zn.rar)
        elif s.ghost.reassignments < cfg.reassignments:
            for mask in range(1, 1 << cfg.brokers):
                yield (c, p, tuple(b for b in range(cfg.brokers) if mask >> b & 1))


def reassign_completions_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.rar:
            yield from ((c, p, b) for b in zn.rar if b in s.zk.live)


def deletions_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.deletions >= cfg.deletions:
        return
    yield from ((c, p) for p, zn in enumerate(s.zk.partitions) if zn.ar and not zn.rar)


def _assignments(s: State, cfg: Config, c: int, p: int) -> Iterator[tuple]:
    """Controller c's choices for a new partition p: any non-empty AR (down brokers included,
    as an administrator's explicit assignment may name them) and any live member as leader."""
    for mask in range(1, 1 << cfg.brokers):
        ar = tuple(b for b in range(cfg.brokers) if mask >> b & 1)
        yield from ((c, p, ar, leader) for leader in ar if leader in s.zk.live)


def creations_args(s: State, cfg: Config) -> Iterator[tuple]:
    """Any non-empty assignment (down brokers included) and any live member of it as leader."""
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.ar:
            continue
        yield from _assignments(s, cfg, c, p)


def preferred_elections_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.preferred_elections >= cfg.preferred_elections:
        return
    yield from ((c, p) for p in range(len(s.zk.partitions)))


def partition_adds_args(s: State, cfg: Config) -> Iterator[tuple]:
    """The topic's next fresh partition id (``fresh_partition_id``), any non-empty AR (down
    brokers included), any live member of it as leader."""
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.partition_changes >= cfg.partition_changes:
        return
    p = fresh_partition_id(s.zk)
    if p is not None:
        yield from _assignments(s, cfg, c, p)


def partition_removals_args(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.partition_changes >= cfg.partition_changes:
        return
    yield from ((c, p) for p, zn in enumerate(s.zk.partitions) if zn.ar and not zn.rar)


def stop_requests_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.stop_replica)


def requests_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.leader_and_isr)


def fetch_messages_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.fetches)


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
    """Whether m is stale now and will stay so.  Without topic ids a deleted topic's replica
    forgets its leader epoch with its directory (seed 000 B 2), so a request refused for its
    leader epoch may be taken later; every other reason is for ever: controller and broker
    epochs never go back, and with topic ids a replica's id never does either."""
    why = stale_reason(s, cfg, m)
    return why is not None and not (why == "stale leader epoch" and cfg.deletions and not cfg.topic_ids)
