"""The mapping of ``epochal drive --engine kafka`` (impl/harness/kafka/paths.py, drive.py),
without a process: model brokers cast onto Kafka's, each step matched to the trace event the
adapter makes of Kafka's logs, and the judgement of a run's complete trace step by step --
on the committed ibp-2.6 run where kill -9 hit the controller and leader."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from impl_testing import verdict_object

from conformance.kafka.adapter import OBSERVED, adapt, to_records
from impl.harness.cli.drive_kafka import verdict_fields
from impl.harness.cli.verdict import print_verdict
from impl.harness.kafka.drive import (
    DIVERGED,
    FOLLOWED,
    REPRODUCED,
    UNJUDGED,
    KafkaDriver,
    KafkaDriveReport,
    StepResult,
    render,
)
from impl.harness.kafka.paths import (
    HARNESS_ONLY,
    OPERATIONS,
    PATHS,
    A,
    B,
    C,
    Cast,
    Progress,
    Step,
    creation,
    isr_change,
    matches,
)

RUN = Path(__file__).parents[2] / "conformance" / "kafka" / "fixtures" / "leader-kill-ibp26"
CAST = Cast.of(A, 3, [1, 2, 3])  # broker 3 was controller and leader: it plays A
OBSERVED_LEADER_KILL = [
    *creation(A),
    Step("produce", A, {"value": "v0"}),
    Step("broker_crash", A),
    Step("controller_elect", frozenset({B, C}), {"broker": frozenset({B, C})}),
    Step("elect_leader", B, {"leader": B, "isr": (B, C)}),  # the leaderless write before it is skipped
    Step("become_leader", B, {"leader": B}),
    Step("become_follower", C, {"leader": B}, concurrent=True),
    Step("broker_restart", A),
    Step("become_follower", A, {"leader": B}),
    Step("receive_fetch", A, {"leader": B, "values": ["v3", "v4", "v5"]}),
    *isr_change(B, B, (A, B, C), "ibp-2.6", grows=True),
]
"""What happened in the committed run, as a path's steps."""


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return to_records(adapt(RUN), "kafka")


def test_the_controller_plays_its_role_and_the_others_follow_in_id_order() -> None:
    assert CAST.kafka == (3, 1, 2) and CAST.model(1) == B
    assert Cast.of(B, 1, [1, 2, 3]).kafka == (2, 1, 3)
    assert Cast.of(C, 2, [1, 2, 3]).text() == "A=1, B=3, C=2"


def test_every_step_is_an_operation_of_the_harness_or_an_event_the_adapter_observes() -> None:
    for name, path in PATHS.items():
        for profile in ("ibp-2.6", "3.9"):
            for step in path.steps(profile):
                assert step.controlled or step.action in OBSERVED, (name, profile, step)
                assert step.action in HARNESS_ONLY or step.action in OBSERVED, (name, profile, step)
    assert HARNESS_ONLY <= set(OPERATIONS)


def test_an_isr_change_is_the_leaders_write_at_ibp26_and_the_controllers_at_39() -> None:
    (own,) = isr_change(A, B, (A, B), "ibp-2.6", grows=False)
    assert (own.action, own.actor) == ("shrink_isr", A)
    write, applied = isr_change(A, B, (A, B, C), "3.9", grows=True)
    assert (write.action, write.actor, write.expect["leader"]) == ("alter_partition", B, A)
    assert (applied.action, applied.actor) == ("apply_isr", A)


def test_the_run_is_found_step_by_step_in_its_trace(records: list[dict]) -> None:
    where = Progress()
    for step in OBSERVED_LEADER_KILL:
        at = where.find(step, records, CAST)
        assert at is not None, step.describe()
        where.take(at)
    assert where.taken == [4, 7, 5, 6, 12, 37, 38, 40, 41, 42, 61, 62, 65, 67]


def test_a_step_kafka_did_not_take_is_not_found(records: list[dict]) -> None:
    # a follower's receipt before its leader applied its role is found only if concurrent
    assert Progress(taken=[7]).find(Step("become_follower", B, {"leader": A}), records, CAST) is None
    assert not matches(Step("elect_leader", B, {"leader": C}), records[40], CAST)
    assert not matches(Step("broker_crash", B), records[37], CAST)
    assert not matches(Step("receive_fetch", A, {"values": ["v3"]}), records[65], CAST)
    assert matches(Step("receive_fetch", A, {"leader_hw": 6}), records[65], CAST)


def _judged(steps: list[Step], run: Path = RUN, cast: Cast = CAST, path: str = "leader_kill_isr",
            config: str | None = None) -> KafkaDriveReport:
    """The complete trace of a committed run judged step by step, as the driver judges its own."""
    driver = KafkaDriver(path, "ibp-2.6", config=config)
    driver.steps = steps
    report = KafkaDriveReport("observed", "ibp-2.6", driver.config, cast,
                              [StepResult(n, s, FOLLOWED) for n, s in enumerate(steps, 1)])
    driver._judge(run, report, len(steps))
    return report


def test_the_complete_trace_judged_up_to_each_step() -> None:
    report = _judged(OBSERVED_LEADER_KILL)
    assert report.verdict == FOLLOWED and report.exit_code == 0, render(report)
    assert [s.event for s in report.steps][-1] == 67
    assert "followed the path to its end" in render(report)


def test_the_first_step_missing_from_the_trace_is_the_divergence() -> None:
    steps = list(OBSERVED_LEADER_KILL)
    steps[8] = Step("elect_leader", B, {"leader": C})  # Kafka elected B
    report = _judged(steps)
    assert report.verdict == DIVERGED and report.exit_code == 1
    assert report.divergence is not None and report.divergence["step"] == 9
    assert report.steps[8].outcome == DIVERGED and all(s.event is not None for s in report.steps[:8])
    assert {s.outcome for s in report.steps[9:]} == {UNJUDGED}


