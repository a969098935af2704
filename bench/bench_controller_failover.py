"""Controller failover (seed 000's benchmarks): time from the controller's death to the new
controller having sent LeaderAndISR to every broker, for 1,000 and 10,000 partitions, side
by side in one run, with the ratio between the two sizes.

    .venv/bin/python bench/bench_controller_failover.py [--sizes 1000,10000] [--quick]

Two real controllers (the :class:`impl.node.controller.Controller` class, each on its own
ZooKeeper session, in this process) and three simulated brokers replicating every partition
(``bench/sim_brokers.py``: real ZooKeeper, simulated endpoints that decode and acknowledge
every request).  Controller A starts and tells the brokers everything (seed 000 D); B stands
by.  A's session ends (``/controller`` vanishes); B wins the election, reads every
leaderAndISR znode, sends each broker one LeaderAndISR (INIT) with all its partitions
(D step 4), then UpdateMetadata, then runs ``on_broker_change`` and the admin scans (D 5-9).

Printed, from the moment A's session ended: B elected (``/controller`` and
``/controller_epoch`` written), every broker holding B's LeaderAndISR for all its partitions,
every broker holding B's UpdateMetadata, and B idle again (all of D done).  A ``kill -9`` of
a real controller adds its ZooKeeper session timeout (``zk_session_timeout_s``, 6 s by
default) before all of these; ``bench/bench_cluster.py`` measures that path on real brokers.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from sim_brokers import REAL_VS_SIMULATED, controller_failover, median_of, quiet_kazoo

from impl.node.zk import EmbeddedZooKeeper

COLUMNS = (("elected", "new controller elected"),
           ("leader_and_isr", "LeaderAndISR at all brokers"),
           ("update_metadata", "UpdateMetadata at all brokers"),
           ("idle", "failover complete (D 3-9)"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000", help="partition counts, comma-separated")
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1, help="rounds per size (median)")
    ap.add_argument("--quick", action="store_true", help="sizes 100 and 1,000, for development")
    args = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if any(n < args.topics for n in sizes) or args.topics < 1 or args.rounds < 1:
        ap.error("every size must be at least --topics, and --topics and --rounds at least 1")
    if args.quick:
        sizes = [100, 1_000]
    quiet_kazoo()
    print(f"controller failover: 3 brokers, replication 3, {args.topics} topics; "
          f"sizes {', '.join(map(str, sizes))} partitions", flush=True)
    print(f"  {REAL_VS_SIMULATED}", flush=True)
    print(f"  load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    rows: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory(prefix="epochal-bench-ctl-") as d, \
            EmbeddedZooKeeper(data_dir=Path(d) / "zookeeper") as zk:
        controller_failover(zk.hosts, 200, 2, Path(d) / "warm")  # warm-up, not reported
        for r in range(args.rounds):
            for n in sizes:
                row = controller_failover(zk.hosts, n, args.topics, Path(d) / f"run-{r}-{n}")
                rows[n].append(row)
                print(f"  round {r + 1}, {n:6d} partitions: " + ", ".join(
                    f"{label} {row[key]:.3f} s" for key, label in COLUMNS), flush=True)
    print(f"\nresult (seconds from the old controller's session ending; medians of "
          f"{args.rounds} round(s))")
    header = "".join(f"{n:>12d}" for n in sizes)
    ratio_head = f"{'ratio':>9s}" if len(sizes) > 1 else ""
    print(f"{'partitions':32s}{header}{ratio_head}")
    for key, label in COLUMNS:
        values = [median_of(rows[n], key) for n in sizes]
        cells = "".join(f"{v:10.3f} s" for v in values)
        ratio = f"{values[-1] / values[0]:8.1f}x" if len(sizes) > 1 and values[0] > 0 else ""
        print(f"{label:32s}{cells}{ratio}")
    if len(sizes) > 1:
        print(f"(ratio: {sizes[-1]} partitions over {sizes[0]}; "
              f"{sizes[-1] / sizes[0]:.0f}x the partitions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
