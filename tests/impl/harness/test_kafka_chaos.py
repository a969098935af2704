"""``epochal chaos --engine kafka`` (:mod:`impl.harness.chaos.kafka_run`): its seeded schedule
and the flags it refuses (default suite), and a run on real Kafka with a confluent-kafka
producer that loses no acknowledged write with unclean election off (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impl_testing import REAL_KAFKA

from impl.harness.chaos import kafka_run
from impl.harness.cli.main import main


def test_the_schedule_is_the_seeds() -> None:
    assert kafka_run.schedule(7, 30) == kafka_run.schedule(7, 30)
    assert kafka_run.schedule(7, 30) != kafka_run.schedule(8, 30)
    assert len(kafka_run.schedule(7, 30)) == 3 and len(kafka_run.schedule(7, 2)) == 1
    kinds = {kind for seed in range(20) for _, kind in kafka_run.schedule(seed, 16)}
    assert kinds == set(kafka_run.FAULT_KINDS)


@pytest.mark.parametrize("argv", [["--admin"], ["--tls"], ["--insecure"], ["--acks", "1"], ["--brokers", "4"],
                                  ["--client", "kafka-python"], ["--broker-cmd", "x {id}"]])
def test_what_the_kafka_engine_does_not_run_is_refused(argv: list[str]) -> None:
    assert main(["chaos", "--engine", "kafka", "--seed", "1", "--duration", "5", *argv]) == 2


@pytest.mark.parametrize("profile", ["3.9", "ibp-2.6"])
@pytest.mark.integration  # (also in REAL_KAFKA, applied below: the marker scan reads it here)
def test_a_real_kafka_run_loses_no_acknowledged_write(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      profile: str) -> None:
    code = main(["chaos", "--engine", "kafka", "--seed", "2", "--duration", "24", "--kafka-profile", profile,
                 "--out", str(tmp_path / "run"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["passed"] and report["lost"] == [] and report["misplaced"] == []
    assert len(report["faults"]) == 3 and report["acknowledged"] > 100  # a leader kill, a controller kill, a pause
    assert report["read"] >= report["acknowledged"]


for _mark in REAL_KAFKA:
    test_a_real_kafka_run_loses_no_acknowledged_write = _mark(test_a_real_kafka_run_loses_no_acknowledged_write)
