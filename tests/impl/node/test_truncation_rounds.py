"""A follower truncates in as many OffsetsForLeaderEpoch rounds as it takes (Kafka's fetcher),
not one: the logs must agree afterwards."""

from __future__ import annotations

from pathlib import Path

from impl.node.log import PartitionLog
from impl.node.truncation import epoch_truncation_point, leader_epoch_answer, truncate_round


def _log(path: Path, epochs: list[int]) -> PartitionLog:
    log = PartitionLog.open(path)
    for e in epochs:
        log.append(e, f"e{e}".encode())
    return log


def _entries(log: PartitionLog) -> list[tuple[int, int]]:
    return [(r.offset, r.leader_epoch) for r in log.records]


def _truncate(follower: PartitionLog, leader: PartitionLog, leader_epoch: int,
              max_rounds: int = 10) -> list[int]:
    """What the fetcher does before it fetches: rounds until one is complete.  Returns the
    offset each round truncated to."""
    points = []
    for _ in range(max_rounds):
        requested = follower.epochs.latest_epoch()
        if follower.leo == 0 or requested < 0:
            return points
        found, end = leader_epoch_answer(leader.epochs, leader.leo, leader_epoch, requested)
        point, complete = truncate_round(follower, requested, found, end)
        points.append(point)
        if complete:
            return points
    raise AssertionError(f"no complete round in {max_rounds}: {points}")


def test_follower_epochs_0_2_4_against_leader_epochs_1_3_5_converge_in_rounds(tmp_path: Path) -> None:
    follower = _log(tmp_path / "follower", [0, 2, 4])
    leader = _log(tmp_path / "leader", [1, 3, 5])
    # one round alone: the leader answers epoch 3 ending at 2, and the follower keeps [e0, e2]
    # although the leader's offset 1 is of epoch 3 -- the logs would never converge
    found, end = leader_epoch_answer(leader.epochs, leader.leo, 5, 4)
    assert (found, end) == (3, 2)
    assert epoch_truncation_point(follower.epochs, follower.leo, 4, found, end) == 2

    assert _truncate(follower, leader, 5) == [2, 1, 0]  # epoch 4 asked, then 2, then 0
    assert follower.leo == 0 and follower.epochs.entries == []
    for r in leader.read(0, 10):  # what the fetches then copy
        follower.append_replicated(r)
    assert _entries(follower) == _entries(leader) == [(0, 1), (1, 3), (2, 5)]


def test_one_round_suffices_when_the_leader_answers_an_epoch_the_follower_has(tmp_path: Path) -> None:
    follower = _log(tmp_path / "follower", [1, 1, 2, 2])
    leader = _log(tmp_path / "leader", [1, 1, 3])
    assert _truncate(follower, leader, 3) == [2]  # epoch 2 unknown there: epoch 1 ends at 2
    assert _entries(follower) == [(0, 1), (1, 1)]


def test_a_round_forgets_an_epoch_without_records_so_the_next_asks_an_older_one(tmp_path: Path) -> None:
    follower = _log(tmp_path / "follower", [0, 2])
    follower.assign_epoch(4)  # led in epoch 4 and wrote nothing
    leader = _log(tmp_path / "leader", [1, 3])
    assert follower.epochs.entries == [(0, 0), (2, 1), (4, 2)]
    assert _truncate(follower, leader, 3) == [2, 1, 0]
    assert follower.leo == 0
    assert PartitionLog.open(tmp_path / "follower").epochs.entries == []
