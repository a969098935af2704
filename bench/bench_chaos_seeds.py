"""The chaos seeds too long for CI, side by side: each seed's minute of faults against a real
cluster, and the five-broker run with reassignments.

    python bench/bench_chaos_seeds.py [--seeds 1 2 3 4 8 13] [--duration 60] [--five-brokers]

CI runs short seeded runs (tests/impl/harness/test_chaos.py: 12 s each) and one ``--admin`` run
(tests/impl/harness/test_chaos_admin.py); this runs the minute-long ones (seed 3 once caught a fault
recorded before the step it froze: impl.harness.cluster.stop_then_observe), one ``epochal chaos`` process each, and
prints one row per run: writes acknowledged, lost, duplicated, trace groups conforming, and
the wall time.  Exit 1 if any run failed.  Figures: docs/benchmarks.md, "Chaos seeds".
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(seed: int, duration: float, brokers: int) -> tuple[dict, float]:
    with tempfile.TemporaryDirectory(prefix=f"chaos-{seed}-") as out:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "chaos", "--seed", str(seed),
                               "--duration", str(duration), "--brokers", str(brokers), "--out", out + "/run",
                               "--json"], capture_output=True, text=True, cwd=ROOT, timeout=1800)
        seconds = time.perf_counter() - t0
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = {"exit_code": proc.returncode, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return report, seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 3, 4, 8, 13])
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--five-brokers", action="store_true", help="also seed 11 with five brokers and reassignments")
    args = ap.parse_args(argv)
    runs = [(s, 3) for s in args.seeds] + ([(11, 5)] if args.five_brokers else [])
    print(f"{'seed':>4} {'brokers':>7} {'acked':>7} {'lost':>5} {'dup':>4} {'conforming':>11} {'seconds':>8}  verdict")
    failed = False
    for seed, brokers in runs:
        report, seconds = run(seed, args.duration, brokers)
        v = report.get("writes") or {}
        c = report.get("conformance") or {}
        groups = f"{c.get('conforming', '?')}/{c.get('groups', '?')}"
        ok = report.get("exit_code") == 0
        failed |= not ok
        print(f"{seed:>4} {brokers:>7} {v.get('acknowledged', '?'):>7} {v.get('lost', '?'):>5} "
              f"{v.get('duplicated', '?'):>4} {groups:>11} {seconds:>8.0f}  {'PASS' if ok else report.get('error', 'FAIL')}",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
