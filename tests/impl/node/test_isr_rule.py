"""Seed 000 G's shrink rule as Kafka states it: a follower is out of sync only if it is behind
the leader's LEO *and* has not been caught up for longer than the lag time.  The model's
``shrink_isr`` takes only such followers; the implementation must not take more."""

from __future__ import annotations

import asyncio
from pathlib import Path

from impl.node.log import PartitionLog
from impl.node.replica import PartitionState, Replica
from traces.recorder import TraceRecorder

LAG_S = 1.5


def _leader(tmp_path: Path) -> Replica:
    log = PartitionLog.open(tmp_path / "t-0")
    r = Replica("t", 0, 1, log, TraceRecorder(tmp_path / "trace.jsonl", "run", 1))
    r.become_leader(PartitionState("t", 0, 1, 1, [0, 1, 2], [0, 1, 2], 0, 1))
    return r


def test_a_caught_up_follower_stays_in_sync_however_long_it_has_been_silent(tmp_path: Path) -> None:
    r = _leader(tmp_path)
    r.record_follower_fetch(0, r.leo, now=100.0)  # at the leader's LEO, then silent
    r.record_follower_fetch(2, r.leo, now=100.0)
    assert r.out_of_sync_followers(now=100.0 + 10 * LAG_S, lag_time_s=LAG_S, lag_messages=4000) == set()


def test_a_follower_behind_the_leo_for_longer_than_the_lag_time_is_out_of_sync(tmp_path: Path) -> None:
    r = _leader(tmp_path)
    r.record_follower_fetch(0, r.leo, now=100.0)
    r.record_follower_fetch(2, r.leo, now=100.0)
    r.append(b"x")  # a write neither follower has fetched yet
    assert r.out_of_sync_followers(now=100.0 + LAG_S / 2, lag_time_s=LAG_S, lag_messages=4000) == set()
    r.record_follower_fetch(0, r.leo, now=100.0 + LAG_S / 2)  # follower 0 catches up
    assert r.out_of_sync_followers(now=100.0 + 2 * LAG_S, lag_time_s=LAG_S, lag_messages=4000) == {2}


def test_a_follower_that_never_fetched_in_this_term_is_out_of_sync_after_the_lag_time(tmp_path: Path) -> None:
    """Its LEO is unknown to this leader (the model's UNKNOWN): not caught up."""
    r = _leader(tmp_path)
    r.record_follower_fetch(0, r.leo, now=r.last_caught_up[0])
    late = max(r.last_caught_up.values()) + 2 * LAG_S
    assert r.out_of_sync_followers(now=late, lag_time_s=LAG_S, lag_messages=4000) == {2}


def test_an_isr_write_decided_in_an_older_epoch_is_dropped(tmp_path: Path) -> None:
    """A shrink decided in epoch 1 that waited for the ISR write lock while the controller
    made this broker leader again in epoch 2 (the ISR now the controller's) writes nothing:
    taken on epoch 2's zk_version it removed a follower epoch 2's ISR no longer held."""
    from impl.node.broker.replication_leader import ReplicationLeader

    r = _leader(tmp_path)
    written: list[tuple[set[int], int]] = []

    class Leader(ReplicationLeader):
        def __init__(self) -> None:  # only what _update_isr touches
            self._isr_write_lock = asyncio.Lock()

        async def _write_isr(self, r: Replica, new_isr: set[int], follower: int | None, kind: str) -> None:
            written.append((new_isr, r.leader_epoch))

    async def scenario() -> None:
        leader = Leader()
        stale = r.begin_isr_write()
        r.become_leader(PartitionState("t", 0, 1, 2, [1, 2], [0, 1, 2], 1, 1))  # epoch 2, ISR {1, 2}
        await leader._update_isr(r, {1, 2}, 0, "shrink_isr", stale, epoch=1)
        assert written == [] and r.isr_write is None
        current = r.begin_isr_write()
        await leader._update_isr(r, {1}, 2, "shrink_isr", current, epoch=2)
        assert written == [({1}, 2)]

    asyncio.run(scenario())
