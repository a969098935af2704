"""The adapter on a leader-kill run of Kafka 3.9.2 at its default inter-broker protocol (the
fixture is that run's logs, trimmed to the lines the adapter reads): the ISR changes it sees
through the controller (AlterPartition), the configuration it is judged by, and the verdict."""

from __future__ import annotations

from pathlib import Path

from conformance.judge.replay import judge
from conformance.kafka.adapter import ALTER_CHANNEL, adapt, model_config, to_records
from conformance.kafka.patterns import parse
from conformance.spark.verdict import judge_run
from tests.conformance.kafka.test_adapter import RUN as RUN_26

RUN = Path(__file__).parent / "fixtures" / "leader-kill-39"


def _records() -> list[dict]:
    return to_records(adapt(RUN), "kafka")


def test_each_profile_is_judged_by_its_configuration() -> None:
    assert model_config(RUN) == "kafka39"  # server.log: inter.broker.protocol.version = 3.9-IV0
    assert model_config(RUN_26) == "kafka26"


def test_the_leader_applies_the_isr_the_controller_wrote() -> None:
    """The restarted victim rejoins: the controller's request log shows the leader's
    AlterPartition and its answer (a ZooKeeper write), the leader's partition.log, on its
    AlterPartition channel's thread, the ISR it then took."""
    lines = [parse(t) for t in (RUN / "broker-1" / "logs" / "partition.log").read_text().splitlines()]
    assert any(x is not None and x.name == "isr_updated" and ALTER_CHANNEL in x.thread for x in lines)
    records = _records()
    kinds = [r["kind"] for r in records]
    assert "shrink_isr" not in kinds and "expand_isr" not in kinds
    at = kinds.index("alter_partition")
    write, applied = records[at], records[at + 1]
    assert applied["kind"] == "apply_isr" and applied["node"] == write["params"]["leader"]
    assert write["zxid"] is not None and write["params"]["error"] is None
    assert applied["params"] == {"isr": write["params"]["isr"], "zk_version": write["params"]["zk_version"]}
    assert sorted(write["params"]["isr"]) == [1, 2, 3]


def test_the_run_conforms_to_kafka39_and_not_to_the_seeds_restart() -> None:
    records = _records()
    (verdict,) = judge_run("kafka", records, judge, "kafka39")
    assert verdict["status"] == "conforms", verdict["reason"]
    assert verdict["matched"] == verdict["total"] > 60
    (seed,) = judge_run("kafka", records, judge, "kip320")
    restart = next(i for i, r in enumerate(records) if r["kind"] == "broker_restart" and r["ts"] > records[
        next(j for j, x in enumerate(records) if x["kind"] == "broker_crash")]["ts"])
    victim = records[restart]["params"]["broker"]
    assert (seed["first_bad_kind"], seed["first_bad_node"]) == ("become_follower", victim), seed["reason"]


def test_the_leader_and_controller_kill_at_ibp26_conforms_to_kafka26() -> None:
    """The committed ibp-2.6 run: the new controller's leaderless write, then its election
    (two writes where the seed's controller makes one), and the restarted victim's return."""
    records = to_records(adapt(RUN_26), "kafka")
    (verdict,) = judge_run("kafka", records, judge, "kafka26")
    assert verdict["status"] == "conforms", verdict["reason"]
    assert any(r["kind"] == "elect_leader" and r["params"]["leader"] == -1 for r in records)
