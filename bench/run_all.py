"""Run the failover and throughput benchmarks one after another, in one command.

    .venv/bin/python bench/run_all.py [--quick]

Benchmarks 1 (failover at scale, ``bench_failover_scale.py``), 3 (produce throughput and
latency, ``bench_produce.py``) and 4 (controller failover, ``bench_controller_failover.py``).
Each runs in its own process, so one's ZooKeeper, brokers and threads cannot disturb the
next one's timings; ``--quick`` is passed on to each (small sizes, for development).  Full
sizes take a few minutes on a 2-core machine.  Exits non-zero if any benchmark failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCHES = ("bench_failover_scale.py", "bench_produce.py", "bench_controller_failover.py")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for development")
    args = ap.parse_args(argv)
    here = Path(__file__).resolve().parent
    failed = []
    for name in BENCHES:
        print(f"=== {name}{' --quick' if args.quick else ''}", flush=True)
        t0 = time.monotonic()
        rc = subprocess.call([sys.executable, str(here / name), *(["--quick"] if args.quick else [])],
                             cwd=str(here.parent))
        print(f"=== {name}: exit {rc}, {time.monotonic() - t0:.0f} s\n", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