@pytest.mark.parametrize("diverge", [False, True])
def test_the_verdict_object_of_a_kafka_drive(diverge: bool, capsys: pytest.CaptureFixture[str]) -> None:
    steps = list(OBSERVED_LEADER_KILL)
    if diverge:
        steps[8] = Step("elect_leader", B, {"leader": C})
    report = _judged(steps)
    args = argparse.Namespace(command="drive", json=True)
    assert print_verdict(args, report.exit_code, *verdict_fields(report), drive=report.as_dict()) == int(diverge)
    doc = verdict_object(capsys.readouterr().out)
    assert doc["config"] == {"name": "kafka26", "engine": "kafka", "profile": "ibp-2.6", "path": "observed"}
    assert doc["drive"]["cast"] == {"A": 3, "B": 1, "C": 2} and len(doc["drive"]["steps"]) == len(steps)
    if diverge:
        assert doc["verdict"] == "violated" and doc["violation"]["message"].startswith("step 9 (elect_leader B")
    else:
        assert doc["verdict"] == "holds" and doc["violation"] is None


class FakeRelay:
    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.holding: dict[tuple, int] = {}

    def hold(self, *key: object) -> None:
        self.calls.append(("hold", *key))
        self.holding[key] = 1  # the follower's next request arrives at once

    def held(self, *key: object) -> int:
        return self.holding.get(key, 0)

    def release(self, *key: object) -> int:
        self.calls.append(("release", *key))
        return self.holding.pop(key, 0)


class FakeCluster:
    """What the driver's operations call, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.relay = FakeRelay()
        self.jars = object()

    def __getattr__(self, name: str) -> object:
        if name in ("kill", "restart", "pause", "resume"):
            return lambda broker, *rest: self.calls.append((name, broker))
        raise AttributeError(name)


def test_each_controlled_step_is_its_operation_on_the_cast_brokers(monkeypatch: pytest.MonkeyPatch) -> None:
    import impl.harness.kafka.drive as drive

    cluster = FakeCluster()
    writes: list[tuple] = []
    monkeypatch.setattr(drive, "produce", lambda c, jars, values, acks: writes.append((c, values, acks)))
    driver = KafkaDriver("leader_kill_isr", "ibp-2.6", step_timeout=0.2)
    perform = lambda step: driver._perform(cluster, step, CAST)  # noqa: E731 - one line per case below
    assert perform(Step("produce", A, {"value": "v7"})) == ""
    assert writes == [(cluster, ["v7"], "1")]  # acks=1: a held follower must not hold the write up
    for action, actor in (("broker_crash", A), ("broker_restart", B), ("broker_pause", C), ("broker_resume", C)):
        assert perform(Step(action, actor)) == ""
    assert cluster.calls == [("kill", 3), ("restart", 1), ("pause", 2), ("resume", 2)]
    # C's fetches to A: the relay in front of A (broker 3) holds broker 2's Fetch requests
    assert perform(Step("hold_fetch", C, target=A)) == ""
    assert perform(Step("release_fetch", C, target=A)) == "1 released"
    # a LeaderAndIsr to B (broker 1) from whichever controller sends it
    assert perform(Step("hold_leader_and_isr", B)) == ""
    assert cluster.relay.calls == [("hold", 3, "Fetch", 2), ("release", 3, "Fetch", 2),
                                   ("hold", 1, "LeaderAndIsr")]
    # nothing held to release: the step fails ("!"), the driver reports it as the divergence
    assert perform(Step("release_fetch", B, target=A)).startswith("!the relay held no Fetch request")


UNCLEAN_RUN = RUN.parent / "unclean-loss-ibp26"
"""A run of the unclean_loss path at ibp-2.6 (``drive --engine kafka``), trimmed to the lines
the adapter reads: controller 3 (B), leader 1 (A), broker 2 (C) held out of the ISR."""


def test_an_unclean_election_reproduces_the_loss_the_model_has_there() -> None:
    steps = PATHS["unclean_loss"].steps("ibp-2.6")
    report = _judged(steps, UNCLEAN_RUN, Cast.of(B, 3, [1, 2, 3]), "unclean_loss")
    assert report.config == "kafka26-unclean"  # the path's cluster elects out of the ISR
    assert (report.verdict, report.violated, report.exit_code) == (REPRODUCED, "committed_durable", 1), render(report)
    assert report.steps[-1].outcome == REPRODUCED and report.steps[-1].step.breaks == "committed_durable"
    assert "reproduced the model's violation at step 18: committed_durable" in render(report)
    # judged by the profile's own configuration, which elects from the ISR only: a divergence there
    strict = _judged(steps, UNCLEAN_RUN, Cast.of(B, 3, [1, 2, 3]), "unclean_loss", config="kafka26")
    assert strict.verdict == DIVERGED and strict.divergence is not None and strict.divergence["step"] == 18


def test_the_verdict_object_of_a_reproduced_loss(capsys: pytest.CaptureFixture[str]) -> None:
    report = _judged(PATHS["unclean_loss"].steps("ibp-2.6"), UNCLEAN_RUN, Cast.of(B, 3, [1, 2, 3]), "unclean_loss")
    args = argparse.Namespace(command="drive", json=True)
    assert print_verdict(args, report.exit_code, *verdict_fields(report), drive=report.as_dict()) == 1
    doc = verdict_object(capsys.readouterr().out)
    assert (doc["verdict"], doc["config"]["name"]) == ("violated", "kafka26-unclean")
    assert (doc["violation"]["property"], doc["violation"]["label"]) == ("committed_durable", "reproduced")
    assert doc["drive"]["verdict"] == "reproduced" and doc["drive"]["property"] == "committed_durable"
