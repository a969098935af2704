"""Where a new follower truncates: seed 000 C's HW rule versus the leader-epoch rule."""

from __future__ import annotations

import pytest

from impl.node.log import UNDEFINED_EPOCH, LeaderEpochCache
from impl.node.truncation import epoch_truncation_point, hw_truncation_point, normalise_rule


def cache(*entries: tuple[int, int]) -> LeaderEpochCache:
    c = LeaderEpochCache()
    for e, s in entries:
        c.assign(e, s)
    return c


def test_design_rule_truncates_to_the_local_hw_even_below_committed_data() -> None:
    # KIP-101's scenario: the follower copied a committed record (offset 1) but its HW is 1
    assert hw_truncation_point(hw=1, leo=2) == 1
    assert hw_truncation_point(hw=5, leo=3) == 3


def test_epoch_rule_keeps_records_the_leader_has_in_the_same_epoch() -> None:
    follower = cache((0, 0))
    # the leader has epoch 0 up to offset 2 (then epoch 1): nothing to cut from LEO 2
    assert epoch_truncation_point(follower, 2, 0, 0, 2) == 2


def test_epoch_rule_cuts_a_divergent_tail() -> None:
    follower = cache((0, 0), (1, 2))  # follower wrote offsets 2.. as leader of epoch 1
    # the new leader never saw epoch 1; its epoch 0 ends at 2 and then epoch 2 starts
    assert epoch_truncation_point(follower, 4, 1, 0, 2) == 2


def test_kip_279_looks_up_its_own_end_of_the_epoch_the_leader_answered() -> None:
    follower = cache((0, 0), (1, 3), (3, 5))
    # the leader does not know epoch 3 and answers (1, 6); the follower's epoch 1 ends at 5
    assert epoch_truncation_point(follower, 7, 3, 1, 6) == 5


def test_empty_follower_and_unknown_epochs() -> None:
    assert epoch_truncation_point(cache(), 0, UNDEFINED_EPOCH, 0, 4) == 0
    assert epoch_truncation_point(cache((2, 0)), 3, 2, UNDEFINED_EPOCH, 0) == 0


def test_rule_names() -> None:
    assert normalise_rule("design") == "hw"
    assert normalise_rule("kip320") == "kip320"
    with pytest.raises(ValueError):
        normalise_rule("kip999")
