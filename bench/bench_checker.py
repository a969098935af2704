"""Exhaustive-checker benchmark: every named configuration at its default bounds, with and
without symmetry reduction and with the partial-order reduction, measured side by side in
one run.

    .venv/bin/python bench/bench_checker.py [--configs design,unclean,...] [--workers 2]
                                            [--budget-states N] [--modes sym,nosym,por]
    .venv/bin/python bench/bench_checker.py --three-brokers --configs kip320 --modes por,sym
    .venv/bin/python bench/bench_checker.py --three-brokers --configs kip320 --modes por --workers 1,2 --max-depth 17
    .venv/bin/python bench/bench_checker.py --three-brokers --configs kip320 --modes por,packed --workers 2 --max-depth 21
    .venv/bin/python bench/bench_checker.py --three-brokers --configs kip320 --modes por,native --workers 1,2 --max-depth 20

Prints distinct states, transitions, depth, wall time and states/s per run, and the ratios
of states and time of the plain symmetry-reduced search to the other modes.  Modes: ``sym``
symmetry reduction (the checker's default), ``nosym`` none, ``por`` symmetry plus the
partial-order reduction of ``properties.checkers.reduction`` (whose state counts are those of the reduced
graph), ``packed`` the same with every level held pickled from the start (what the
checker does once a search has used ``PACK_SHARE`` of its memory budget), ``native`` and
``natsym`` the compiled search of ``properties.checkers.native`` (``epochal check --native``) as ``por``
and as ``sym`` -- the same states and transitions, so the ratio line compares their times
(``native/por``, ``natsym/sym``).  Each run goes
in a fresh process, so the memory column (the most the search used, workers included) is
its own.  ``--three-brokers`` runs at ``model.three_brokers.THREE_BROKERS`` (3 brokers, 2
records, max epoch 3, 2 crashes), where Kafka's later bugs live.  Runs that would exceed
``--budget-states`` distinct states stop there and are marked INCOMPLETE (so the benchmark
always ends); figures for complete runs are exact.  ``--max-depth D`` bounds every run at D
steps instead (the same states for every worker count, so their times compare);
``--workers 1,2`` runs each mode with each worker count and prints the speed-up.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time

import properties.checkers.bfs as checker
from model.config import NAMED, named
from model.three_brokers import THREE_BROKERS
from properties.checkers.bfs import SearchOptions, check
from properties.checkers.budget import size_text
from properties.checkers.native import check_native

# mode -> (symmetry, reduction, levels packed from the start)
MODES = {"sym": (True, False, False), "nosym": (False, False, False), "por": (True, True, False), "packed": (True, True, True), "native": (True, True, False), "natsym": (True, False, False)}
NATIVE = {"native": "por", "natsym": "sym"}  # a native mode -> the Python mode it is compared with
NO_LIMIT = 1 << 50  # a memory "budget" no search reaches: it only makes the search measure itself


def _measured(conn, cfg, mode: str, workers: int, budget: int | None, max_depth: int | None) -> None:
    """In a fresh process: one search; what the table shows of it is sent back (memory as
    the checker measured it)."""
    symmetry, reduction, packed = MODES[mode]
    if packed:
        checker.PACK_SHARE = 0.0
    search = check_native if mode in NATIVE else check
    t0 = time.perf_counter()
    r = search(cfg, SearchOptions(symmetry=symmetry, workers=workers, max_states=budget, reduction=reduction, max_depth=max_depth, max_memory=NO_LIMIT))
    wall = time.perf_counter() - t0
    if r.violation:
        verdict = "violation: " + r.violation.property
    elif r.stopped_by == "max_depth":
        verdict = f"none within {r.depth} steps"
    else:
        verdict = "holds" if r.complete else "INCOMPLETE"
    conn.send({"states": r.states, "transitions": r.transitions, "depth": r.depth, "seconds": wall, "memory": r.peak_memory, "verdict": verdict})
    conn.close()


def run_one(name: str, mode: str, workers: int, budget: int | None, overrides: dict, max_depth: int | None = None) -> dict:
    cfg = named(name, **overrides)
    ctx = mp.get_context("fork")
    theirs, ours = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_measured, args=(ours, cfg, mode, workers, budget, max_depth))
    proc.start()
    row = theirs.recv()
    proc.join()
    return {"config": cfg.describe(), "name": name, "mode": mode, "rate": row["states"] / row["seconds"] if row["seconds"] else 0.0, **row}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=",".join(NAMED))
    ap.add_argument("--workers", default="1", help="worker count, or a comma list to compare (e.g. 1,2)")
    ap.add_argument("--max-depth", type=int, help="stop every run after this many steps")
    ap.add_argument("--budget-states", type=int, default=3_000_000)
    ap.add_argument("--modes", default="sym,nosym,por", help="comma list of sym, nosym, por, packed, native, natsym (default: sym,nosym,por)")
    ap.add_argument("--brokers", type=int)
    ap.add_argument("--max-crashes", type=int)
    ap.add_argument("--three-brokers", action="store_true", help="the three-broker bounds of model.three_brokers")
    args = ap.parse_args(argv)
    unknown = [n for n in args.configs.split(",") if n not in NAMED]
    if unknown:
        ap.error(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(NAMED)}")
    modes = args.modes.split(",")
    if not modes or any(m not in MODES for m in modes):
        ap.error(f"--modes takes a comma list of {', '.join(MODES)}")
    try:
        worker_counts = [int(w) for w in args.workers.split(",")]
    except ValueError:
        ap.error("--workers takes a number or a comma list of numbers")
    if any(w < 1 for w in worker_counts):
        ap.error("--workers must be at least 1")
    overrides = dict(THREE_BROKERS) if args.three_brokers else {}
    overrides.update({k: v for k, v in {"brokers": args.brokers, "max_crashes": args.max_crashes}.items() if v is not None})
    print(f"{'config':8s} {'mode':6s} {'wk':>2s} {'states':>10s} {'transitions':>12s} {'depth':>5s} {'wall s':>8s} {'states/s':>9s} {'memory':>8s}  verdict")
    for name in args.configs.split(","):
        rows = {}
        speedups = []
        for mode in modes:
            for workers in worker_counts:
                row = run_one(name, mode, workers, args.budget_states, overrides, args.max_depth)
                if workers == worker_counts[0]:
                    rows[mode] = row
                elif row["states"] == rows[mode]["states"]:
                    speedups.append(f"{mode} {workers} workers/{worker_counts[0]}: time x{row['seconds'] / max(rows[mode]['seconds'], 1e-9):.2f}")
                print(f"{name:8s} {mode:6s} {workers:>2d} {row['states']:>10,} {row['transitions']:>12,} {row['depth']:>5d} {row['seconds']:>8.1f} {row['rate']:>9,.0f} {size_text(row['memory']):>8s}  {row['verdict']}", flush=True)
        ratios = list(speedups)
        base = rows.get("sym")
        for mode, row in rows.items():
            if base is None or mode == "sym" or mode in NATIVE:
                continue
            if "INCOMPLETE" in (base["verdict"], row["verdict"]):  # a capped count is no measurement
                ratios.append(f"{mode}/sym: n/a (a run stopped at --budget-states)")
            else:
                ratios.append(f"{mode}/sym: states x{row['states'] / max(base['states'], 1):.2f}, time x{row['seconds'] / max(base['seconds'], 1e-9):.2f}")
        if "packed" in rows and "por" in rows and rows["packed"]["states"] == rows["por"]["states"]:
            por, packed = rows["por"], rows["packed"]
            ratios.append(f"packed/por: memory x{packed['memory'] / max(por['memory'], 1):.2f}, time x{packed['seconds'] / max(por['seconds'], 1e-9):.2f}")
        for mode, python in NATIVE.items():
            if mode in rows and python in rows:
                n, p = rows[mode], rows[python]
                if (n["states"], n["transitions"]) != (p["states"], p["transitions"]):
                    ratios.append(f"{mode}/{python}: DIFFERENT state spaces ({n['states']:,} against {p['states']:,} states)")
                else:
                    ratios.append(f"{mode}/{python}: same states and transitions, time x{n['seconds'] / max(p['seconds'], 1e-9):.3f} (x{p['seconds'] / max(n['seconds'], 1e-9):.0f} faster)")
        config = next(iter(rows.values()))["config"]
        print(f"{'':8s} {'; '.join(ratios) or 'no ratio'}   [{config}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
