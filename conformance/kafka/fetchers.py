"""When a follower's new leader epoch reaches its fetches.

A broker applying a LeaderAndIsr that makes it follow logs ``Follower T-P starts at leader
epoch E`` (``Partition.makeFollower``), and only then, on the same request-handler thread,
takes the partition off its replica fetcher (``[ReplicaFetcherManager on broker N] Removed
fetcher for partitions Set(T-P)``) to add it again at epoch E.  Until the removal the old
fetcher goes on in the epoch before -- an epoch lookup, a fetch its new leader fences (seen
for 27 ms under IBP 2.6, a reassignment's removal write right after its completion) -- so the
model's ``become_follower``, after which every fetch asks in epoch E, is placed at the
removal.  Logs without the removal line (the earlier trimmed fixtures) keep the first line's
time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.kafka.patterns import Line, topic_partition

SAME_REQUEST = 1.0
"""Seconds within which the removal follows its ``Follower ... starts`` line (one request's
handling; measured: 0 to 27 ms)."""


class FetcherLines:
    """The adapter's handling of the fetcher's removal (``conformance.kafka.adapter``)."""

    out: Any
    following: dict[tuple[int, str], tuple[int, tuple[str, int]]]  # (broker, thread) -> (event, key)

    if TYPE_CHECKING:  # the adapter's own (``conformance.kafka.adapter._Adapter``)
        def replica(self, topic: str, partition: int, broker: int) -> Any: ...

    def note_follow(self, broker: int, line: Line) -> None:
        """The ``become_follower`` just made from ``line``: its time waits for the removal."""
        self.following[(broker, line.thread)] = (len(self.out.events) - 1, topic_partition(line.fields["tp"]))

    def fetcher_removed(self, broker: int, line: Line) -> None:
        pending = self.following.pop((broker, line.thread), None)
        if pending is None:
            return
        at, key = pending
        ts, priority, node, event = self.out.events[at]
        if line.ts - ts > SAME_REQUEST or f"{key[0]}-{key[1]}" not in [tp.strip() for tp in line.fields["tps"].split(",")]:
            return  # not the removal of that LeaderAndIsr's handling
        self.out.events[at] = (line.ts, priority, node, event)
        self.replica(*key, broker).became_at = line.ts
