"""What authentication costs: the same workloads against an authenticated cluster
(the default), one with TLS as well (``--tls``) and one run ``--insecure``, side by side in
one run.

    .venv/bin/python bench/bench_auth.py [--records 1000] [--connections 200] [--failovers 3]

For each mode, on three real brokers (:class:`impl.harness.cluster.LocalCluster`, default
settings but a 2 s ZooKeeper session so failovers take seconds):

* **start** -- cluster start until every broker answers metadata naming a controller;
* **connect** -- a new connection and its first metadata answer (with authentication: the
  SASL handshake and the two SCRAM round trips first), median and p99 of ``--connections``;
* **produce** -- ``--records`` one-record acks=all requests on one connection, replication 3:
  records/s and the median and p99 latency (authentication is per connection, so this is
  the steady-state cost: none expected);
* **failover** -- kill -9 the partition's leader, then time until an acks=all write is
  acknowledged again (a new producer's connections, so re-authentication is included),
  ``--failovers`` times.

``--alternated`` measures only the steady-state request rate, with less noise: one broker,
acks=1, ``--records`` requests on one connection, the modes run authenticated, insecure,
insecure, authenticated.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from typing import Any

from impl.harness.cluster import LocalCluster
from impl.node import zk as zkl
from impl.node.client import Admin, Producer
from impl.node.wire import ApiKey, BlockingConnection

SETTINGS = {"zk_session_timeout_s": 2.0, "replica_lag_time_ms": 2000}


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def one_mode(insecure: bool, tls: bool, records: int, connections: int,
             failovers: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-auth-") as d:
        t0 = time.monotonic()
        cluster = LocalCluster(d, brokers=3, insecure=insecure, tls=tls, **SETTINGS).start()
        out["start_s"] = time.monotonic() - t0
        try:
            lat = []
            for _ in range(connections):
                t = time.perf_counter()
                conn = BlockingConnection(*cluster.endpoint(0), timeout=5)
                conn.send(ApiKey.METADATA, {})
                lat.append(time.perf_counter() - t)
                conn.close()
            out["connect_ms"] = (statistics.median(lat) * 1000, p(lat, 0.99) * 1000)
            with Admin(cluster.bootstrap) as admin:
                admin.create_topic("bench", partitions=1, replication_factor=3)
            lat = []
            with Producer(cluster.bootstrap, acks=-1) as producer:
                producer.send("bench", "warm-up", partition=0)
                t_all = time.perf_counter()
                for i in range(records):
                    t = time.perf_counter()
                    producer.send("bench", f"r{i}", partition=0)
                    lat.append(time.perf_counter() - t)
                elapsed = time.perf_counter() - t_all
            out["produce"] = (records / elapsed, statistics.median(lat) * 1000, p(lat, 0.99) * 1000)
            recovery = []
            zk = cluster.zk_client()
            for _ in range(failovers):
                leader = zkl.LeaderAndIsr.from_json(zk.get(zkl.leader_and_isr_path("bench", 0))[0]).leader
                t = time.monotonic()
                cluster.kill(leader)
                with Producer(cluster.bootstrap, acks=-1) as producer:
                    producer.send("bench", "after-failover", partition=0)
                recovery.append(time.monotonic() - t)
                cluster.restart(leader)
                cluster.wait_ready(60)
                time.sleep(3)  # back in the ISR before the next kill
            out["failover_s"] = recovery
            zk.stop()
        finally:
            cluster.stop()
    return out


def alternated(records: int) -> dict[str, list[float]]:
    """Requests/s of acks=1 produce on one broker, per mode, in the order A, I, I, A."""
    rates: dict[str, list[float]] = {"authenticated": [], "--insecure": []}
    for insecure in (False, True, True, False):
        with tempfile.TemporaryDirectory(prefix="bench-auth-") as d:
            cluster = LocalCluster(d, brokers=1, insecure=insecure).start()
            try:
                with Admin(cluster.bootstrap) as admin:
                    admin.create_topic("bench", partitions=1, replication_factor=1)
                with Producer(cluster.bootstrap, acks=1) as producer:
                    producer.send("bench", "warm-up", partition=0)
                    t = time.perf_counter()
                    for i in range(records):
                        producer.send("bench", f"r{i}", partition=0)
                    rate = records / (time.perf_counter() - t)
            finally:
                cluster.stop()
        rates["--insecure" if insecure else "authenticated"].append(rate)
    return rates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--failovers", type=int, default=3)
    ap.add_argument("--alternated", action="store_true",
                    help="only the steady-state rate: one broker, acks=1, modes alternated")
    args = ap.parse_args(argv)
    if min(args.records, args.connections, args.failovers) < 1:
        print("bench_auth: --records, --connections and --failovers must be at least 1", file=sys.stderr)
        return 2
    if args.alternated:
        for mode, rates in alternated(args.records).items():
            print(f"{mode:16} acks=1 requests/s: " + ", ".join(f"{r:.0f}" for r in rates))
        return 0
    modes = {"authenticated": (False, False), "+ TLS": (False, True), "--insecure": (True, False)}
    results = {name: one_mode(*flags, args.records, args.connections, args.failovers)
               for name, flags in modes.items()}
    def pair(values: Any) -> str:
        return " / ".join(f"{v:.2f}" for v in values)

    r = list(results.values())
    rows = [("", *modes, ""),
            ("cluster start (s)", *(f"{m['start_s']:.1f}" for m in r), ""),
            ("connect+metadata ms", *(pair(m["connect_ms"]) for m in r), "median / p99"),
            ("acks=all records/s", *(f"{m['produce'][0]:.0f}" for m in r), ""),
            ("acks=all latency ms", *(pair(m["produce"][1:]) for m in r), "median / p99"),
            ("failover to ack (s)", *(pair(m["failover_s"]) for m in r), "each kill")]
    for name, x, y, z, note in rows:
        print(f"{name:22}{x:>20}{y:>20}{z:>20}   {note}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
