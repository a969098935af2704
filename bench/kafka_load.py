"""What the Kafka-client benchmarks share (bench/bench_broker_memory.py,
bench/bench_kafka_clients.py): a real cluster of Epochal brokers from the harness, a topic
with one partition, and confluent-kafka (librdkafka) producing 1 KiB records to it through
the brokers' Kafka listeners and reading them back by assignment, signed in with SCRAM as
``epochal cluster client-config`` says (docs/kafka-protocol.md).

Every record is ``RECORD_BYTES`` long and starts with its index (8 bytes, big-endian), so a
consumer checks that it got every record once and in order, not merely enough bytes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

from impl.harness.cluster import LocalCluster, kafka_client_properties
from impl.node.client import Admin

RECORD_BYTES = 1024
MIB = 1 << 20
USER = "bench"  # the Kafka clients' SCRAM user; its password derives from the cluster's secret
FILLER = b"r" * (RECORD_BYTES - 8)
PROGRESS_EVERY_S = 5.0


class ArgumentParser(argparse.ArgumentParser):
    """argparse's, but a bad argument is one line (``prog: what is wrong``) and exit 2, without
    the usage block."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


class BenchError(RuntimeError):
    """A run that cannot give a figure: a record lost, refused or out of order."""


def record(index: int) -> bytes:
    return index.to_bytes(8, "big") + FILLER


def index_of(value: bytes) -> int:
    return int.from_bytes(value[:8], "big")


class InOrder:
    """A consumer's check: records 0, 1, 2, ... at offsets 0, 1, 2, ..., each once."""

    def __init__(self, topic: str) -> None:
        self.topic, self.got = topic, 0

    def take(self, offset: int, value: bytes) -> None:
        if offset != self.got or index_of(value) != self.got or len(value) != RECORD_BYTES:
            raise BenchError(f"{self.topic}: record {self.got} expected, offset {offset} holding "
                             f"record {index_of(value)} ({len(value)} B) came")
        self.got += 1


def acks_label(acks: int) -> str:
    return "all" if acks == -1 else str(acks)


class Progress:
    """A line every ``PROGRESS_EVERY_S`` seconds on a long run: how far, how fast."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total = what, total
        self.t0 = self.last = time.monotonic()

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            print(f"    {self.what}: {done * RECORD_BYTES / MIB:,.0f} of {self.total * RECORD_BYTES / MIB:,.0f} MiB "
                  f"({done * RECORD_BYTES / MIB / (now - self.t0):,.1f} MiB/s)", flush=True)


def create_topic(cluster: LocalCluster, topic: str, replication: int) -> int:
    """One partition on ``replication`` brokers, every replica in the ISR; its leader."""
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=replication)
        admin.wait_for(lambda: topic in admin.topics and admin.topics[topic][0].leader >= 0
                       and len(admin.topics[topic][0].isr) == replication, 30,
                       f"{topic}: an ISR of {replication}")
        return admin.topics[topic][0].leader


def librdkafka_config(cluster: LocalCluster) -> dict[str, str]:
    """The properties ``epochal cluster client-config`` prints for this cluster."""
    return dict(kafka_client_properties(str(cluster.data_dir), USER))


def produce_librdkafka(cluster: LocalCluster, topic: str, records: int, acks: int,
                       progress: Callable[[int], None] | None = None) -> float:
    """Produce ``records`` records to partition 0 as fast as librdkafka batches them (linger,
    1 MB batches, many in flight; idempotent with acks=all, as Kafka's clients are by
    default); the seconds from the first send to the last acknowledgement."""
    import confluent_kafka

    errors: list[Any] = []
    acked = [0]

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[0] += 1

    producer = confluent_kafka.Producer({
        **librdkafka_config(cluster), "acks": acks_label(acks), "enable.idempotence": acks == -1,
        "linger.ms": 10, "batch.size": 1_000_000, "batch.num.messages": 10_000,
        "queue.buffering.max.messages": 200_000, "compression.type": "none"})
    report = progress or (lambda _done: None)
    t0 = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, record(i), partition=0, on_delivery=delivered)
                break
            except BufferError:  # librdkafka's queue is full: let acknowledgements drain it
                producer.poll(0.05)
                report(acked[0])
        if i % 1000 == 0:
            producer.poll(0)
    deadline = time.monotonic() + 300
    while (left := producer.flush(1.0)) and time.monotonic() < deadline:
        report(acked[0])
    elapsed = time.monotonic() - t0
    if errors or left or acked[0] != records:
        raise BenchError(f"{topic}: {acked[0]} of {records} records acknowledged, {left} unsent, "
                         f"errors {sorted({str(e) for e in errors})[:3]}")
    return elapsed


def drain(topic: str, records: int, fetch: Callable[[int], list[tuple[int, bytes]]],
          progress: Callable[[int], None] | None = None, idle_timeout_s: float = 30.0) -> float:
    """Call ``fetch`` (one poll of some consumer for at most so many records: their offsets
    and values) until ``records`` records came back, each once and in order; the seconds it
    took."""
    check = InOrder(topic)
    t0 = last_record = time.monotonic()
    while check.got < records:
        got = fetch(records - check.got)
        now = time.monotonic()
        if not got and now - last_record > idle_timeout_s:
            raise BenchError(f"{topic}: nothing for {idle_timeout_s:.0f} s after {check.got} "
                             f"of {records} records")
        for offset, value in got:
            check.take(offset, value)
        if got:
            last_record = now
            if progress:
                progress(check.got)
    return time.monotonic() - t0


def consume_librdkafka(cluster: LocalCluster, topic: str, records: int,
                       progress: Callable[[int], None] | None = None) -> float:
    """Read partition 0 from offset 0 by assignment (no group) until every record came back;
    the seconds it took."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({**librdkafka_config(cluster), "group.id": "bench",
                                         "enable.auto.commit": False})

    def fetch(want: int) -> list[tuple[int, bytes]]:
        msgs = consumer.consume(num_messages=min(want, 10_000), timeout=0.5)
        for msg in msgs:
            if msg.error() is not None:
                raise BenchError(f"{topic}: {msg.error()}")
        return [(msg.offset(), msg.value()) for msg in msgs]

    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        return drain(topic, records, fetch, progress)
    finally:
        consumer.close()


def missing_modules(modules: list[str]) -> list[str]:
    """Those of ``modules`` that cannot be imported here (a client library not installed)."""
    missing = []
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    return missing
