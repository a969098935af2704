"""The implementation's truncation rules are the model's: one rule, two renderings (the
model reads both logs, the implementation a leader-epoch cache and one OffsetsForLeaderEpoch
answer).  This test holds them together on every small pair of logs."""

from __future__ import annotations

from itertools import product

from impl.node.log import LeaderEpochCache
from impl.node.truncation import epoch_truncation_point, epoch_truncation_step, hw_truncation_point
from model.state import Entry
from model.truncation import kip279, single_round, to_high_watermark


def _logs(max_len: int = 3, max_epoch: int = 3):
    """Every log of up to ``max_len`` records with non-decreasing epochs."""
    for n in range(max_len + 1):
        for epochs in product(range(1, max_epoch + 1), repeat=n):
            if list(epochs) == sorted(epochs):
                yield tuple(Entry(i + 1, e) for i, e in enumerate(epochs))


def _cache(log, current_epoch: int | None = None) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for offset, e in enumerate(log):
        if offset == 0 or log[offset - 1].epoch != e.epoch:
            cache.assign(e.epoch, offset)
    if current_epoch is not None and (not log or current_epoch > log[-1].epoch):
        cache.assign(current_epoch, len(log))  # a leader starts its epoch at its LEO
    return cache


def _impl_point(follower, leader, leader_epoch: int) -> int:
    requested = _cache(follower).latest_epoch()
    found, end = _cache(leader, leader_epoch).end_offset_for(requested, len(leader))
    return epoch_truncation_point(_cache(follower), len(follower), requested, found, end)


def _impl_rounds(follower, leader, leader_epoch: int) -> int:
    """The implementation's follower: OffsetsForLeaderEpoch rounds until one is complete."""
    log = follower
    while log:
        requested = _cache(log).latest_epoch()
        found, end = _cache(leader, leader_epoch).end_offset_for(requested, len(leader))
        point, complete = epoch_truncation_step(_cache(log), len(log), requested, found, end)
        log = log[:point]
        if complete:
            break
    return len(log)


def _pairs():
    logs = list(_logs())
    for follower, leader in product(logs, logs):
        last = leader[-1].epoch if leader else 1
        for leader_epoch in range(last, 5):
            yield follower, leader, leader_epoch


def test_leader_epoch_truncation_agrees_with_the_model_on_every_small_pair_of_logs():
    checked = differ = 0
    for follower, leader, leader_epoch in _pairs():
        assert _impl_rounds(follower, leader, leader_epoch) == kip279(follower, leader, leader_epoch), (
            follower, leader, leader_epoch)
        checked += 1
        differ += single_round(follower, leader, leader_epoch) != kip279(follower, leader, leader_epoch)
    assert checked > 1000
    assert differ > 0  # the rounds matter on some pairs (none a run of the protocol reaches, see model.truncation)


def test_one_round_of_each_agrees_with_the_models_single_round():
    for follower, leader, leader_epoch in _pairs():
        assert _impl_point(follower, leader, leader_epoch) == single_round(follower, leader, leader_epoch), (
            follower, leader, leader_epoch)


def test_follower_epochs_0_2_4_against_leader_1_3_5_converge_only_with_the_rounds():
    follower = tuple(Entry(v, e) for v, e in ((1, 0), (2, 2), (3, 4)))
    leader = tuple(Entry(v, e) for v, e in ((4, 1), (5, 3), (6, 5)))
    assert single_round(follower, leader, 5) == 2  # keeps [0, 2]: the leader has [1, 3] there
    assert kip279(follower, leader, 5) == _impl_rounds(follower, leader, 5) == 0


def test_high_watermark_truncation_agrees_with_the_model():
    for log in _logs():
        for hw in range(len(log) + 1):
            assert hw_truncation_point(hw, len(log)) == to_high_watermark(log, hw)
