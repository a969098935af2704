"""The whole-space runs too long for CI: every test marked ``whole_space``, with its time.

    python bench/bench_whole_space.py [--workers 2] [--list] [-k EXPRESSION]

These hold a second rendering of the model's rules to the model on *every* state, where CI
holds it on a sample:

* the compiled search's expansion of every reachable state, against the Python model's
  (``tests/properties/test_native.py``; CI: every fifth state);
* the z3 encoding's successors of 300 sampled states per configuration, against the
  model's (``tests/properties/test_symbolic.py``; CI: 40 states of design and kip320);
* the unreduced three-broker kip320 exhaustion, 38 M states against its pinned count
  (``tests/properties/test_history.py``; CI: the reduced space's 19.5 M states).

It runs them with pytest (``-m whole_space --run-whole-space``) across ``--workers`` cores
and prints one row per test: outcome and seconds.  Exit 1 if any failed, 2 for bad
arguments.  Figures: docs/benchmarks.md, "Whole-space runs".
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELECT = ["-m", "whole_space", "--run-whole-space", "-p", "no:cacheprovider"]


def collect(keyword: str | None) -> list[str]:
    """The test ids the run would take (``--list``)."""
    cmd = [sys.executable, "-m", "pytest", *SELECT, "--collect-only", "-q", "-n", "0", "tests"]
    if keyword:
        cmd += ["-k", keyword]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    return [line for line in proc.stdout.splitlines() if "::" in line]


def run(workers: int, keyword: str | None) -> tuple[list[tuple[str, str, float]], float]:
    """Run the marked tests once; each test's (id, outcome, seconds) and the wall time."""
    with tempfile.TemporaryDirectory(prefix="whole-space-") as tmp:
        xml = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", *SELECT, "-q", "-n", str(workers),
               f"--junitxml={xml}", "tests"]
        if keyword:
            cmd += ["-k", keyword]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, timeout=4 * 3600)
        wall = time.perf_counter() - t0
        if not xml.exists():
            raise SystemExit(f"bench_whole_space: pytest exited {proc.returncode} before any test ran")
        rows = []
        for case in ET.parse(xml).getroot().iter("testcase"):
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                elif child.tag == "skipped":
                    outcome = "skipped"
            name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            rows.append((name, outcome, float(case.get("time", 0.0))))
    return rows, wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (default 2)")
    ap.add_argument("--list", action="store_true", help="print the tests it would run, and stop")
    ap.add_argument("-k", dest="keyword", help="only the tests pytest's -k EXPRESSION selects")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.workers < 1:
        print("bench_whole_space: --workers must be at least 1", file=sys.stderr)
        return 2
    if args.list:
        ids = collect(args.keyword)
        print("\n".join(ids))
        return 0 if ids else 1
    rows, wall = run(args.workers, args.keyword)
    if not rows:
        print("bench_whole_space: no test selected", file=sys.stderr)
        return 1
    print(f"\n{'test':100} {'outcome':8} {'s':>8}")
    for name, outcome, seconds in sorted(rows, key=lambda r: -r[2]):
        print(f"{name:100} {outcome:8} {seconds:8.1f}")
    failed = sum(outcome == "failed" for _, outcome, _ in rows)
    total = sum(seconds for _, _, seconds in rows)
    print(f"{len(rows)} tests, {failed} failed; {total:.0f} s of test time, {wall:.0f} s wall "
          f"on {args.workers} worker(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
