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


def kip279_round(follower: Log, leader: Log, leader_epoch: int) -> tuple[int, bool]:
    """One OffsetsForLeaderEpoch round of KIP-279: the leader answers with the largest epoch
    it knows that is <= the follower's latest, and that epoch's end offset.  If the follower
    has that epoch, it truncates to the smaller of the two end offsets and is done; if not,
    it truncates to the end of its own largest epoch below the answer and must ask again
    (Kafka's ``AbstractFetcherThread``: "the follower does not know about the epoch that
    leader replied with").  Returns (offset, done)."""
    if not follower:
        return 0, True
    common = largest_epoch_at_most(leader, follower[-1].epoch, leader_epoch)
    if common is None:  # the leader has nothing this old: every record of ours diverges
        return 0, True
    ours = largest_epoch_at_most(follower, common, None)
    if ours is None:
        return 0, True
    follower_end = end_offset_for_epoch(follower, ours, None)
    if ours != common:
        return follower_end, False
    return min(end_offset_for_epoch(leader, common, leader_epoch), follower_end), True


def kip279(follower: Log, leader: Log, leader_epoch: int) -> int:
    """KIP-279 as Kafka's follower runs it: rounds of ``kip279_round`` until one is done --
    the first offset, searched from the tail, where the two logs' epochs stop matching.
    (KIP-320 keeps this rule and adds fencing.)

    One round is not always enough: with follower epochs [0,2,4] against leader epochs
    [1,3,5] the first answer (epoch 3, ending at offset 2) names an epoch the follower never
    had, and cutting there would keep records the leader does not have.  Within the bounds
    the checker reaches, a single round never stops short (see ``single_round``)."""
    log = follower
    while True:
        cut, done = kip279_round(log, leader, leader_epoch)
        log = log[:cut]
        if done or not log:
            return len(log)


def single_round(follower: Log, leader: Log, leader_epoch: int) -> int:
    """The first round alone, taken as final -- where the model's and the implementation's
    truncation stopped before they asked again.  Kept to answer whether a run of the protocol
    can reach a state where it differs from ``kip279``: at two brokers it never does (every
    reachable truncation of kip320 at its default bounds, with max_epoch 4, and with records
    3 and max_epoch 4 -- 46,565 truncations -- gives the same offset: ``bench/bench_truncation_rounds.py``;
    the three-broker space keeps its pinned state count with the rounds)."""
    if not follower:
        return 0
    common = largest_epoch_at_most(leader, follower[-1].epoch, leader_epoch)
    if common is None:
        return 0
    return min(end_offset_for_epoch(leader, common, leader_epoch), end_offset_for_epoch(follower, common, None))


def truncation_point(rule: str, follower: Log, hw: int, leader: Log, leader_epoch: int) -> int:
    """Dispatch on the configuration's truncation rule (``model.config.TRUNCATION_RULES``)."""
    if rule == "hw":
        return to_high_watermark(follower, hw)
    if rule == "kip101":
        return kip101(follower, leader, leader_epoch)
    return kip279(follower, leader, leader_epoch)  # kip279 and kip320
