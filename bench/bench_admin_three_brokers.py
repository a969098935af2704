"""The admin configurations at kip320's three-broker bounds, searched natively, one at a time.

    python bench/bench_admin_three_brokers.py [--knobs deletions,reassignments,...]
                                              [--max-seconds S] [--python-seconds S]
                                              [--workers N] [--no-reduction] [--max-depth D]

For each admin knob (set to 1) on ``model.three_brokers.three_brokers("kip320")`` (3 brokers,
2 records, leader epoch <= 3, 2 crashes): the compiled search (``check --native``) in a
fresh process, bounded by ``--max-seconds`` of wall time; its states, transitions, depth,
verdict (holds, a violation, or what stopped it), the CPU seconds and peak resident memory
of the search's own process (``RUSAGE_CHILDREN`` of the process that ran it), and states per
CPU-second.  With ``--python-seconds`` the Python checker (``properties.checkers.bfs``) runs
the same configuration in a fresh process too, bounded by that wall time: its figures go
beside the native ones, and where it ends within its bound its states and transitions must
be the native search's (else exit 1) -- with ``--max-depth`` both stop at that many steps,
so a Python search that ends there is compared state for state.  Run it under ``nice``: the searches take a core each
for as long as they are allowed.  Figures: docs/benchmarks.md, "Three-broker searches".
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import time
from typing import Any

from model.config import Config
from model.three_brokers import three_brokers
from properties.checkers.bfs import Result, SearchOptions, check
from properties.checkers.native import check_native

KNOBS = ("preferred_elections", "max_shutdowns", "deletions", "reassignments", "partition_changes", "max_expiries")
"""Each admin action's knob (and the session expiry of a running broker, the failure that
came with reassignment)."""


def _verdict(r: Result) -> str:
    if r.violation is not None:
        return "violation: " + r.violation.property
    if r.complete:
        return "holds"
    return f"stopped by {r.stopped_by} (no violation within {r.checked_depth} steps)"


def _measured(conn: Any, cfg: Config, native: bool, options: SearchOptions) -> None:
    """In a fresh process: one search, and its CPU time and peak memory -- the native
    search's own process (a child of this one) or this process's (the Python checker)."""
    who = resource.RUSAGE_CHILDREN if native else resource.RUSAGE_SELF
    before = resource.getrusage(who)
    t0 = time.perf_counter()
    r = (check_native if native else check)(cfg, options)
    wall = time.perf_counter() - t0
    after = resource.getrusage(who)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    conn.send({"states": r.states, "transitions": r.transitions, "depth": r.depth, "verdict": _verdict(r),
               "complete": r.complete, "wall": wall, "cpu": cpu, "rss_mb": after.ru_maxrss / 1024})
    conn.close()


def run(cfg: Config, native: bool, options: SearchOptions) -> dict:
    ctx = mp.get_context("fork")
    theirs, ours = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_measured, args=(ours, cfg, native, options))
    proc.start()
    row = theirs.recv()
    proc.join()
    return row


def _line(label: str, row: dict) -> str:
    rate = row["states"] / row["cpu"] if row["cpu"] else 0.0
    return (f"| {label} | {row['states']:,} | {row['transitions']:,} | {row['depth']} | {row['verdict']} | "
            f"{row['cpu']:.1f} | {row['wall']:.1f} | {rate:,.0f} | {row['rss_mb']:,.0f} MB |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--knobs", default=",".join(KNOBS), help=f"comma list of {', '.join(KNOBS)}")
    ap.add_argument("--max-seconds", type=float, default=600.0, help="wall-time bound of each native search")
    ap.add_argument("--python-seconds", type=float, default=0.0, help="run the Python checker too, this long (0: not)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-reduction", action="store_true", help="symmetry only (default: with the partial-order reduction)")
    ap.add_argument("--max-depth", type=int, help="stop both searches after this many steps")
    args = ap.parse_args(argv)
    knobs = [k for k in args.knobs.split(",") if k]
    bad = [k for k in knobs if k not in KNOBS]
    if bad:
        print(f"bench_admin_three_brokers: unknown knob {bad[0]!r} (one of {', '.join(KNOBS)})", file=sys.stderr)
        return 2
    reduction = not args.no_reduction
    print("| search | states | transitions | depth | verdict | CPU s | wall s | states/CPU-s | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    differ = False
    for knob in knobs:
        cfg = three_brokers("kip320", **{knob: 1})
        label = (f"kip320, 3 brokers, {knob} 1" + ("" if reduction else ", no reduction")
                 + (f", {args.max_depth} steps" if args.max_depth else ""))
        bounds = {"reduction": reduction, "max_depth": args.max_depth}
        ours = run(cfg, True, SearchOptions(workers=args.workers, max_seconds=args.max_seconds, **bounds))
        print(_line(label + ", native", ours), flush=True)
        if args.python_seconds > 0:
            theirs = run(cfg, False, SearchOptions(workers=1, max_seconds=args.python_seconds, **bounds))
            print(_line(label + ", Python", theirs), flush=True)
            ended = theirs["verdict"] == ours["verdict"] and "max_seconds" not in theirs["verdict"]
            if ended and (theirs["states"], theirs["transitions"]) != (ours["states"], ours["transitions"]):
                print(f"bench_admin_three_brokers: {knob}: the two searches differ", file=sys.stderr)
                differ = True
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
