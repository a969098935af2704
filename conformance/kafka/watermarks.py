"""The leader's high watermark as a step saw it, where Kafka's lines and the rebuilt step times disagree.

Kafka's lines carry the millisecond; the request log's step times are rebuilt from
millisecond durations (``conformance.kafka.adapter.steps``).  The ``High watermark updated``
line of a fetch that moved the HW can therefore sort on either side of the reads around it,
and the HW a read or a produce saw is bounded from both sides by what the leader knew of its
followers' fetch offsets then (:func:`hw_as_read`) -- of the ISR's, and of each follower
outside it that the HW waits for (:func:`waits_for`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

REPLICA_LAG = 4.0
"""Seconds of ``replica.lag.time.max.ms`` when no server.log states it (the harness's 4000)."""

_LAG = re.compile(r"replica\.lag\.time\.max\.ms = (?P<ms>\d+)")


class LeaderReplica(Protocol):
    """What this module reads and keeps of the leader's replica (``adapter._Replica``)."""

    log: list[list[object]]
    hw: int
    isr: list[int]
    fetch_offset: dict[int, int]
    became_hw: int | None
    caught_up_at: dict[int, float]  # follower -> the last time Kafka counts it caught up
    last_read: dict[int, tuple[float, int]]  # follower -> its last fetch's read: (time, the leader's log end)


def replica_lag(run_dir: Path) -> float:
    """The run's ``replica.lag.time.max.ms`` in seconds, as a broker's server.log states its
    configuration at start."""
    for path in sorted(run_dir.glob("broker-*/logs/server.log")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for text in f:
                m = _LAG.search(text)
                if m is not None:
                    return int(m["ms"]) / 1000
    return REPLICA_LAG


def note_read(r: LeaderReplica, follower: int, offset: int, ts: float) -> None:
    """A follower's fetch at ``offset`` read at ``ts``: when Kafka counts it caught up
    (``Replica.updateFetchState``) -- a fetch at the leader's log end is caught up now, one at
    or past where the log ended as the follower's previous fetch was read was caught up then."""
    last = r.last_read.get(follower)
    if offset >= len(r.log):
        r.caught_up_at[follower] = ts
    elif last is not None and offset >= last[1]:
        r.caught_up_at[follower] = max(r.caught_up_at.get(follower, float("-inf")), last[0])
    r.last_read[follower] = (ts, len(r.log))


def waits_for(r: LeaderReplica, leader: int, live: Iterable[int], ts: float, lag: float) -> list[int]:
    """The followers outside the ISR the HW waits for at ``ts``: Kafka's
    ``maybeIncrementLeaderHW`` waits for each remote replica that
    ``shouldWaitForReplicaToJoinIsr`` -- caught up within replica.lag.time.max.ms (``lag``)
    and alive (``live``: the followers whose process runs) -- the model's ``hold``
    (``model.actions.replication.held_at``).  A restarted follower about to be added to the
    ISR holds the HW where it fetched, and the other follower's fetch past it moves nothing:
    the ``High watermark updated`` line comes with the restarted follower's next fetch,
    after the expansion.  tests/conformance/kafka/test_watermarks_model.py holds it (and
    :func:`hw_as_read`) to ``held_at`` in every small situation of three brokers."""
    return [f for f in live if f != leader and f >= 0 and f not in r.isr and f in r.fetch_offset
            and r.caught_up_at.get(f, float("-inf")) > ts - lag]


def hw_as_read(r: LeaderReplica, leader: int, waiting: Iterable[int]) -> int:
    """The leader's HW as a fetch is read (or a record appended): the last one its
    partition.log wrote, but no higher than the offsets its ISR followers are known to have
    fetched from -- two followers' fetches read in one millisecond may sort after the HW
    update the second one made, and the first would seem to see it -- and no lower than the
    least of those offsets and of the followers outside the ISR it ``waiting`` for
    (:func:`waits_for`): the read that moved the HW is sorted before the line that says so."""
    followers = [f for f in r.isr if f != leader]
    known = [r.fetch_offset[f] for f in followers if f in r.fetch_offset]
    hw = min([r.hw, *known])
    if len(known) < len(followers) and r.became_hw is not None:
        # a new leader's HW moves only once every ISR follower fetched in its epoch: a HW line
        # before that was written by a read whose step is rebuilt later (a long local time)
        hw = min(hw, r.became_hw)
    if len(known) == len(followers):
        # and no lower than the known offsets make it: the line of the HW update this read
        # made can carry a later millisecond than the read rebuilt from durations
        hw = max(hw, min([len(r.log), *known, *(r.fetch_offset[f] for f in waiting)]))
    return hw


def hw_after_make_leader(hw: int, leo: int, isr: list[int], leader: int, kept: dict[int, int]) -> int:
    """The HW a leader given a new epoch of its own ends ``Partition.makeLeader`` with: it
    keeps its followers' fetch offsets (``kept``; ``isNewLeader`` false), and the closing
    ``maybeIncrementLeaderHW`` may move the HW over them at once -- after the line that
    logged ``hw``.  (The adapter's own fetch bookkeeping starts again with the epoch: a
    fetch of the epoch before is fenced.)"""
    others = [f for f in isr if f != leader]
    if others and all(f in kept for f in others):
        return max(hw, min(leo, *(kept[f] for f in others)))
    return hw
