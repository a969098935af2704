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
Python workers), and with ``--master local-cluster[N,C,MB]`` (separate executor JVMs on this
machine, as on a cluster) the largest of one executor with its Python workers.  Figures: docs/benchmarks.md, "The search on Spark".
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.spark.session import spark_session
from model.config import NAMED, Config, named
from properties.checkers.bfs import SearchOptions
from properties.checkers.distributed import check_spark
from properties.checkers.native import check_native

EXECUTOR_MAIN = b"CoarseGrainedExecutorBackend"  # an executor JVM's main class (local-cluster, a cluster)


def _processes() -> tuple[dict[int, list[int]], dict[int, int]]:
    """Every process's children and resident bytes (read from /proc)."""
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
    return children, rss


def _subtree(root: int, children: dict[int, list[int]]) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _is_executor(pid: int) -> bool:
    try:
        return EXECUTOR_MAIN in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _tree_rss(root: int) -> tuple[int, int]:
    """Resident bytes of ``root`` and every process under it, and the largest of its executors'
    (an executor JVM with its Python workers; 0 in local mode, where the driver's JVM runs
    the tasks itself)."""
    children, rss = _processes()
    tree = _subtree(root, children)
    executors = [sum(rss.get(p, 0) for p in _subtree(pid, children)) for pid in tree if _is_executor(pid)]
    return sum(rss.get(p, 0) for p in tree), max(executors, default=0)


class PeakMemory:
    """The largest :func:`_tree_rss` of this process seen while running, sampled each second:
    ``peak`` the whole tree's, ``executor`` one executor's."""

    def __init__(self) -> None:
        self.peak = self.executor = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _take(self) -> None:
        tree, executor = _tree_rss(os.getpid())
        self.peak, self.executor = max(self.peak, tree), max(self.executor, executor)

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            self._take()

    def __enter__(self) -> PeakMemory:
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _run(name: str, label: str, search: Callable[[Config], Any], cfg: Config) -> tuple:
    """One search of ``cfg``, its row printed; (holds, states, transitions, depth, verdict)."""
    t0 = time.perf_counter()
    with PeakMemory() as memory:
        r = search(cfg)
    seconds = time.perf_counter() - t0
    verdict = r.violation.property if r.violation else ("holds" if r.complete else "inconclusive")
    print(f"{name:>8} {label:>30} {r.states:>10,} {r.transitions:>12,} {r.depth:>5} {verdict:>18} "
          f"{seconds:>8.1f} {r.states / seconds:>9,.0f} {memory.peak / 2**30:>8.2f} "
          f"{memory.executor / 2**30:>11.2f}", flush=True)
    return r.complete and r.violation is None, r.states, r.transitions, r.depth, verdict


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="*", choices=sorted(NAMED), default=["design", "kip320", "zombie"])
    ap.add_argument("--master", nargs="+", default=["local[*]"],
                    help="one Spark search per master, side by side (e.g. local[2] local-cluster[2,1,2048])")
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
    print(f"{'config':>8} {'search':>30} {'states':>10} {'transitions':>12} {'depth':>5} {'verdict':>18} "
          f"{'seconds':>8} {'states/s':>9} {'peak GB':>8} {'executor GB':>11}")
    configs = [named(name) if args.brokers is None else named(name, brokers=args.brokers) for name in args.config]
    rows: dict[str, list[tuple]] = {cfg.name: [] for cfg in configs}
    if not args.skip_native:
        for cfg in configs:
            rows[cfg.name].append(_run(cfg.name, "native", lambda c: check_native(c, options), cfg))
    for master in args.master:
        started = time.perf_counter()
        spark = spark_session(master, app="epochal-bench-spark-search")
        sc = spark.sparkContext
        print(f"Spark session ({master}, parallelism {sc.defaultParallelism}) in {time.perf_counter() - started:.1f} s",
              flush=True)
        for cfg in configs:
            rows[cfg.name].append(_run(cfg.name, f"spark {master}",
                                       lambda c, sc=sc: check_spark(c, sc, options, partitions=args.partitions), cfg))
        # a local-cluster's workers relaunch the executors the stop kills and log each refusal: quiet
        sc.setLogLevel("OFF")
        spark.stop()
    ok = True
    for name, found in rows.items():
        # a violation's counts depend on where in its level each search stopped: only the verdict
        same = all(r == found[0] if found[0][0] else r[3:] == found[0][3:] for r in found)
        ok &= same
        if not same:
            print(f"{name}: the searches disagree", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
