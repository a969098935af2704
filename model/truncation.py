"""Where a new follower truncates its log: the one rule the protocol variants disagree on.

Each function takes the follower's log (and, for the epoch-based rules, the leader's log and
current leader epoch, as the OffsetsForLeaderEpoch round trip would reveal them) and returns
the offset to truncate to.  Read them side by side: they are Kafka's history in four steps.
"""

from __future__ import annotations

from model.state import Entry

Log = tuple[Entry, ...]


def to_high_watermark(log: Log, hw: int) -> int:
    """Seed 000 C ``becomeFollower``: "truncate the log to r.hw".

    Loses committed data: a follower's HW lags the leader's, so it may cut records the
    leader has already committed -- and then be elected (KAFKA-1211, the reason for KIP-101).
    """
    return min(hw, len(log))


def end_offset_for_epoch(log: Log, epoch: int, current_epoch: int | None) -> int:
    """The leader side of OffsetsForLeaderEpoch (KIP-101): the offset where ``epoch`` ends,
    i.e. the start of the first later epoch, or the LEO if ``epoch`` is the current one or no
    later epoch has records."""
    if current_epoch is not None and epoch == current_epoch:
        return len(log)
    for offset, entry in enumerate(log):
        if entry.epoch > epoch:
            return offset
    return len(log)


def kip101(follower: Log, leader: Log, leader_epoch: int) -> int:
    """KIP-101: the follower asks for the end offset of its latest epoch and truncates to it.

    Still diverges after fast leader changes: if the leader never had the follower's latest
    epoch, the answer is the start of the leader's next epoch, which may lie *after* records
    the two logs disagree on (KIP-279's scenario).
    """
    if not follower:
        return 0
    latest = follower[-1].epoch
    return min(len(follower), end_offset_for_epoch(leader, latest, leader_epoch))


def largest_epoch_at_most(log: Log, epoch: int, current_epoch: int | None) -> int | None:
    epochs = {e.epoch for e in log}
    if current_epoch is not None:
        epochs.add(current_epoch)
    candidates = [e for e in epochs if e <= epoch]
    return max(candidates) if candidates else None


def kip279(follower: Log, leader: Log, leader_epoch: int) -> int:
    """KIP-279: the leader answers with the largest epoch it knows that is <= the follower's
    latest, and that epoch's end offset; the follower truncates to the smaller of that and
    its own end offset for the same epoch -- the first offset, searched from the tail, where
    the two logs' epochs stop matching.  (KIP-320 keeps this rule and adds fencing.)"""
    if not follower:
        return 0
    latest = follower[-1].epoch
    common = largest_epoch_at_most(leader, latest, leader_epoch)
    if common is None:  # the leader has nothing this old: every record of ours diverges
        return 0
    leader_end = end_offset_for_epoch(leader, common, leader_epoch)
    follower_end = end_offset_for_epoch(follower, common, None)
    return min(leader_end, follower_end)


def truncation_point(rule: str, follower: Log, hw: int, leader: Log, leader_epoch: int) -> int:
    """Dispatch on the configuration's truncation rule (``model.config.TRUNCATION_RULES``)."""
    if rule == "hw":
        return to_high_watermark(follower, hw)
    if rule == "kip101":
        return kip101(follower, leader, leader_epoch)
    return kip279(follower, leader, leader_epoch)  # kip279 and kip320
