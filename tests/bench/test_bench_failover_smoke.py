"""The failover-at-scale benchmark's two write paths, at a small size: batched ``multi``
writes and one conditional write per partition must leave ZooKeeper in the same state, and
each must really use the number of ZooKeeper transactions it claims to (one zxid per
transaction) -- otherwise the benchmark's ratio compares nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.sim_brokers import broker_failover, replicas_of
from impl.node.zk import EmbeddedZooKeeper

pytestmark = pytest.mark.integration

PARTITIONS = 60


def test_batched_and_unbatched_writes_reach_the_same_zookeeper_state(tmp_path: Path) -> None:
    # the benchmark's own ZooKeeper, as bench/bench_failover_scale.py starts it: without a
    # cluster secret (its simulated brokers sign in as an insecure cluster's do)
    with EmbeddedZooKeeper(data_dir=tmp_path / "zookeeper") as zookeeper:
        runs = {batched: broker_failover(zookeeper.hosts, PARTITIONS, 2, batched,
                                         tmp_path / str(batched), timeout=60)
                for batched in (True, False)}
    batched, unbatched = runs[True], runs[False]
    assert batched["end_state"] == unbatched["end_state"]
    for (_t, p), (leader, epoch, isr, version) in batched["end_state"].items():
        assert (leader, epoch, isr, version) == (replicas_of(p)[1], 1, (2, 3), 1)
    assert batched["written"] == unbatched["written"] == PARTITIONS
    assert batched["transactions"] == 1  # up to 500 partitions per multi
    assert unbatched["transactions"] == PARTITIONS
    assert 0 < batched["zk_written"] <= batched["serving"]
