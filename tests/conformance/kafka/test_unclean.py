"""An unclean election on real Kafka 3.9, inferred by the adapter, and the loss the Kafka
chaos run labels with it.  The fixture is the partition state lines of a chaos run of seed 1
with unclean election on (``epochal chaos --engine kafka --unclean-leader-election``): the
paused follower 3 left the ISR, leader 1 and follower 2 were killed, and 3 -- controller
once resumed -- wrote the partition leaderless (ISR [2]) and then elected itself, at leader
epoch 4.  Kafka logs that election as it logs a clean one."""

from __future__ import annotations

from pathlib import Path

from conformance.kafka.adapter import outside_isr
from conformance.kafka.elections import Elected, elections
from impl.harness.chaos import kafka_run
from impl.harness.chaos.clients import Delivery
from properties.safety import UNCLEAN_LABEL

RUN = Path(__file__).parent / "fixtures" / "unclean-39"
LOST_CAUSE = "unclean election of broker 3 out of the ISR (leader epoch 4)"


def test_an_election_outside_the_last_written_isr_is_unclean() -> None:
    assert outside_isr(3, [2]) and not outside_isr(2, [2])
    assert not outside_isr(-1, [2])  # leaderless: no election
    assert not outside_isr(3, None)  # a partition's first write


def test_the_adapter_infers_the_unclean_election_from_the_partition_state_writes() -> None:
    chaos = [e for e in elections(RUN) if e.topic == "chaos"]
    assert chaos == [Elected("chaos", 0, 1, 0, False), Elected("chaos", 0, 3, 4, True),
                     Elected("chaos", 0, 1, 6, False)]


def test_an_ibp26_run_without_unclean_election_has_none() -> None:
    fixtures = Path(__file__).parent / "fixtures"
    for run in ("leader-kill-ibp26", "leader-kill-39"):
        assert len(elections(fixtures / run)) == 2
        assert not any(e.unclean for e in elections(fixtures / run))


def test_the_unclean_schedule_opens_with_the_models_scenario() -> None:
    clean, unclean = kafka_run.schedule(1, 16), kafka_run.schedule(1, 16, unclean=True)
    assert unclean[0] == (clean[0][0], kafka_run.UNCLEAN_KIND) and unclean[1:] == clean[1:]
    assert kafka_run.UNCLEAN_KIND == "lag-then-kill-isr"  # impl.harness.chaos.schedule's


def test_a_lost_write_is_labelled_as_the_epochal_engine_and_the_model_label_it() -> None:
    report = kafka_run.KafkaChaosReport(1, "3.9", True)
    report.acked = [Delivery("chaos", 0, f"s1-{i}", offset=i, leader_epoch=1) for i in range(4)]
    kafka_run.account(report, {("chaos", 0): [(0, 4, "s1-0"), (1, 4, "s1-1")]}, RUN)
    assert report.lost == ["s1-2 (acknowledged at offset 2)", "s1-3 (acknowledged at offset 3)"]
    assert report.causes == {LOST_CAUSE: 2} and report.label == UNCLEAN_LABEL
    assert not report.passed
    assert f"lost: 2 [{UNCLEAN_LABEL}]\n  lost 2: {LOST_CAUSE}" in kafka_run.render(report)


def test_a_loss_without_an_unclean_election_is_no_unclean_loss() -> None:
    report = kafka_run.KafkaChaosReport(1, "3.9", False)
    report.acked = [Delivery("chaos", 0, "s1-0", offset=0, leader_epoch=1)]
    kafka_run.account(report, {("chaos", 0): []}, Path(__file__).parent / "fixtures" / "leader-kill-39")
    assert report.causes == {"acknowledged with acks=all and no unclean election: a replication bug": 1}
    assert report.label is None
