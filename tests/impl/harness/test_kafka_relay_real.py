"""Three real Kafka brokers behind the Kafka-protocol relay: what the relay log shows of a
topic's creation, a few produced records and a kill -9 of the leader.

Fetches the jars with Maven (once; cached), so it is slow and needs Maven Central.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from impl_testing import REAL_KAFKA, real_kafka

from impl.harness.kafka import KafkaCluster
from impl.harness.kafka.relay import read_log

pytestmark = REAL_KAFKA

TOPIC = "relayed"
WAIT_S = 60.0


@pytest.fixture(params=["ibp-2.6", "3.9"])
def kafka(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KafkaCluster]:
    with real_kafka(tmp_path / "kafka", request.param, relay=True) as cluster:
        yield cluster


def relay_log(cluster: KafkaCluster) -> list[dict[str, Any]]:
    assert cluster.relay is not None
    return [e for b in cluster.brokers for e in read_log(cluster.relay.log_path(b))]


def produce(cluster: KafkaCluster, values: list[str]) -> None:
    """acks=all through the relays: the bootstrap address is a relay's, and so is every
    address the metadata gives the producer."""
    from confluent_kafka import Producer  # in the dev environment; the harness itself needs none

    assert cluster.relay is not None
    servers = ",".join(f"127.0.0.1:{port}" for b, port in cluster.relay.ports.items() if cluster.brokers[b].alive)
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": False,
                         "message.timeout.ms": int(WAIT_S * 1000)})
    failed: list[str] = []
    for value in values:
        producer.produce(TOPIC, value.encode(), on_delivery=lambda err, _msg: err and failed.append(str(err)))
        producer.flush(WAIT_S)
    assert not failed and len(producer) == 0, failed


def fetch_answers(cluster: KafkaCluster, leader: int) -> list[dict[str, Any]]:
    """The partition's entries in the answers ``leader`` gave its followers' fetches."""
    assert cluster.relay is not None
    return [p for e in read_log(cluster.relay.log_path(leader))
            if e.get("api") == "Fetch" and e["direction"] == "response"
            for p in e["partitions"] if p["topic"] == TOPIC]


def test_relay_log_of_a_leader_kill(kafka: KafkaCluster) -> None:
    pytest.importorskip("confluent_kafka")
    before = kafka.create_topic(TOPIC, partitions=1, replication_factor=3)[0]
    produce(kafka, ["v0", "v1", "v2"])
    kafka.wait_until(lambda: any(p["high_watermark"] == 3 for p in fetch_answers(kafka, before.leader)),
                     WAIT_S, "a fetch answer with high watermark 3")
    hws = [p["high_watermark"] for p in fetch_answers(kafka, before.leader)]
    assert hws == sorted(hws) and hws[0] < 3, hws
    assert sum(p["records"] for p in fetch_answers(kafka, before.leader)) >= 2 * 3  # each follower got 3
    requests = [e for e in read_log(kafka.relay.log_path(before.leader))  # type: ignore[union-attr]
                if e.get("api") == "Fetch" and e["direction"] == "request"]
    assert {e["src"] for e in requests} == {1, 2, 3} - {before.leader}

    kafka.kill(before.leader)
    after = kafka.wait_until(
        lambda: (s := kafka.partition_state(TOPIC)) and s.leader not in (before.leader, -1)
        and s.leader_epoch > before.leader_epoch and s, WAIT_S, "a new leader")

    def new_leader_and_isr() -> bool:
        return any(e.get("api") == "LeaderAndIsr" and e["direction"] == "request"
                   and e["broker"] == after.leader and
                   any(p["topic"] == TOPIC and p["leader"] == after.leader and p["leader_epoch"] == after.leader_epoch
                       for p in e["partitions"])
                   for e in relay_log(kafka))
    kafka.wait_until(new_leader_and_isr, WAIT_S, f"LeaderAndIsr to broker {after.leader} at epoch {after.leader_epoch}")
    produce(kafka, ["v3"])
    kafka.wait_until(lambda: any(p["high_watermark"] == 4 for p in fetch_answers(kafka, after.leader)),
                     WAIT_S, "the new leader's fetch answer with high watermark 4")
    assert not [e for e in relay_log(kafka) if "decode_error" in e]
