"""What authentication costs (issue 22): the same workloads against an authenticated cluster
(the default) and one run ``--insecure``, side by side in one run.

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


def one_mode(insecure: bool, records: int, connections: int, failovers: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-auth-") as d:
        t0 = time.monotonic()
        cluster = LocalCluster(d, brokers=3, insecure=insecure, **SETTINGS).start()
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--failovers", type=int, default=3)
    args = ap.parse_args(argv)
    if min(args.records, args.connections, args.failovers) < 1:
        print("bench_auth: --records, --connections and --failovers must be at least 1", file=sys.stderr)
        return 2
    results = {name: one_mode(name == "insecure", args.records, args.connections, args.failovers)
               for name in ("authenticated", "insecure")}
    a, i = results["authenticated"], results["insecure"]

    def pair(values: Any) -> str:
        return " / ".join(f"{v:.2f}" for v in values)

    rows = [("", "authenticated", "--insecure", ""),
            ("cluster start (s)", f"{a['start_s']:.1f}", f"{i['start_s']:.1f}", ""),
            ("connect+metadata ms", pair(a["connect_ms"]), pair(i["connect_ms"]), "median / p99"),
            ("acks=all records/s", f"{a['produce'][0]:.0f}", f"{i['produce'][0]:.0f}", ""),
            ("acks=all latency ms", pair(a["produce"][1:]), pair(i["produce"][1:]), "median / p99"),
            ("failover to ack (s)", pair(a["failover_s"]), pair(i["failover_s"]), "each kill")]
    for name, x, y, note in rows:
        print(f"{name:22}{x:>20}{y:>20}   {note}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
