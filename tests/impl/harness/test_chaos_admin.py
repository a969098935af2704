"""``epochal chaos --admin``: administrator operations mixed into the seeded schedule -- a
preferred-replica election, a controlled shutdown and restart, and the deletion and
re-creation of a second topic the workload writes to -- lose no acknowledged write of a
topic's current incarnation, duplicate none, and leave traces that conform to the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from impl.harness.chaos.run import ChaosRun
from impl.harness.chaos.schedule import (
    ADMIN_ENSURED,
    ADMIN_KINDS,
    ADMIN_PARTITIONS,
    ADMIN_TOPIC,
    PARTITIONS,
    admin_assignment,
    make_schedule,
)
from impl.harness.chaos.verdict import judge
from impl.harness.chaos.workload import Ack, Ledger

# -- the schedule ------------------------------------------------------------------------------


def test_admin_schedule_is_a_function_of_the_seed_and_off_by_default() -> None:
    assert make_schedule(4, 40, admin=True) == make_schedule(4, 40, admin=True)
    assert make_schedule(4, 40, admin=True) != make_schedule(4, 40)
    for seed in range(20):
        assert not {f.kind for f in make_schedule(seed, 120)} & set(ADMIN_KINDS)


def test_every_admin_operation_comes_in_a_short_admin_run() -> None:
    for seed in range(20):
        kinds = {f.kind for f in make_schedule(seed, 20, admin=True)}
        assert set(ADMIN_ENSURED) <= kinds, (seed, kinds)


def test_the_second_topic_is_assigned_with_its_preferred_replica_the_lowest_id() -> None:
    for brokers in (3, 4, 5):
        for replicas in admin_assignment(brokers).values():
            assert replicas == sorted(replicas) and len(set(replicas)) == len(replicas)


# -- the verdict on the re-created topic -------------------------------------------------------


def _ack(value: str, offset: int, incarnation: int) -> Ack:
    return Ack(0, value, offset, 0, 0, -1, "admin-workload", 0.0, ADMIN_TOPIC, incarnation)


def test_writes_of_the_current_incarnation_must_all_be_in_the_final_log() -> None:
    ledger = Ledger(acked=[_ack("a1", 0, 1), _ack("a2", 1, 1)])
    final = {0: [(0, 0, "a1")]}
    v = judge(ledger, final, {0: {0: final[0]}}, {0: [0]}, [], [], topic=ADMIN_TOPIC)
    assert v.lost == 1
    assert any(ADMIN_TOPIC in f or "replication bug" in f for f in v.findings)


def test_a_value_twice_in_the_recreated_topic_is_a_duplicate() -> None:
    ledger = Ledger(acked=[_ack("a1", 0, 1)])
    final = {0: [(0, 0, "a1"), (1, 0, "a1")]}
    v = judge(ledger, final, {}, {}, [], [], topic=ADMIN_TOPIC)
    assert v.duplicated == 1 and not v.passed


# -- a real run ----------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.slow
def test_admin_operations_under_faults_lose_nothing_and_conform(
        tmp_path: Path, zk_chroot: str, spark: Any) -> None:
    """Seed 1, 22 s: the second topic deleted and created again while a reassignment runs,
    kill -9 of a broker, preferred-replica elections, a controlled shutdown and restart of a
    leader; every acknowledged write of the current incarnations kept once, and every
    trace group conforms."""
    run = ChaosRun(1, 22, data_dir=tmp_path / "run", zookeeper=zk_chroot, admin=True, spark=spark,
                   log=lambda m: print(m, flush=True))
    report = run.run()
    v = report.verdict
    kinds = [f.kind for f in report.faults]
    assert set(ADMIN_ENSURED) <= set(kinds)
    recreations = [f for f in report.faults if f.kind == "recreate-topic"]
    assert all("created again" in f.detail for f in recreations), [f.detail for f in recreations]
    assert report.recovered, v.findings
    assert v.passed, "\n".join(v.findings)
    assert v.lost == 0 and v.duplicated == 0
    admin_acks = [a for a in run.ledger.acked if a.topic == ADMIN_TOPIC]
    current = [a for a in admin_acks if a.incarnation == len(recreations)]
    assert len(current) > 20 and len(admin_acks) > len(current)  # both incarnations written
    c = report.conformance
    assert c.get("groups", 0) >= PARTITIONS + ADMIN_PARTITIONS, c
    assert c["conforming"] == c["groups"], c.get("render")
    assert report.exit_code == 0
