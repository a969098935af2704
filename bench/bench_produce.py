"""Produce throughput and end-to-end latency (seed 000's benchmarks): acks=1 and acks=all on
three real replicas, side by side in one run -- the implementation's baseline.

    .venv/bin/python bench/bench_produce.py [--records 2000] [--batches 100] [--batch-size 100] [--quick]

Everything here is real: an embedded ZooKeeper and three broker processes
(:class:`impl.harness.cluster.LocalCluster`, default settings), one topic per run with one partition
and replication 3 (all three in the ISR; acks=all waits for the whole ISR), the
:class:`impl.node.client.Producer` and :class:`impl.node.client.Consumer`.

Two workloads per acks setting, on a fresh topic each:

* **one record per request**, one request in flight (``Producer.send``): records/s, the
  produce request's latency (send to acknowledgement), and the end-to-end latency;
* **batches** (``Producer.send_batch`` of ``--batch-size`` records, one in flight):
  records/s and end-to-end latency per record.

End-to-end latency is from the start of the produce call to a consumer (a thread in this
process, long-polling the leader) receiving the record.  Consumers read only below the high
watermark, so with acks=1 the end-to-end figure still includes replication to the ISR; only
the producer's acknowledgement is earlier -- and since an acks=1 producer is not held back
by replication, it runs ahead of the high watermark and its records queue behind the
followers' fetches, so its end-to-end latency can exceed acks=all's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from impl.harness.cluster import LocalCluster
from impl.node.client import Admin, Consumer, Producer

ACKS = ((1, "acks=1"), (-1, "acks=all"))


def percentiles(values: list[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds."""
    if len(values) < 2:
        v = 1000 * (values[0] if values else 0.0)
        return v, v
    q = statistics.quantiles(values, n=100, method="inclusive")
    return 1000 * q[49], 1000 * q[98]


class Watcher(threading.Thread):
    """A consumer that timestamps the first time it receives each value."""

    def __init__(self, bootstrap: str, topic: str, expected: int) -> None:
        super().__init__(daemon=True, name=f"watch-{topic}")
        self.consumer = Consumer(bootstrap)
        self.consumer.assign(topic)
        self.expected = expected
        self.seen: dict[bytes, float] = {}
        self.stop_at: float | None = None

    def run(self) -> None:
        try:
            while len(self.seen) < self.expected:
                if self.stop_at is not None and time.monotonic() > self.stop_at:
                    return
                for _t, _p, _o, value in self.consumer.poll(max_wait_ms=200):
                    self.seen.setdefault(value, time.monotonic())
        finally:
            self.consumer.close()


def one_workload(cluster: LocalCluster, topic: str, acks: int, batches: int,
                 batch_size: int) -> dict[str, Any]:
    """Produce ``batches`` requests of ``batch_size`` records each (one in flight) while a
    consumer watches; returns records/s, request and end-to-end latencies."""
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
        admin.wait_for(lambda: len(admin.topics[topic][0].isr) == 3, 30, f"{topic} ISR of 3")
    total = batches * batch_size
    watcher = Watcher(cluster.bootstrap, topic, total + 1)  # + the warm-up record
    watcher.start()
    producer = Producer(cluster.bootstrap, acks=acks)
    sent: dict[bytes, float] = {}
    request_latency: list[float] = []
    try:
        producer.send(topic, "warm-up", partition=0)  # connections and metadata
        t0 = time.monotonic()
        for i in range(batches):
            values = [f"{topic}-{i}-{j}".encode() for j in range(batch_size)]
            start = time.monotonic()
            for v in values:
                sent[v] = start
            producer.send_batch(topic, list(values), partition=0)
            request_latency.append(time.monotonic() - start)
        elapsed = time.monotonic() - t0
    finally:
        producer.close()
    watcher.stop_at = time.monotonic() + 30
    watcher.join(35)
    e2e = [watcher.seen[v] - t for v, t in sent.items() if v in watcher.seen]
    if len(e2e) != total:
        raise RuntimeError(f"{topic}: the consumer saw {len(e2e)} of {total} acknowledged records")
    req50, req99 = percentiles(request_latency)
    e2e50, e2e99 = percentiles(e2e)
    return {"records_per_s": total / elapsed, "req_p50": req50, "req_p99": req99,
            "e2e_p50": e2e50, "e2e_p99": e2e99, "records": total}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2000, help="one-record requests per run")
    ap.add_argument("--batches", type=int, default=100, help="batched requests per run")
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="200 records, 20 batches of 50")
    args = ap.parse_args(argv)
    if args.records < 1 or args.batches < 1 or args.batch_size < 1:
        ap.error("--records, --batches and --batch-size must be at least 1")
    if args.quick:
        args.records, args.batches, args.batch_size = 200, 20, 50
    print("produce throughput and end-to-end latency: 3 real brokers on an embedded ZooKeeper, "
          "1 partition, replication 3, one request in flight; all real (no simulation)",
          flush=True)
    print(f"  load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    workloads = (("single", args.records, 1), ("batch", args.batches, args.batch_size))
    results: dict[tuple[str, int], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="epochal-bench-produce-") as d:
        cluster = LocalCluster(d, brokers=3).start()
        try:
            for name, requests, size in workloads:
                for acks, label in ACKS:
                    topic = f"bench-{name}-{'all' if acks == -1 else acks}"
                    r = one_workload(cluster, topic, acks, requests, size)
                    results[(name, acks)] = r
                    print(f"  {name:6s} {label:8s}: {r['records']} records, "
                          f"{r['records_per_s']:8.0f} records/s, request p50 {r['req_p50']:.1f} ms "
                          f"p99 {r['req_p99']:.1f} ms, end-to-end p50 {r['e2e_p50']:.1f} ms "
                          f"p99 {r['e2e_p99']:.1f} ms", flush=True)
        finally:
            cluster.stop()
    print("\nresult (acks=all / acks=1 in the last column)")
    print(f"{'':40s}{'acks=1':>10s}{'acks=all':>10s}{'ratio':>8s}")
    for name, _requests, size in workloads:
        title = "1 record/request" if size == 1 else f"{size} records/request"
        for key, label, unit in (("records_per_s", "records/s", ""), ("req_p50", "request p50", " (ms)"),
                                 ("req_p99", "request p99", " (ms)"),
                                 ("e2e_p50", "end-to-end p50", " (ms)"),
                                 ("e2e_p99", "end-to-end p99", " (ms)")):
            a1, aall = results[(name, 1)][key], results[(name, -1)][key]
            fmt = ".0f" if key == "records_per_s" else ".1f"
            print(f"{title + ', ' + label + unit:40s}{a1:10{fmt}}{aall:10{fmt}}{aall / a1:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
