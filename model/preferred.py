"""Preferred-replica election (later Kafka, on seed 000 A's election), as a pure reference rule.

Seed 000's topic path lists a partition's assigned replicas, "the first replica is the
preferred replica".  This is the rule of the model's ``preferred_election`` action (whose AR
is sorted, so its preferred replica is the lowest id), and the one the rule-level vectors
(``model.export.vectors``) hold a port and ``impl.node.controller`` to, for any AR order.  The
preferred replica takes over only if it is alive and in the ISR -- exactly the clean choice of
``model.actions.election_outcomes`` ("any live ISR member may lead"), so the move never loses
a committed record -- and not if it already leads.  The ISR stays as it is; the write is a
new leader epoch like every other controller write of the znode.
"""

from __future__ import annotations

from collections.abc import Sequence


def preferred_leader(ar: Sequence[int], leader: int, isr: Sequence[int], live: Sequence[int]) -> int | None:
    """The new leader a preferred-replica election writes, or ``None`` for no change."""
    if not ar:
        return None
    preferred = ar[0]
    if preferred == leader or preferred not in isr or preferred not in live:
        return None
    return preferred
