"""The search on Spark against the compiled search on one machine, side by side in one run.

    python bench/bench_spark_search.py [--config kip320 ...] [--master local[*]] [--partitions N]

For each configuration: the compiled search (``check --native``) and the same search on Spark
(``check --spark``: ``properties.checkers.distributed``), their distinct states, transitions,
depth and verdict -- which must be equal, else exit 1 -- and their wall-clock seconds and
states per second.  On one machine Spark pays a few jobs a level (about a second each on 2
cores) that the compiled search does not: what it buys is a seen-set and levels that are
partitioned across executors and spill to disk, so a search whose seen-set outgrows one
machine's memory still finishes.  Figures: docs/benchmarks.md, "The search on Spark".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from model.config import NAMED, named
from properties.checkers.distributed import check_spark
from properties.checkers.native import check_native


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="*", choices=sorted(NAMED), default=["design", "kip320", "zombie"])
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--partitions", type=int, help="partitions of the level and the seen-set (default: Spark's parallelism)")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from conformance.spark.session import spark_session

    started = time.perf_counter()
    sc = spark_session(args.master, app="epochal-bench-spark-search").sparkContext
    print(f"Spark session ({args.master}, parallelism {sc.defaultParallelism}) in {time.perf_counter() - started:.1f} s")
    print(f"{'config':>8} {'search':>8} {'states':>10} {'transitions':>12} {'depth':>5} {'verdict':>18} {'seconds':>8} {'states/s':>9}")
    ok = True
    for name in args.config:
        cfg = named(name)
        rows = []
        for label, search in (("native", lambda c: check_native(c)),
                              ("spark", lambda c: check_spark(c, sc, partitions=args.partitions))):
            t0 = time.perf_counter()
            r = search(cfg)
            seconds = time.perf_counter() - t0
            verdict = r.violation.property if r.violation else ("holds" if r.complete else "inconclusive")
            rows.append((r.complete and r.violation is None, r.states, r.transitions, r.depth, verdict))
            print(f"{name:>8} {label:>8} {r.states:>10,} {r.transitions:>12,} {r.depth:>5} {verdict:>18} "
                  f"{seconds:>8.1f} {r.states / seconds:>9,.0f}", flush=True)
        same = rows[0] == rows[1] if rows[0][0] else (rows[0][3:] == rows[1][3:])
        ok &= same
        if not same:
            print(f"{name}: the two searches disagree", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
