"""Produce and consume throughput of Kafka's own clients against Epochal brokers, side by
side with Epochal's own client, on one cluster in one run.

    python bench/bench_kafka_clients.py                       # 50,000 records a run, every client
    python bench/bench_kafka_clients.py --records 5000        # a quick look
    python bench/bench_kafka_clients.py --clients confluent-kafka,epochal

A cluster of three real broker processes on an embedded ZooKeeper (``LocalCluster``,
authentication on).  For acks=1 and then acks=all, each client produces ``--records`` 1 KiB
records to a fresh topic of one partition replicated on all three brokers (every replica in
the ISR first), then reads them all back from offset 0, checking each came once and in order
(bench/kafka_load.py):

* **confluent-kafka** (librdkafka), through the Kafka listeners with SCRAM as
  ``epochal cluster client-config`` says: batched (linger 10 ms, 1 MB batches, many in
  flight), idempotent with acks=all as Kafka's clients are by default; consumed by assignment;
* **epochal** (impl/node/client.py) on the broker protocol: ``Producer.send_batch`` of
  ``--batch`` records, one request in flight, idempotent with acks=all (its default);
  ``Consumer.poll_records``;
* **kafka-python**, through the Kafka listeners: batched as librdkafka is; consumed by
  assignment.

records/s and MiB/s are from the first send to the last acknowledgement; consume MiB/s from
the consumer's start to the last record.  Not a timed test: the figures are in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable

import kafka_load as load

from impl.harness.cluster import LocalCluster
from impl.node.client import Consumer, Producer

PROG = "bench_kafka_clients"
ACKS = (1, -1)


def produce_epochal(cluster: LocalCluster, topic: str, records: int, acks: int, batch: int) -> float:
    producer = Producer(cluster.bootstrap, acks=acks)
    try:
        t0 = time.monotonic()
        for base in range(0, records, batch):
            producer.send_batch(topic, [load.record(i) for i in range(base, min(records, base + batch))],
                                partition=0)
        return time.monotonic() - t0
    finally:
        producer.close()


def consume_epochal(cluster: LocalCluster, topic: str, records: int) -> float:
    consumer = Consumer(cluster.bootstrap)
    try:
        consumer.assign(topic)
        return load.drain(topic, records, lambda _want: [(r.offset, r.value) for r in consumer.poll_records()])
    finally:
        consumer.close()


def kafka_python_config(cluster: LocalCluster) -> dict[str, object]:
    """librdkafka's properties (``epochal cluster client-config``) in kafka-python's names."""
    props = load.librdkafka_config(cluster)
    return {"bootstrap_servers": props["bootstrap.servers"].split(","),
            "security_protocol": props["security.protocol"], "sasl_mechanism": props["sasl.mechanism"],
            "sasl_plain_username": props["sasl.username"], "sasl_plain_password": props["sasl.password"]}


def produce_kafka_python(cluster: LocalCluster, topic: str, records: int, acks: int, _batch: int) -> float:
    import kafka

    producer = kafka.KafkaProducer(acks="all" if acks == -1 else acks, enable_idempotence=acks == -1,
                                   linger_ms=10, batch_size=1_000_000, max_request_size=4_000_000,
                                   **kafka_python_config(cluster))
    try:
        t0 = time.monotonic()
        futures = [producer.send(topic, load.record(i), partition=0) for i in range(records)]
        producer.flush(300)
        elapsed = time.monotonic() - t0
        failed = [f.exception for f in futures if not f.succeeded()]
        if failed:
            raise load.BenchError(f"{topic}: {len(failed)} of {records} records not acknowledged: {failed[0]}")
        return elapsed
    finally:
        producer.close(10)


def consume_kafka_python(cluster: LocalCluster, topic: str, records: int) -> float:
    import kafka

    consumer = kafka.KafkaConsumer(enable_auto_commit=False, **kafka_python_config(cluster))
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return load.drain(topic, records, lambda want: [
            (m.offset, m.value) for m in consumer.poll(timeout_ms=500, max_records=min(want, 10_000)).get(tp, [])])
    finally:
        consumer.close()


def produce_confluent(cluster: LocalCluster, topic: str, records: int, acks: int, _batch: int) -> float:
    return load.produce_librdkafka(cluster, topic, records, acks)


def consume_confluent(cluster: LocalCluster, topic: str, records: int) -> float:
    return load.consume_librdkafka(cluster, topic, records)


# each client: the module it needs (None: in this tree), how it produces, how it consumes
Produce = Callable[[LocalCluster, str, int, int, int], float]
Consume = Callable[[LocalCluster, str, int], float]
CLIENTS: dict[str, tuple[str | None, Produce, Consume]] = {
    "confluent-kafka": ("confluent_kafka", produce_confluent, consume_confluent),
    "epochal": (None, produce_epochal, consume_epochal),
    "kafka-python": ("kafka", produce_kafka_python, consume_kafka_python),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = load.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[3:6]))
    ap.add_argument("--records", type=int, default=50_000,
                    help="1 KiB records per client and acks setting (default 50,000)")
    ap.add_argument("--batch", type=int, default=1000,
                    help="records per produce request of Epochal's client (default 1000)")
    ap.add_argument("--clients", default=",".join(CLIENTS),
                    help=f"which clients, comma-separated (default: {','.join(CLIENTS)})")
    args = ap.parse_args(argv)
    args.clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in args.clients if c not in CLIENTS]
    if args.records <= 0 or args.batch <= 0:
        ap.error("--records and --batch must be positive")
    if unknown or not args.clients:
        ap.error(f"--clients: {', '.join(unknown) or 'none given'} (known: {', '.join(CLIENTS)})")
    missing = load.missing_modules([m for c in args.clients if (m := CLIENTS[c][0])])
    if missing:
        ap.error(f"{', '.join(missing)} not installed (the dev extra: pip install -e '.[dev]')")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mib = args.records * load.RECORD_BYTES / load.MIB
    print(f"{args.records:,} records of {load.RECORD_BYTES} B ({mib:,.1f} MiB) per run, one partition "
          f"replicated on 3 brokers; load average at start {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="epochal-bench-clients-") as d:
        cluster = LocalCluster(d, brokers=3)
        try:
            cluster.start()
            for acks in ACKS:
                for name in args.clients:
                    _module, produce, consume = CLIENTS[name]
                    topic = f"bench-{name}-acks-{load.acks_label(acks)}"
                    load.create_topic(cluster, topic, 3)
                    produce_s = produce(cluster, topic, args.records, acks, args.batch)
                    consume_s = consume(cluster, topic, args.records)
                    rows.append((name, load.acks_label(acks), args.records / produce_s, mib / produce_s,
                                 mib / consume_s))
                    print(f"  {name} acks={load.acks_label(acks)}: produced in {produce_s:.1f} s, "
                          f"consumed in {consume_s:.1f} s", flush=True)
        except (load.BenchError, TimeoutError) as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        finally:
            cluster.stop()
    print(f"\n{'client':<16} {'acks':<5} {'records/s':>10} {'MiB/s':>7} {'consume MiB/s':>14}")
    for name, acks_text, rps, mps, cmps in rows:
        print(f"{name:<16} {acks_text:<5} {rps:>10,.0f} {mps:>7.1f} {cmps:>14.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
