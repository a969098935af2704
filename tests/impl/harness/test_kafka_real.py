"""Real Apache Kafka brokers in the harness: failover of a partition leader and of the
controller, seen in ZooKeeper and in Kafka's own state-change logs, in both profiles.

Fetches the jars with Maven (once; cached), so it is slow and needs Maven Central.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from impl_testing import REAL_KAFKA, real_kafka, zk_session_reads

from impl.harness.kafka import KafkaCluster
from impl.node.auth.zookeeper import GUEST, ZK_USER

pytestmark = REAL_KAFKA

TOPIC = "replicated"
FAILOVER_S = 60.0


@pytest.fixture(params=["ibp-2.6", "3.9"])
def kafka(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KafkaCluster]:
    with real_kafka(tmp_path / "kafka", request.param) as cluster:
        yield cluster


def leader_and_isr_received(cluster: KafkaCluster, broker: int, leader: int, leader_epoch: int) -> bool:
    """The broker's state-change log shows it received the LeaderAndIsr naming ``leader``
    at ``leader_epoch`` for the topic's partition 0."""
    log = cluster.brokers[broker].settings.log4j_dir / "state-change.log"
    line = re.compile(rf"Received LeaderAndIsr request LeaderAndIsrPartitionState\(topicName='{TOPIC}', "
                      rf"partitionIndex=0, controllerEpoch=\d+, leader={leader}, leaderEpoch={leader_epoch},")
    return log.exists() and any(line.search(text) for text in log.read_text().splitlines())


def test_leader_and_controller_failover(kafka: KafkaCluster) -> None:
    before = kafka.create_topic(TOPIC, partitions=1, replication_factor=3)[0]
    assert before.isr == (1, 2, 3) and before.leader in (1, 2, 3)
    # the controller sends LeaderAndIsr after it wrote the partition's state: wait for its log line
    kafka.wait_until(lambda: leader_and_isr_received(kafka, before.leader, before.leader, before.leader_epoch),
                     FAILOVER_S, f"broker {before.leader}'s first LeaderAndIsr")

    # ZooKeeper's ACLs are on: Kafka's znodes are the cluster identity's, readable by all
    path = f"/kafka/brokers/topics/{TOPIC}"
    acls, _ = kafka.zk().get_acls(path)
    assert {(a.id.scheme, a.id.id, a.perms) for a in acls} == {("sasl", ZK_USER, 31), ("world", "anyone", 1)}
    # and ZooKeeper admits that identity only: a digest sign-in opens no session
    assert kafka.zk_server is not None
    assert not zk_session_reads(kafka.zk_server.hosts, auth_data=[GUEST])

    # kill -9 the leader: the controller elects another replica, with a higher leader epoch
    kafka.kill(before.leader)
    survivors = {1, 2, 3} - {before.leader}
    after = kafka.wait_until(
        lambda: (s := kafka.partition_state(TOPIC)) and s.leader in survivors
        and s.leader_epoch > before.leader_epoch and s,
        FAILOVER_S, "a new leader of the partition")
    assert before.leader not in after.isr
    kafka.wait_until(lambda: leader_and_isr_received(kafka, after.leader, after.leader, after.leader_epoch),
                     FAILOVER_S, f"broker {after.leader}'s LeaderAndIsr at leader epoch {after.leader_epoch}")

    # kill -9 the controller (once a live broker is it): the last broker takes over, epoch + 1
    ctrl = kafka.wait_until(lambda: (c := kafka.controller()) and c.broker in survivors and c,
                            FAILOVER_S, "a live controller")
    kafka.kill(ctrl.broker)
    last = kafka.wait_until(lambda: (c := kafka.controller()) and c.broker in survivors - {ctrl.broker}
                            and c.epoch > ctrl.epoch and c, FAILOVER_S, "a new controller")
    assert last.epoch == ctrl.epoch + 1
    controller_log = kafka.brokers[last.broker].settings.log4j_dir / "controller.log"
    assert f"Epoch incremented to {last.epoch}" in controller_log.read_text()

    # the first victim comes back and rejoins the ISR of the partition it led
    kafka.restart(before.leader)
    back = kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) and before.leader in s.isr and s,
                            FAILOVER_S, f"broker {before.leader} back in the ISR")
    assert back.leader_epoch >= after.leader_epoch


def isr_update_threads(cluster: KafkaCluster, broker: int) -> list[str]:
    """The threads on which the broker's partition.log says it updated the topic's ISR."""
    log = cluster.brokers[broker].settings.log4j_dir / "partition.log"
    line = re.compile(rf"^\S+ \S+ INFO \[(.+?)\] \[Partition {TOPIC}-0 broker={broker}\] ISR updated to ")
    return [m.group(1) for m in map(line.match, log.read_text().splitlines()) if m]


def log_tails(cluster: KafkaCluster, leader: int, follower: int, lines: int = 15) -> str:
    """The last lines of what the leader's partition and controller logs and the follower's
    server log said: what a failure to rejoin the ISR is diagnosed from."""
    out = []
    for broker, name in [(leader, "partition.log"), (leader, "server.log"), (follower, "server.log")] + [
            (b, "controller.log") for b in sorted(cluster.brokers)]:
        log = cluster.brokers[broker].settings.log4j_dir / name
        text = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else ["(absent)"]
        out += [f"--- broker {broker} {name}", *(line[:300] for line in text)]
    return "\n".join(out)


def test_pause_resume_and_controlled_shutdown(kafka: KafkaCluster) -> None:
    before = kafka.create_topic(TOPIC, partitions=1, replication_factor=3)[0]
    follower = min({1, 2, 3} - {before.leader})

    # SIGSTOP a follower: its session ends and it leaves the ISR; SIGCONT: it comes back
    kafka.pause(follower)
    kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) and follower not in s.isr,
                     FAILOVER_S, f"broker {follower} out of the ISR")
    kafka.resume(follower)
    try:
        back = kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) and follower in s.isr and s,
                                FAILOVER_S, f"broker {follower} back in the ISR")
    except TimeoutError as timeout:
        # seen once on an idle machine and never again: keep what Kafka said, to learn why
        pytest.fail(f"{timeout}\n{log_tails(kafka, before.leader, follower)}")
    assert back.leader == before.leader
    # who wrote the expanded ISR is what the profiles differ in: the leader itself, to
    # ZooKeeper (below 2.7-IV2), or the controller, on the leader's AlterPartition
    # (the line follows the ZooKeeper write it reports: wait for it rather than read once)
    threads = kafka.wait_until(lambda: isr_update_threads(kafka, back.leader), FAILOVER_S,
                               "the leader's partition.log line for the ISR update")
    by_alter_partition = "alter-partition" in threads[-1]
    assert by_alter_partition != kafka.profile.leader_writes_isr, threads

    # SIGTERM the leader: Kafka's controlled shutdown moves leadership before it exits
    assert kafka.stop_broker(before.leader) == 143  # the JVM's exit on SIGTERM (128 + 15)
    moved = kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) and s.leader != before.leader and s,
                             FAILOVER_S, "leadership moved off the stopped broker")
    assert moved.leader in {1, 2, 3} - {before.leader}
    assert moved.leader_epoch > back.leader_epoch
    server_log = kafka.brokers[before.leader].settings.log4j_dir / "server.log"
    assert "Controlled shutdown request returned successfully" in server_log.read_text()
    assert [e["fault"] for e in map(json.loads, (kafka.data_dir / "faults.jsonl").read_text().splitlines())] \
        == ["pause", "resume", "stop"]
