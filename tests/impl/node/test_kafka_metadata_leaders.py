"""A Metadata answer never names a leader its broker list lacks: kafka-python's producer,
given a partition led by a broker it holds no address for, failed every send loop with
UnknownBrokerIdError until its flush timed out (seen in CI through a leader kill). As
Kafka's MetadataCache, such a partition has no leader (-1) and LEADER_NOT_AVAILABLE."""

from __future__ import annotations

from impl.node.broker.kafka_listener import KafkaClients
from impl.node.kafka.codec import KafkaError

STATE = {"leader": 2, "leader_epoch": 4, "replicas": [0, 1, 2], "isr": [0, 2]}


def test_a_leader_among_the_listed_brokers_is_named() -> None:
    (row,) = KafkaClients._kafka_topic("orders", {"0": STATE}, {0, 1, 2})["partitions"]
    assert row["leader_id"] == 2 and row["error_code"] == KafkaError.none and row["offline_replicas"] == []


def test_a_leader_missing_from_the_listed_brokers_is_no_leader() -> None:
    (row,) = KafkaClients._kafka_topic("orders", {"0": STATE}, {0, 1})["partitions"]
    assert row["leader_id"] == -1 and row["error_code"] == KafkaError.leader_not_available
    assert row["offline_replicas"] == [2] and row["leader_epoch"] == 4
