"""Integration: consumer groups with Kafka's own clients (docs/kafka-protocol.md "Consumer
groups") on an authenticated three-broker cluster.  kafka-python and confluent-kafka
consumers ``subscribe``, consume, commit, and a new consumer of the same group resumes at
the committed offsets; two members split two partitions, and when one leaves the other
takes both."""

from __future__ import annotations

import time
from typing import Any

import pytest

from impl.harness.cluster import LocalCluster
from impl.node import zk as zkl
from impl.node.auth.credentials import ClusterSecret
from impl.node.broker.kafka_groups import offset_path
from impl.node.client import Admin
from tests.impl.node.test_kafka_clients import (
    USER,
    _kafka_python_config,
    _librdkafka_config,
    _wait_for_leaders,
)

kafka = pytest.importorskip("kafka", reason="kafka-python (the dev extra) is not installed")
confluent_kafka = pytest.importorskip("confluent_kafka",
                                      reason="confluent-kafka (the dev extra) is not installed")

pytestmark = pytest.mark.integration

TOPIC = "grouped"
PER_PARTITION = 20
QUIET_MS = 2000  # a consumer has read everything once nothing more came for this long
HEARTBEAT_MS = 500  # members learn of a rebalance from a heartbeat: sooner than the default 3 s


def _produce(c: LocalCluster, password: str, first: int, count: int) -> None:
    """``count`` records to each of the topic's two partitions, values ``p:i``."""
    producer = kafka.KafkaProducer(acks="all", **_kafka_python_config(c, password))
    try:
        for i in range(first, first + count):
            for p in (0, 1):
                producer.send(TOPIC, value=f"{p}:{i}".encode(), partition=p)
        producer.flush(30)
    finally:
        producer.close(10)


def _kafka_python_group(c: LocalCluster, password: str, group: str, want: int) -> list[bytes]:
    """A kafka-python consumer that subscribes: ``want`` records (none more arrives within
    QUIET_MS), committed; then it leaves."""
    consumer = kafka.KafkaConsumer(TOPIC, group_id=group, enable_auto_commit=False,
                                   auto_offset_reset="earliest", consumer_timeout_ms=QUIET_MS,
                                   heartbeat_interval_ms=HEARTBEAT_MS,
                                   **_kafka_python_config(c, password))
    try:
        got = [m.value for m in consumer]
        consumer.commit()
        assert len(got) == want, got
        return got
    finally:
        consumer.close()


def _librdkafka_consumer(c: LocalCluster, password: str, group: str) -> Any:
    consumer = confluent_kafka.Consumer({**_librdkafka_config(c, password), "group.id": group,
                                         "enable.auto.commit": False,
                                         "auto.offset.reset": "earliest",
                                         "heartbeat.interval.ms": HEARTBEAT_MS})
    consumer.subscribe([TOPIC])
    return consumer


def _librdkafka_group(c: LocalCluster, password: str, group: str, want: int) -> list[bytes]:
    consumer = _librdkafka_consumer(c, password, group)
    try:
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        quiet_until = deadline
        while time.monotonic() < min(deadline, quiet_until):
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
            if len(got) == want:
                quiet_until = time.monotonic() + QUIET_MS / 1000  # no more than ``want``
        consumer.commit(asynchronous=False)
        assert len(got) == want, got
        return got
    finally:
        consumer.close()


def _stored(c: LocalCluster, group: str) -> dict[int, dict[str, Any]]:
    zk = zkl.connect(c.zookeeper, acl=c.zk_acl)
    try:
        return {p: zkl.decode(zk.get(offset_path(group, TOPIC, p))[0]) for p in (0, 1)}
    finally:
        zk.stop()
        zk.close()


@pytest.mark.slow  # about 20 s: two consumers per client, each until it has been quiet for 2 s
def test_group_consumers_subscribe_commit_resume_and_split_partitions(make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, partitions=2, replication_factor=3)
    _wait_for_leaders(c, TOPIC, 2)
    password = ClusterSecret.load(c.data_dir).password(USER)
    _produce(c, password, 0, PER_PARTITION)

    # each client: everything from the start, committed; a new consumer of the same group
    # then reads only what came after
    assert len(set(_kafka_python_group(c, password, "kp", 2 * PER_PARTITION))) == 2 * PER_PARTITION
    assert len(set(_librdkafka_group(c, password, "rd", 2 * PER_PARTITION))) == 2 * PER_PARTITION
    _produce(c, password, PER_PARTITION, 5)
    later = {f"{p}:{i}".encode() for p in (0, 1) for i in range(PER_PARTITION, PER_PARTITION + 5)}
    assert set(_kafka_python_group(c, password, "kp", 10)) == later
    assert set(_librdkafka_group(c, password, "rd", 10)) == later
    stored = _stored(c, "rd")
    assert {p: s["offset"] for p, s in stored.items()} == {0: PER_PARTITION + 5, 1: PER_PARTITION + 5}
    assert {s["committed_by"] for s in stored.values()} == {USER}

    _assert_two_members_split_and_one_takes_over(c, password)


def _assignment(consumer: Any) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def _assert_two_members_split_and_one_takes_over(c: LocalCluster, password: str) -> None:
    first = _librdkafka_consumer(c, password, "split")
    second = _librdkafka_consumer(c, password, "split")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                _assignment(first) | _assignment(second) == {0, 1}
                and _assignment(first) and _assignment(second)):
            first.poll(0.1)
            second.poll(0.1)
        assert sorted([_assignment(first), _assignment(second)], key=min) == [{0}, {1}]
        second.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _assignment(first) != {0, 1}:
            first.poll(0.1)
        assert _assignment(first) == {0, 1}
    finally:
        first.close()
