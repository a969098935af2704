"""Failover at scale (seed 000 "end-to-end latency during a broker
failure"): a broker leading 10,000 partitions dies; how long until every affected partition
has a new leader written in ZooKeeper and serving, with one conditional ZooKeeper write per
partition versus batched ``multi`` writes -- side by side in one run, printed as a ratio.

    .venv/bin/python bench/bench_failover_scale.py [--partitions 10000] [--topics 10] [--quick]

Seed 000 estimates the unbatched path at 40 s (10K writes x 4 ms) and proposes ZooKeeper
``multi`` to batch them.  The two variants differ only in ``BrokerConfig``'s
``controller_batch_zk_writes``: batched, ``Controller._write_states`` commits up to 500
fenced conditional ``set_data`` per multi; unbatched, one per partition (each still fenced
by the controller epoch check, in the same single request -- one ZooKeeper round trip and one
transaction-log write per partition, as the seed counts them).

What is real and what is simulated: see ``bench/sim_brokers.py`` (real ZooKeeper and the
real Controller class; broker endpoints simulated; "serving" = the new leader has received
the LeaderAndISR naming it leader; times start when the victim's ZooKeeper session ends).
Each variant runs in its own chroot of one ZooKeeper server, after a small warm-up of both.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sim_brokers import REAL_VS_SIMULATED, broker_failover, median_of, quiet_kazoo

from impl.node.zk import EmbeddedZooKeeper

SEED_ESTIMATE_S = 40.0  # seed 000: 10K partitions x 4 ms per ZooKeeper write
SEED_MS_PER_WRITE = 4.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1, help="rounds per variant (median)")
    ap.add_argument("--quick", action="store_true", help="1,000 partitions, for development")
    args = ap.parse_args(argv)
    if args.partitions < 1 or args.topics < 1 or args.rounds < 1 or args.topics > args.partitions:
        ap.error("--partitions, --topics and --rounds must be at least 1, and --topics at most --partitions")
    if args.quick:
        args.partitions = min(args.partitions, 1_000)
    quiet_kazoo()
    print(f"failover at scale: {args.partitions} partitions in {args.topics} topics, "
          f"all led by broker 1 (replicas 3), broker 1 dies", flush=True)
    print(f"  {REAL_VS_SIMULATED}", flush=True)
    print(f"  load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    rows: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="epochal-bench-failover-") as d, \
            EmbeddedZooKeeper(data_dir=Path(d) / "zookeeper") as zk:
        for batched in (True, False):  # warm-up: JIT of the ZooKeeper server, imports
            broker_failover(zk.hosts, 200, 2, batched, Path(d) / f"warm-{batched}")
        for r in range(args.rounds):
            for batched in (False, True):
                t = time.monotonic()
                row = broker_failover(zk.hosts, args.partitions, args.topics, batched,
                                      Path(d) / f"run-{r}-{batched}")
                bad = [k for k, (leader, epoch, isr, _v) in row["end_state"].items()
                       if leader not in (2, 3) or epoch != 1 or 1 in isr]
                if bad or row["written"] != args.partitions:
                    print(f"  WRONG end state: {len(bad)} partitions, {row['written']} written")
                    return 1
                rows[batched].append(row)
                name = "batched multi " if batched else "per-partition "
                print(f"  round {r + 1} {name}: {row['transactions']:5d} ZooKeeper transactions, "
                      f"writes {row['writes_start']:7.3f}-{row['writes_end']:7.3f} s, all "
                      f"written in ZooKeeper {row['zk_written']:7.3f} s, all serving "
                      f"{row['serving']:7.3f} s  (scenario {time.monotonic() - t:.0f} s)",
                      flush=True)
    n = args.partitions
    un, ba = rows[False], rows[True]
    print(f"\nresult ({n} partitions; medians of {args.rounds} round(s); "
          "ZooKeeper end state verified: leader 2 or 3, leader_epoch 1, broker 1 out of every ISR)")
    print(f"{'(seconds from the failure)':28s}{'per-partition':>15s}{'batched multi':>15s}"
          f"{'ratio':>9s}")
    for row in un + ba:
        row["write_phase"] = row["writes_end"] - row["writes_start"]
    for key, label in (("writes_start", "detected, states read"),
                       ("write_phase", "ZooKeeper write phase"),
                       ("zk_written", "all written in ZooKeeper"), ("serving", "all serving")):
        u, b = median_of(un, key), median_of(ba, key)
        print(f"{label:28s}{u:13.3f} s{b:13.3f} s{u / b:8.1f}x")
    print(f"{'ZooKeeper transactions':28s}{median_of(un, 'transactions'):15.0f}"
          f"{median_of(ba, 'transactions'):15.0f}")
    u_phase = median_of(un, "write_phase")
    print(f"per-partition write, measured: {1000 * u_phase / n:.2f} ms each "
          f"(seed 000 assumed {SEED_MS_PER_WRITE:.0f} ms; field notes ~2 ms)")
    u, b = median_of(un, "serving"), median_of(ba, "serving")
    if n == 10_000:
        print(f"seed 000 estimate, 10,000 partitions unbatched: {SEED_ESTIMATE_S:.0f} s; measured "
              f"unbatched {u:.1f} s (estimate / measured x{SEED_ESTIMATE_S / u:.1f}), batched "
              f"{b:.1f} s (estimate / batched x{SEED_ESTIMATE_S / b:.0f})")
    else:
        print(f"seed 000 estimate is for 10,000 partitions ({SEED_ESTIMATE_S:.0f} s unbatched); "
              f"this run has {n}: linear scaling would give unbatched {u * 10_000 / n:.1f} s, "
              f"batched {b * 10_000 / n:.1f} s (run without --quick to measure it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
