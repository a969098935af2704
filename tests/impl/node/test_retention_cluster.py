"""Retention on real broker processes: with small segments and a small retention.bytes, old
segments are deleted on every replica and the log start offset moves; a follower that was
down while its leader deleted what it would fetch starts at the leader's log start; every
acknowledged write still inside retention survives a leader kill and a restart, and a
consumer from the beginning goes on from the log start offset."""

from __future__ import annotations

from typing import Any

import pytest
from impl_testing import isr, log_dir, wait_through_errors

from impl.harness.recordings import TOPIC, leader_of, wait_for_change
from impl.node.client import Admin, Consumer, Producer
from impl.node.log import PartitionLog

RETENTION = {"segment_bytes": 4096, "retention_bytes": 12288, "min_insync_replicas": 2}



def _log_start(c: Any, broker: int) -> int:
    checkpoint = log_dir(c, broker) / "log-start-offset-checkpoint"
    return int(checkpoint.read_text()) if checkpoint.exists() else 0


def _produce(p: Producer, prefix: str, n: int) -> list[bytes]:
    values = [f"{prefix}-{i:04d}-".encode() + b"r" * 200 for i in range(n)]
    for v in values:
        p.send(TOPIC, v, partition=0)  # acks=all: each one acknowledged
    return values


@pytest.mark.integration
def test_retention_deletes_old_segments_and_keeps_every_acknowledged_write_inside_it(
        make_cluster: Any) -> None:
    c = make_cluster(3, **RETENTION)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1, 2]})
    with Producer(c.bootstrap) as p:
        acked = _produce(p, "a", 40)
        leader = leader_of(c)
        follower = next(b for b in (0, 1, 2) if b != leader)
        follower_leo = len(acked)
        c.kill(follower)
        acked += _produce(p, "b", 200)  # ~47 KiB: retention deletes what the follower lacks
        wait_through_errors(lambda: _log_start(c, leader) > follower_leo, 20, "the leader's log start past the follower")
        c.restart(follower)  # it starts at the leader's log start and catches up
        wait_through_errors(lambda: follower in isr(c), 30, "the restarted follower back in the ISR")
        c.kill(leader)
        wait_for_change(lambda: leader_of(c), leader, "a new leader")
        acked += _produce(p, "c", 60)
        c.restart(leader)
        wait_through_errors(lambda: leader in isr(c), 30, "the old leader back in the ISR")
    with Consumer(c.bootstrap) as consumer:
        consumed = [v for _p, _o, v in consumer.consume(TOPIC, True, 2.0)]
    assert consumed and consumed == acked[len(acked) - len(consumed):]  # a suffix, in order
    assert len(consumed) * 220 >= RETENTION["retention_bytes"] - RETENTION["segment_bytes"]
    for broker in (0, 1, 2):
        wait_through_errors(lambda b=broker: _log_start(c, b) > 0, 20, f"retention on broker {broker}")
        assert not (log_dir(c, broker) / f"{0:020d}.log").exists()
    c.stop(graceful=True)
    for broker in (0, 1, 2):
        log = PartitionLog.open(log_dir(c, broker))
        assert log.leo == len(acked) and log.log_start_offset > follower_leo
        assert [r.value for r in log.read(log.log_start_offset, len(acked))] == \
            acked[log.log_start_offset:]
