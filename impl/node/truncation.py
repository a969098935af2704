"""Where a new follower cuts its log: the design's rule and the leader-epoch rule.

* ``hw`` -- seed 000 C ``becomeFollower`` as written: "truncate the log to r.hw", then fetch
  from ``r.leo``.  This is the rule the model's ``design`` configuration shows losing
  committed records (KIP-101's scenario), kept so the implementation can reproduce it.
* ``kip320`` (default) -- the follower asks the leader for the end offset of its own latest
  leader epoch (OffsetsForLeaderEpoch, KIP-101), and if the leader does not know that epoch
  it also looks up its *own* end offset for the epoch the leader answered with (KIP-279);
  it truncates to the smaller.  Fetches then carry the follower's view of the leader epoch
  and the leader fences mismatches (KIP-320).

The functions are pure so the rules can be unit-tested apart from sockets and disks.
"""

from __future__ import annotations

from impl.node.log import UNDEFINED_EPOCH, LeaderEpochCache

RULES = ("hw", "kip320")


def normalise_rule(name: str) -> str:
    """Accept the model's configuration name ``design`` for the seed's rule."""
    rule = {"design": "hw"}.get(name, name)
    if rule not in RULES:
        raise ValueError(f"unknown truncation rule {name!r} (choose from hw, kip320)")
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
