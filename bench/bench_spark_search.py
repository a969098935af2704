"""The search on Spark against the compiled search on one machine, side by side in one run.

    python bench/bench_spark_search.py [--config kip320 ...] [--brokers N] [--reduction]
                                       [--max-depth N] [--master local[*]] [--partitions N]

For each configuration: the compiled search (``check --native``) and the same search on Spark
(``check --spark``: ``properties.checkers.distributed``), their distinct states, transitions,
depth and verdict -- which must be equal, else exit 1 -- and their wall-clock seconds and
states per second.  On one machine Spark pays a few jobs a level (about a second each on 2
cores) that the compiled search does not: what it buys is a seen-set and levels that are
partitioned across executors and spill to disk, so a search whose seen-set outgrows one
machine's memory still finishes.  Beside the time, the peak resident memory of the process
tree the search ran in (the driver, its JVM -- in local mode the executor too -- and the
Python workers).  Figures: docs/benchmarks.md, "The search on Spark".
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from model.config import NAMED, named
from properties.checkers.bfs import SearchOptions
from properties.checkers.distributed import check_spark
from properties.checkers.native import check_native


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process under it (read from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue  # gone meanwhile
        pid = int(status.parent.name)
        children.setdefault(int(fields["PPid"]), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


class PeakMemory:
    """The largest :func:`_tree_rss` of this process seen while running, sampled each second."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            self.peak = max(self.peak, _tree_rss(os.getpid()))

    def __enter__(self) -> PeakMemory:
        self.peak = _tree_rss(os.getpid())
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="*", choices=sorted(NAMED), default=["design", "kip320", "zombie"])
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--partitions", type=int, help="partitions of the level and the seen-set (default: Spark's parallelism)")
    ap.add_argument("--brokers", type=int, help="the configurations' bounds at N brokers (model.three_brokers at 3)")
    ap.add_argument("--reduction", action="store_true", help="partial-order reduction, as check --reduction")
    ap.add_argument("--max-depth", type=int, help="stop both searches after this many levels")
    ap.add_argument("--skip-native", action="store_true", help="the Spark search only (its counts then unchecked)")
    args = ap.parse_args(argv)
    if (args.brokers is not None and args.brokers < 1) or (args.max_depth is not None and args.max_depth < 1):
        ap.error("--brokers and --max-depth must be positive")
    options = SearchOptions(reduction=args.reduction, max_depth=args.max_depth,
                            progress=lambda line: print(line, file=sys.stderr, flush=True))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from conformance.spark.session import spark_session

    started = time.perf_counter()
    sc = spark_session(args.master, app="epochal-bench-spark-search").sparkContext
    print(f"Spark session ({args.master}, parallelism {sc.defaultParallelism}) in {time.perf_counter() - started:.1f} s")
    print(f"{'config':>8} {'search':>8} {'states':>10} {'transitions':>12} {'depth':>5} {'verdict':>18} "
          f"{'seconds':>8} {'states/s':>9} {'peak GB':>8}")
    ok = True
    for name in args.config:
        cfg = named(name) if args.brokers is None else named(name, brokers=args.brokers)
        rows = []
        searches = [("native", lambda c: check_native(c, options)),
                    ("spark", lambda c: check_spark(c, sc, options, partitions=args.partitions))]
        for label, search in searches[1:] if args.skip_native else searches:
            t0 = time.perf_counter()
            with PeakMemory() as memory:
                r = search(cfg)
            seconds = time.perf_counter() - t0
            verdict = r.violation.property if r.violation else ("holds" if r.complete else "inconclusive")
            rows.append((r.complete and r.violation is None, r.states, r.transitions, r.depth, verdict))
            print(f"{name:>8} {label:>8} {r.states:>10,} {r.transitions:>12,} {r.depth:>5} {verdict:>18} "
                  f"{seconds:>8.1f} {r.states / seconds:>9,.0f} {memory.peak / 2**30:>8.2f}", flush=True)
        if len(rows) < 2:
            continue
        same = rows[0] == rows[1] if rows[0][0] else (rows[0][3:] == rows[1][3:])
        ok &= same
        if not same:
            print(f"{name}: the two searches disagree", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
