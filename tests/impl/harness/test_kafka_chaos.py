"""``epochal chaos --engine kafka`` (:mod:`impl.harness.chaos.kafka_run`): its seeded schedule
and the flags it refuses (default suite), and a run on real Kafka with a confluent-kafka
producer that loses no acknowledged write with unclean election off, and with it on loses
the writes of the model's unclean scenario, labelled as the model labels them (slow)."""

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


@pytest.mark.integration  # (also in REAL_KAFKA, applied below)
def test_with_unclean_election_the_models_scenario_loses_writes_labelled_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 1 for 8 s: one fault, the model's unclean scenario; every write lost is the
    unclean election's, as the adapter reads it in the brokers' logs (about 25 s)."""
    code = main(["chaos", "--engine", "kafka", "--seed", "1", "--duration", "8", "--unclean-leader-election",
                 "--out", str(tmp_path / "run"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["unclean"] and not report["passed"]
    assert len(report["faults"]) == 1 and "elected outside the ISR" in report["faults"][0]
    (unclean,) = [e for e in report["elections"] if e["unclean"]]
    assert report["lost"] and report["misplaced"] == []
    assert report["causes"] == {f"unclean election of broker {unclean['leader']} out of the ISR "
                                f"(leader epoch {unclean['leader_epoch']})": len(report["lost"])}
    assert report["label"] == "unclean-election loss"
    # the verdict object says the same in the model's words
    assert report["verdict"] == "violated" and report["violation"]["property"] == "acked_durable"
    assert report["violation"]["label"] == "unclean-election loss"


for _mark in REAL_KAFKA:
    test_a_real_kafka_run_loses_no_acknowledged_write = _mark(test_a_real_kafka_run_loses_no_acknowledged_write)
    test_with_unclean_election_the_models_scenario_loses_writes_labelled_so = _mark(
        test_with_unclean_election_the_models_scenario_loses_writes_labelled_so)
