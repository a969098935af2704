"""Durability on real broker processes (docs/durability.md): a full disk mid-append leaves no
fragment, is never acknowledged and halts the broker, and every acknowledged write survives;
a corrupted byte early in a segment is cut at recovery, said on one line, and the records
come back from the leader -- the cluster still serves them."""

from __future__ import annotations

import errno
from typing import Any

import pytest
from impl_testing import isr, log_dir, wait_through_errors

from impl.harness.recordings import TOPIC, leader_of, wait_for_change
from impl.node import faults
from impl.node.broker.log_dir import EXIT_LOG_DIR_FAILED
from impl.node.client import Admin, Consumer, Producer
from impl.node.log import encode_record, read_segments, segment_header
from impl.node.wire import ApiKey, ErrorCode, RpcError


def _consume(c: Any) -> list[bytes]:
    with Consumer(c.bootstrap) as consumer:
        return [v for _p, _o, v in consumer.consume(TOPIC, True, 1.5)]


@pytest.mark.integration
def test_a_full_disk_mid_append_is_never_acknowledged_leaves_no_fragment_and_loses_nothing(
        make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1, 2]})
    with Producer(c.bootstrap) as p:
        before = [f"before-{i}".encode() for i in range(5)]
        for v in before:
            p.send(TOPIC, v, partition=0)
        leader = leader_of(c)
        segment = sorted(log_dir(c, leader).glob("*.log"))[-1]
        size = segment.stat().st_size
        faults.arm_disk_fault(c.data_dir, leader, errno.ENOSPC, after_bytes=30)
        with pytest.raises(RpcError) as refused:  # one attempt, straight to the leader
            p.call(p.leader_addr(TOPIC, 0), ApiKey.PRODUCE,
                   {"topic": TOPIC, "partition": 0, "acks": -1, "values": [b"x" * 5000]})
        assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert c.procs[leader].wait(15) == EXIT_LOG_DIR_FAILED  # the broker halted
        assert segment.stat().st_size == size  # no fragment: the segment ends at a whole record
        assert [r.value for r in read_segments(log_dir(c, leader))] == before
        # the producer goes on at the new leader, elected at once (the session was closed)
        after = [f"after-{i}".encode() for i in range(5)]
        for v in after:
            p.send(TOPIC, v, partition=0)
    assert leader not in isr(c)
    out = (c.data_dir / f"broker-{leader}" / "broker.out").read_text()
    assert "log directory" in out and "halts" in out
    c.restart(leader)  # the disk has room again
    wait_through_errors(lambda: leader in isr(c), 30, "the restarted broker back in the ISR")
    assert [r.value for r in read_segments(log_dir(c, leader))] == before + after
    assert _consume(c) == before + after
    traces = "".join(f.read_text() for f in (c.data_dir / "traces").glob("*.jsonl"))
    assert "handle_fetch" in traces and "before-" not in traces and "xxxxx" not in traces  # digests only


@pytest.mark.integration
def test_a_corrupted_byte_early_in_a_segment_drops_nothing_the_cluster_committed(
        make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1, 2]})
    values = [f"committed-{i}".encode() for i in range(9)]
    with Producer(c.bootstrap) as p:
        for v in values:
            p.send(TOPIC, v, partition=0)
    victim = leader_of(c)  # the leader: the replica a naive restart would trust most
    wait_through_errors(lambda: len(read_segments(log_dir(c, victim))) == 9, 10, "all nine on the leader")
    c.kill(victim)
    segment = sorted(log_dir(c, victim).glob("*.log"))[0]
    data = bytearray(segment.read_bytes())
    one = len(encode_record(next(iter(read_segments(log_dir(c, victim))))))
    data[len(segment_header()) + one + 25] ^= 0x40  # one bit of record 1's value
    segment.write_bytes(bytes(data))
    wait_for_change(lambda: leader_of(c), victim, "leader", timeout=30)
    c.restart(victim)
    wait_through_errors(lambda: victim in isr(c), 30, "the corrupted broker back in the ISR")
    out = (c.data_dir / f"broker-{victim}" / "broker.out").read_text()
    line = next(x for x in out.splitlines() if x.startswith("log recovery:"))
    assert str(segment) in line and "at offset 1" in line and "7 whole record(s) beyond" in line
    # it rejoined as a follower and fetched the eight records back from the new leader
    assert [r.value for r in read_segments(log_dir(c, victim))] == values
    assert _consume(c) == values


@pytest.mark.integration
def test_a_follower_whose_disk_fills_halts_and_catches_up_after_its_restart(make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1, 2]})
    values = [f"v{i}".encode() for i in range(6)]
    with Producer(c.bootstrap) as p:
        p.send(TOPIC, values[0], partition=0)
        leader = leader_of(c)
        follower = next(b for b in (0, 1, 2) if b != leader)
        faults.arm_disk_fault(c.data_dir, follower, errno.EIO, after_bytes=10)
        for v in values[1:]:  # acknowledged by the leader and the other follower
            p.send(TOPIC, v, partition=0)
        assert c.procs[follower].wait(15) == EXIT_LOG_DIR_FAILED
    assert [r.value for r in read_segments(log_dir(c, follower))] == values[:1]  # no fragment
    c.restart(follower)
    wait_through_errors(lambda: follower in isr(c), 30, "the restarted follower back in the ISR")
    assert [r.value for r in read_segments(log_dir(c, follower))] == values
