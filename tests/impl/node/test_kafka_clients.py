"""Integration: Kafka's own clients -- kafka-python and confluent-kafka (librdkafka) --
against an authenticated three-broker cluster, through each broker's Kafka listener
(docs/kafka-protocol.md).  Idempotent acks=all producers, consumers by assignment, and a
wrong password refused with Kafka's SASL authentication error."""

from __future__ import annotations

import contextlib
import io
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from impl_testing import KAFKA_JARS

from impl.harness.cli.main import main
from impl.harness.cluster import LocalCluster
from impl.harness.kafka import fetch
from impl.harness.recordings import controller_of, wait_for_change
from impl.node.auth.credentials import ClusterSecret
from impl.node.client import Admin
from tests.impl.node.test_kafka_console_tools import CONSOLE_CONSUMER, _java_config, _run

kafka = pytest.importorskip("kafka", reason="kafka-python (the dev extra) is not installed")
confluent_kafka = pytest.importorskip("confluent_kafka",
                                      reason="confluent-kafka (the dev extra) is not installed")

pytestmark = pytest.mark.integration

RECORDS = 100
USER = "alice"


def _wait_for_leaders(c: LocalCluster, topic: str, partitions: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = c.metadata(0) or {}
        parts = meta.get("topics", {}).get(topic, {})
        if len(parts) == partitions and all(p["leader"] >= 0 and len(p["isr"]) == 3
                                            for p in parts.values()):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{topic}: no leader with a full ISR for every partition")


def _kafka_python_config(c: LocalCluster, password: str) -> dict[str, Any]:
    """The same properties under kafka-python's names, as docs/kafka-protocol.md shows."""
    config = _librdkafka_config(c, password)
    return {"bootstrap_servers": config["bootstrap.servers"].split(","),
            "security_protocol": config["security.protocol"],
            "sasl_mechanism": config["sasl.mechanism"],
            "sasl_plain_username": config["sasl.username"], "sasl_plain_password": password,
            **({"ssl_cafile": config["ssl.ca.location"]} if "ssl.ca.location" in config else {})}


def _librdkafka_config(c: LocalCluster, password: str) -> dict[str, Any]:
    """The properties ``epochal cluster client-config`` prints (its password replaced)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cluster", "client-config", "--data-dir", str(c.data_dir), "--user", USER]) == 0
    config = dict(line.split("=", 1) for line in out.getvalue().splitlines())
    assert config["bootstrap.servers"] == c.kafka_bootstrap
    assert config["sasl.mechanism"] == "SCRAM-SHA-256" and config["sasl.username"] == USER
    return {**config, "sasl.password": password}


def _produce_kafka_python(c: LocalCluster, password: str, topic: str) -> list[int]:
    producer = kafka.KafkaProducer(acks="all", enable_idempotence=True,
                                   **_kafka_python_config(c, password))
    try:
        futures = [producer.send(topic, key=f"k{i}".encode(), value=f"kafka-python {i}".encode(),
                                 partition=0) for i in range(RECORDS)]
        producer.flush(30)
        return [f.get(30).offset for f in futures]
    finally:
        producer.close(10)


def _consume_kafka_python(c: LocalCluster, password: str, topic: str) -> list[tuple[int, bytes, bytes]]:
    consumer = kafka.KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=3000,
                                   **_kafka_python_config(c, password))
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [(m.offset, m.key, m.value) for m in consumer]
    finally:
        consumer.close()


def _end_offset(c: LocalCluster, password: str, topic: str) -> int:
    """The partition's log end as consumers see it (ListOffsets latest: the HW)."""
    consumer = kafka.KafkaConsumer(enable_auto_commit=False, **_kafka_python_config(c, password))
    try:
        tp = kafka.TopicPartition(topic, 0)
        return int(consumer.end_offsets([tp])[tp])
    finally:
        consumer.close()


def _send_librdkafka(c: LocalCluster, password: str, topic: str, records: int,
                     before_each: Callable[[int], None] = lambda i: None,
                     timeout_s: float = 30) -> list[int]:
    """``records`` keyed acks=all idempotent records through confluent-kafka: the offsets its
    delivery reports give, in order; every report must be a success."""
    offsets: list[int] = []
    errors: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    producer = confluent_kafka.Producer({**_librdkafka_config(c, password), "acks": "all",
                                         "enable.idempotence": True,
                                         "message.timeout.ms": int(timeout_s * 1000)})
    for i in range(records):
        before_each(i)
        producer.produce(topic, key=f"k{i}".encode(), value=f"librdkafka {i}".encode(),
                         partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(timeout_s) == 0
    assert errors == []
    return offsets


def _produce_librdkafka(c: LocalCluster, password: str, topic: str) -> list[int]:
    return _send_librdkafka(c, password, topic, RECORDS)


def _consume_librdkafka(c: LocalCluster, password: str, topic: str,
                        want: int) -> list[tuple[int, bytes, bytes]]:
    consumer = confluent_kafka.Consumer({**_librdkafka_config(c, password),
                                         "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        got: list[tuple[int, bytes, bytes]] = []
        deadline = time.monotonic() + 30
        while len(got) < want and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.key(), msg.value()))
        return got
    finally:
        consumer.close()


def test_kafka_clients_produce_idempotently_and_consume_by_assignment_and_a_wrong_password_is_refused(
        make_cluster: Any, caplog: Any) -> None:
    c = make_cluster(3, min_insync_replicas=2)
    password = _produce_and_read_back_with_both_clients(c)
    assert _librdkafka_config(c, password)["security.protocol"] == "SASL_PLAINTEXT"
    _assert_wrong_password_refused(c, password, caplog)


@pytest.mark.slow
def test_kafka_clients_over_sasl_ssl_trust_the_cluster_ca(make_cluster: Any) -> None:
    """With ``--tls`` (Kafka's SASL_SSL) both clients connect with the CA ``client-config``
    names, verifying the brokers' certificates, and produce and read back the same."""
    c = make_cluster(3, min_insync_replicas=2, tls=True)
    password = _produce_and_read_back_with_both_clients(c)
    config = _librdkafka_config(c, password)
    assert config["security.protocol"] == "SASL_SSL" and config["ssl.ca.location"].endswith(".pem")


def _produce_and_read_back_with_both_clients(c: LocalCluster) -> str:
    """100 keyed idempotent acks=all records by each client to a topic of its own, each
    topic read back by assignment by both clients, once and in order; the password used."""
    with Admin(c.bootstrap) as admin:
        admin.create_topic("kp", partitions=1, replication_factor=3)
        admin.create_topic("rd", partitions=1, replication_factor=3)
    _wait_for_leaders(c, "kp", 1)
    _wait_for_leaders(c, "rd", 1)
    password = ClusterSecret.load(c.data_dir).password(USER)

    expected_kp = [(i, f"k{i}".encode(), f"kafka-python {i}".encode()) for i in range(RECORDS)]
    assert _produce_kafka_python(c, password, "kp") == list(range(RECORDS))
    assert _consume_kafka_python(c, password, "kp") == expected_kp

    expected_rd = [(i, f"k{i}".encode(), f"librdkafka {i}".encode()) for i in range(RECORDS)]
    assert sorted(_produce_librdkafka(c, password, "rd")) == list(range(RECORDS))
    assert _consume_librdkafka(c, password, "rd", RECORDS) == expected_rd
    # each client reads the other's records too, in order, once
    assert _consume_kafka_python(c, password, "rd") == expected_rd
    assert _consume_librdkafka(c, password, "kp", RECORDS) == expected_kp
    return password


def _assert_wrong_password_refused(c: LocalCluster, password: str, caplog: Any) -> None:
    """Kafka's SASL_AUTHENTICATION_FAILED (58), as each client reports it, for a password
    one character off; and nothing changes."""
    wrong = password + "x"
    with pytest.raises(kafka.errors.KafkaError):  # kafka-python: its bootstrap gives up
        kafka.KafkaProducer(bootstrap_timeout_ms=3000, **_kafka_python_config(c, wrong))
    assert "SaslAuthenticationFailedError" in caplog.text
    errors: list[Any] = []
    producer = confluent_kafka.Producer({**_librdkafka_config(c, wrong),
                                         "error_cb": errors.append})
    producer.produce("rd", key=b"k", value=b"never written", partition=0)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors and errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION, errors
    producer.purge()
    # nothing changes: the refused client's record is not in the log
    assert _end_offset(c, password, "rd") == RECORDS


# -- through failovers ------------------------------------------------------------------------
FAILOVER_RECORDS = 1000
SEND_INTERVAL_S = 0.01  # the producers' pace: 1,000 records over 10 s and more


def _leader(c: LocalCluster, topic: str) -> int:
    with Admin(c.bootstrap) as admin:
        return admin.describe(topic)[topic][0].leader


def _failovers(c: LocalCluster, topic: str, leader_killed: threading.Event,
               controller_killed: threading.Event) -> None:
    """kill -9 of the partition's leader; once a new leader has it and the victim is back
    in the ISR, kill -9 of the controller.  Each event is set just before its kill: the
    producer holds its next third of records until then, so each kill falls mid-stream."""
    old = _leader(c, topic)
    leader_killed.set()
    c.kill(old)
    wait_for_change(lambda: _leader(c, topic), old, "leader", timeout=30)
    c.restart(old)
    c.wait_ready(30)
    _wait_for_leaders(c, topic, 1, timeout=60)
    old_controller = controller_of(c)
    controller_killed.set()
    c.kill(old_controller)
    wait_for_change(lambda: controller_of(c), old_controller, "controller", timeout=30)


def _paced(i: int, leader_killed: threading.Event, controller_killed: threading.Event) -> None:
    """Before record ``i`` is sent: the pace, and the gates of the kills."""
    if i == FAILOVER_RECORDS // 3:
        assert leader_killed.wait(60)
    if i == 2 * FAILOVER_RECORDS // 3:
        assert controller_killed.wait(120)
    time.sleep(SEND_INTERVAL_S)


def _failover_send_kafka_python(c: LocalCluster, password: str, topic: str,
                                leader_killed: threading.Event,
                                controller_killed: threading.Event) -> list[int]:
    producer = kafka.KafkaProducer(acks="all", enable_idempotence=True,
                                   delivery_timeout_ms=120_000, request_timeout_ms=5000,
                                   **_kafka_python_config(c, password))
    try:
        futures = []
        for i in range(FAILOVER_RECORDS):
            _paced(i, leader_killed, controller_killed)
            futures.append(producer.send(topic, key=f"k{i}".encode(),
                                         value=f"kafka-python {i}".encode(), partition=0))
        producer.flush(120)
        return [f.get(1).offset for f in futures]
    finally:
        producer.close(10)


def _failover_send_librdkafka(c: LocalCluster, password: str, topic: str,
                              leader_killed: threading.Event,
                              controller_killed: threading.Event) -> list[int]:
    return _send_librdkafka(c, password, topic, FAILOVER_RECORDS,
                            lambda i: _paced(i, leader_killed, controller_killed), timeout_s=120)


def _consume_console(c: LocalCluster, topic: str, records: int, config: Path) -> list[str]:
    """The first ``records`` of the partition as Kafka's console consumer prints them
    (``key:value``), by partition and offset, configured by ``client-config --java``."""
    done = _run(fetch().classpath, CONSOLE_CONSUMER, "--bootstrap-server", c.kafka_bootstrap,
                "--consumer.config", str(_java_config(c, config, user=USER)), "--topic", topic,
                "--partition", "0", "--offset", "earliest", "--max-messages", str(records),
                "--property", "print.key=true", "--property", "key.separator=:")
    return done.stdout.splitlines()


@pytest.mark.slow
@KAFKA_JARS  # Kafka's console consumer reads the records back too
@pytest.mark.parametrize("client", ["kafka-python", "librdkafka"])
def test_kafka_clients_produce_each_record_once_in_order_through_a_leader_and_a_controller_kill(
        make_cluster: Any, client: str, tmp_path: Path) -> None:
    """1,000 acks=all idempotent records while the partition's leader and then the
    controller are killed: every send is acknowledged, and the log holds each record once,
    in the order sent -- the clients find the new leader from NOT_LEADER_OR_FOLLOWER and
    Metadata, and the new leader knows the producer's sequences from its replicated log.
    Kafka's own console consumer reads the same 1,000 back, in order."""
    c = make_cluster(3, min_insync_replicas=2)
    topic = "failover"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    _wait_for_leaders(c, topic, 1)
    password = ClusterSecret.load(c.data_dir).password(USER)
    leader_killed, controller_killed = threading.Event(), threading.Event()
    send = _failover_send_kafka_python if client == "kafka-python" else _failover_send_librdkafka
    killer = threading.Thread(target=_failovers, args=(c, topic, leader_killed, controller_killed))
    t0 = time.monotonic()
    killer.start()
    try:
        offsets = send(c, password, topic, leader_killed, controller_killed)
    finally:
        killer.join(180)
    seconds = time.monotonic() - t0
    assert not killer.is_alive()
    assert sorted(offsets) == list(range(FAILOVER_RECORDS))
    expected = [(i, f"k{i}".encode(), f"{client} {i}".encode()) for i in range(FAILOVER_RECORDS)]
    got = (_consume_kafka_python(c, password, topic) if client == "kafka-python"
           else _consume_librdkafka(c, password, topic, FAILOVER_RECORDS))
    assert got == expected
    assert _end_offset(c, password, topic) == FAILOVER_RECORDS  # nothing after them either
    assert _consume_console(c, topic, FAILOVER_RECORDS, tmp_path / "client.properties") == \
        [f"{key.decode()}:{value.decode()}" for _, key, value in expected]
    print(f"\n{client}: {FAILOVER_RECORDS} records through a leader and a controller kill "
          f"in {seconds:.1f} s")
