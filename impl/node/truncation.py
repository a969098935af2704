"""Where a new follower cuts its log: the design's rule and the leader-epoch rule.

* ``hw`` -- seed 000 C ``becomeFollower`` as written: "truncate the log to r.hw", then fetch
  from ``r.leo``.  This is the rule the model's ``design`` configuration shows losing
  committed records (KIP-101's scenario), kept so the implementation can reproduce it.
* ``kip320`` (default) -- the follower asks the leader for the end offset of its own latest
  leader epoch (OffsetsForLeaderEpoch, KIP-101), and if the leader does not know that epoch
  it also looks up its *own* end offset for the epoch the leader answered with (KIP-279);
  it truncates to the smaller.  Fetches then carry the follower's view of the leader epoch
  and the leader fences mismatches (KIP-320).
* ``kip101`` and ``kip279`` -- the history between (the model's configurations of the same
  names), kept so a driven run can reproduce what each lost: ``kip101`` takes the end offset
  of its latest epoch as the leader answers it, in one round, whatever epoch the leader
  found (KIP-279's divergence); ``kip279`` is ``kip320``'s lookup without KIP-320's fenced
  fetching (a stale follower's fetch is answered and counted).
* **As many rounds as it takes** (Kafka's fetcher, ``truncationCompleted = false``): when the
  leader answers with an epoch the follower does not have, one round cannot tell where the
  logs agree.  With follower epochs [0, 2, 4] against leader epochs [1, 3, 5] (one record
  each) the leader answers epoch 3 ending at 2, and cutting to 2 leaves epoch 2 against the
  leader's 3 at offset 1: the logs never converge.  So the follower cuts to where its own
  largest epoch below the answer ends, forgets the later epochs, and asks again with that
  epoch, until the leader answers an epoch it has (or none).

The functions are pure so the rules can be unit-tested apart from sockets and disks.
"""

from __future__ import annotations

from impl.node.log import UNDEFINED_EPOCH, LeaderEpochCache, PartitionLog

RULES = ("hw", "kip101", "kip279", "kip320")


def normalise_rule(name: str) -> str:
    """Accept the model's configuration name ``design`` for the seed's rule."""
    rule = {"design": "hw"}.get(name, name)
    if rule not in RULES:
        raise ValueError(f"unknown truncation rule {name!r} (choose from {', '.join(RULES)})")
    return rule


def hw_truncation_point(hw: int, leo: int) -> int:
    """Seed 000 C: truncate to the local high watermark."""
    return min(hw, leo)


def epoch_truncation_point(follower_epochs: LeaderEpochCache, follower_leo: int,
                           requested_epoch: int, leader_epoch_found: int,
                           leader_end_offset: int) -> int:
    """KIP-101/279: the offset a follower truncates to after an epoch lookup at the leader.

    ``requested_epoch`` is the follower's latest epoch; the leader answered
    (``leader_epoch_found``, ``leader_end_offset``) for it.  If the leader has that very
    epoch, the logs agree up to ``leader_end_offset``.  If the leader only has an older one,
    the logs agree at most up to where that older epoch ends in *both* logs.
    """
    if requested_epoch == UNDEFINED_EPOCH:
        return 0 if follower_leo == 0 else min(follower_leo, leader_end_offset)
    if leader_epoch_found == UNDEFINED_EPOCH:
        return min(follower_leo, max(0, leader_end_offset) if leader_end_offset >= 0 else 0)
    if leader_epoch_found == requested_epoch:
        return min(follower_leo, leader_end_offset)
    _, own_end = follower_epochs.end_offset_for(leader_epoch_found, follower_leo)
    return min(follower_leo, leader_end_offset, own_end)


def leader_epoch_answer(leader_epochs: LeaderEpochCache, leader_leo: int, current_epoch: int,
                        requested_epoch: int) -> tuple[int, int]:
    """The leader's side of OffsetsForLeaderEpoch (KIP-101/279): (the largest epoch it has at
    most ``requested_epoch``, where that epoch ends in its log); its current epoch ends at
    its LEO."""
    if requested_epoch == current_epoch:
        return requested_epoch, leader_leo
    return leader_epochs.end_offset_for(requested_epoch, leader_leo)


def epoch_truncation_step(follower_epochs: LeaderEpochCache, follower_leo: int,
                          requested_epoch: int, leader_epoch_found: int,
                          leader_end_offset: int) -> tuple[int, bool]:
    """One OffsetsForLeaderEpoch round as Kafka's follower takes it: (offset to truncate to,
    whether the truncation is complete).

    If the leader answered with an epoch the follower does not have, but the follower has an
    older one, the logs may disagree below the answer's end offset too: the follower cuts to
    where its own largest epoch below the answer ends and must ask again (not complete).
    Otherwise :func:`epoch_truncation_point` is the answer and the truncation is complete."""
    if UNDEFINED_EPOCH not in (requested_epoch, leader_epoch_found) \
            and leader_epoch_found != requested_epoch:
        own_epoch, own_end = follower_epochs.end_offset_for(leader_epoch_found, follower_leo)
        if own_epoch not in (UNDEFINED_EPOCH, leader_epoch_found):
            return min(follower_leo, own_end), False
    return epoch_truncation_point(follower_epochs, follower_leo, requested_epoch,
                                  leader_epoch_found, leader_end_offset), True


def kip101_truncation_point(follower_leo: int, leader_end_offset: int) -> int:
    """KIP-101 as first shipped: the end offset the leader answered for the follower's latest
    epoch, taken as is (the model's ``model.truncation.kip101``)."""
    return min(follower_leo, max(0, leader_end_offset))


def truncate_round(log: PartitionLog, requested_epoch: int, leader_epoch_found: int,
                   leader_end_offset: int, rule: str = "kip320") -> tuple[int, bool]:
    """Apply one round (:func:`epoch_truncation_step`; under ``kip101`` the single round of
    :func:`kip101_truncation_point`) to the follower's log.  A round that is not complete
    also forgets the epochs from the cut on, even ones without records, so the next round
    asks with an older epoch: each round lowers the epoch asked for, and the rounds end."""
    if rule == "kip101":
        point = kip101_truncation_point(log.leo, leader_end_offset)
        log.truncate_to(point)
        return point, True
    point, complete = epoch_truncation_step(log.epochs, log.leo, requested_epoch,
                                            leader_epoch_found, leader_end_offset)
    log.truncate_to(point)
    if not complete:
        log.forget_epochs_from(point)
    return point, complete
