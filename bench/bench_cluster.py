"""Cluster benchmark: how long a 3-broker cluster takes to start, and to fail over a leader
and the controller after ``kill -9``, measured side by side over several rounds.

    .venv/bin/python bench/bench_cluster.py [--rounds 3] [--brokers 3]

Start: from launching the embedded ZooKeeper to every broker serving metadata.  Leader
failover: from the kill to a new leader being visible in metadata and an acks=all write
being acknowledged.  Controller failover: from the kill to another broker holding
/controller.  Session timeouts are the implementation's defaults for ``LocalCluster``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from impl.harness.cluster import LocalCluster
from impl.harness.recordings import TOPIC, controller_of, leader_of, wait_for_change
from impl.node.client import Admin, Producer


def one_round(brokers: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="epochal-bench-") as d:
        t0 = time.perf_counter()
        cluster = LocalCluster(d, brokers=brokers).start()
        started = time.perf_counter() - t0
        try:
            with Admin(cluster.bootstrap) as admin:
                admin.create_topic(TOPIC, partitions=1, replication_factor=brokers)
            producer = Producer(cluster.bootstrap, acks=-1)
            producer.send(TOPIC, "before", partition=0)
            old = leader_of(cluster)
            t0 = time.perf_counter()
            cluster.procs[old].kill()  # kill -9 without the harness's wait for session expiry
            wait_for_change(lambda: leader_of(cluster), old, "leader", timeout=60)
            producer.send(TOPIC, "after", partition=0)
            leader_failover = time.perf_counter() - t0
            producer.close()
            ctl = controller_of(cluster)
            t0 = time.perf_counter()
            cluster.procs[ctl].kill()
            wait_for_change(lambda: controller_of(cluster), ctl, "controller", timeout=60)
            controller_failover = time.perf_counter() - t0
        finally:
            cluster.stop()
    return {"start": started, "leader_failover": leader_failover, "controller_failover": controller_failover}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=3)
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.brokers < 2:
        ap.error("--rounds must be at least 1 and --brokers at least 2 (a failover needs a second broker)")
    rows = []
    for i in range(args.rounds):
        r = one_round(args.brokers)
        rows.append(r)
        print(f"round {i + 1}: start {r['start']:.2f} s, leader failover {r['leader_failover']:.2f} s, controller failover {r['controller_failover']:.2f} s", flush=True)
    for key in ("start", "leader_failover", "controller_failover"):
        values = [r[key] for r in rows]
        print(f"{key:20s} median {statistics.median(values):.2f} s  (min {min(values):.2f}, max {max(values):.2f}, {len(values)} rounds)")
    ratio = statistics.median(r["leader_failover"] for r in rows) / statistics.median(r["start"] for r in rows)
    print(f"leader failover / cluster start: x{ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
