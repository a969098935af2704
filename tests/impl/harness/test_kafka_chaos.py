"""``epochal chaos --engine kafka`` (:mod:`impl.harness.chaos.kafka_run`): its seeded schedule,
the flags it refuses and the verdict of a run whose trace the model refuses (default suite),
and a run on real Kafka with a confluent-kafka producer that loses no acknowledged write with
unclean election off, and with it on loses the writes of the model's unclean scenario,
labelled as the model labels them -- each run's logs judged against its profile's
configuration (slow)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from impl_testing import REAL_KAFKA

from impl.harness.chaos import kafka_run
from impl.harness.cli.chaos_verdict import chaos_document
from impl.harness.cli.main import main

KNOWN_STOPS = ("handle_fetch", "receive_fetch", "produce", "expand_isr", "shrink_isr", "propose_isr",
               "alter_partition", "apply_isr", "broker_restart", "controller_elect", "elect_leader",
               "become_follower")
"""Where the judge stops on chaos runs so far (docs/kafka.md, Divergences 9, 11, 14 to 18, 22):
replication steps, the registration after a paused broker's session expired, a topic
deletion's ISR removals, the unclean election itself, which the judge refuses when every
state it leads to breaks ``committed_durable`` -- the loss the run reports --, and a restarted
broker's first LeaderAndIsr, whose checkpointed HW the judge's bounded states dropped before
the restart event carried the HW the broker loaded."""

HW_AHEAD = re.compile(r"breaks rule become_leader .* -- post\.hw is (\d+) where the model's step gives (\d+)$")
"""A new leader whose HW is above the model's and nothing else differs: its last receipt from
the killed leader was in an answer the logs lost (docs/kafka.md, Divergence 25)."""


def _known_stop(problem: str) -> bool:
    """Whether the judge stopped where the chaos runs are known to stop: a replication or
    election step above, or a ``become_leader`` only in its HW, and only above the model's."""
    at = re.search(r"at event \d+ \((\w+) by broker", problem)
    if at is not None and at.group(1) in KNOWN_STOPS:
        return True
    ahead = HW_AHEAD.search(problem)
    return at is not None and at.group(1) == "become_leader" and ahead is not None \
        and int(ahead.group(1)) > int(ahead.group(2))


def test_a_become_leader_stop_is_known_only_with_its_hw_ahead_of_the_models() -> None:
    line = ("chaos-0: trace does not conform to the model (kafka39) at event 1033 (become_leader by broker 3): "
            "matched 1033 of 5657 events: become_leader by broker 3 (leader 3, leader_epoch 1) breaks rule "
            "become_leader (design section 000 C): it does not match any step the model allows -- post.hw is {} "
            "where the model's step gives {}")
    assert _known_stop(line.format(129, 128))
    assert not _known_stop(line.format(127, 128))
    assert not _known_stop(line.format(129, "128; leader is 2 where the model's step gives 3"))
    assert not _known_stop(line.replace("become_leader by broker 3):", "bump_epoch by broker 3):").format(129, 128))


def _judged(report: dict, code: int, config: str) -> None:
    """The run's trace judged by ``config``: the verdict passes only if every group conforms;
    a refusal is the verdict's ``follows_model`` at a known stop, an exhausted budget is
    inconclusive -- either is an expected failure naming where the judge stopped."""
    judged = report["conformance"]
    assert judged["config"] == config and judged["groups"] >= 1, judged
    assert report["passed"] == ("problem" not in judged) or report["lost"], report
    assert (code == 0) == report["passed"]
    if "problem" in judged:
        assert report["verdict"] == "violated"
        assert "follows_model" in [report["violation"]["property"]] + [a["property"] for a in report["violation"]["also"]]
        if "inconclusive" not in judged["problem"]:
            assert _known_stop(judged["problem"]), judged["problem"]
        pytest.xfail(f"judged: {judged['problem'][:200]}")


def test_the_schedule_is_the_seeds() -> None:
    assert kafka_run.schedule(7, 30) == kafka_run.schedule(7, 30)
    assert kafka_run.schedule(7, 30) != kafka_run.schedule(8, 30)
    assert len(kafka_run.schedule(7, 30)) == 3 and len(kafka_run.schedule(7, 2)) == 1
    kinds = {kind for seed in range(20) for _, kind in kafka_run.schedule(seed, 16)}
    assert kinds == set(kafka_run.FAULT_KINDS)


@pytest.mark.parametrize("argv", [["--tls"], ["--judge-seconds", "-1"], ["--insecure"], ["--acks", "1"], ["--brokers", "4"],
                                  ["--client", "kafka-python"], ["--broker-cmd", "x {id}"]])
def test_what_the_kafka_engine_does_not_run_is_refused(argv: list[str]) -> None:
    assert main(["chaos", "--engine", "kafka", "--seed", "1", "--duration", "5", *argv]) == 2


@pytest.mark.parametrize("profile", ["3.9", "ibp-2.6"])
@pytest.mark.integration  # (also in REAL_KAFKA, applied below: the marker scan reads it here)
def test_a_real_kafka_run_loses_no_acknowledged_write(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      profile: str) -> None:
    code = main(["chaos", "--engine", "kafka", "--seed", "2", "--duration", "24", "--kafka-profile", profile,
                 "--out", str(tmp_path / "run"), "--json", "--judge-seconds", "10"])
    report = json.loads(capsys.readouterr().out)
    assert report["lost"] == [] and report["misplaced"] == [] and report["problems"] == []
    assert len(report["faults"]) == 3 and report["acknowledged"] > 100  # a leader kill, a controller kill, a pause
    assert report["read"] >= report["acknowledged"]
    _judged(report, code, {"3.9": "kafka39", "ibp-2.6": "kafka26"}[profile])


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
    # its logs judged with unclean election allowed, the refusal (if any) in ``also``
    _judged(report, code, "kafka39-unclean")


def test_a_trace_the_model_refuses_makes_the_verdict_fail() -> None:
    """No write lost, a group refused: the verdict is ``follows_model``, naming the event."""
    report = kafka_run.KafkaChaosReport(1, "3.9", False)
    report.conformance = {"config": "kafka39", "groups": 1, "conforming": 0, "inconclusive": 0,
                          "problem": "chaos-0: trace does not conform to the model (kafka39) at event 7 "
                                     "(handle_fetch by broker 2): ..."}
    assert report.safe and not report.passed
    assert "conformance (kafka39): 0 of 1 groups conforming" in kafka_run.render(report)
    _config, violation, fields = chaos_document(report)
    assert violation is not None and violation["property"] == "follows_model"
    assert "at event 7 (handle_fetch by broker 2)" in violation["message"]
    assert fields["conformance"]["config"] == "kafka39"


for _mark in REAL_KAFKA:
    test_a_real_kafka_run_loses_no_acknowledged_write = _mark(test_a_real_kafka_run_loses_no_acknowledged_write)
    test_with_unclean_election_the_models_scenario_loses_writes_labelled_so = _mark(
        test_with_unclean_election_the_models_scenario_loses_writes_labelled_so)
