"""Kafka's history on real processes, and seeded bugs caught: ``epochal drive`` over every
story of docs/drive.md, with the figures the page cites.

    python bench/bench_drive.py [--mutants]

One row per run: the story, the configuration driven, the verdict and exit code, steps and
transitions, setup and total seconds, transitions per minute after setup.  Exit 1 if a
verdict is not the expected one.

``--mutants`` also drives each story against the implementation with one rule seeded wrong
(a copy of the source tree in a temporary directory, its brokers started from it): a run
that exits 0 against the correct implementation must exit 1 against the mutant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

UNCLEAN_PATH = {"steps": [{"action": "produce", "args": [0, 0]}, {"action": "shrink_isr", "args": [0, 0, 1]},
                          {"action": "broker_crash", "args": [0]}, {"action": "controller_elect", "args": [1]},
                          {"action": "elect_leader", "args": [1, 0, 1]}]}

RUNS = [  # (run, config, expected verdict)
    ("kafka_1211", "design", "reproduced"),
    ("kafka_1211", "kip320", "followed"),
    ("kip279_divergence", "kip101", "reproduced"),
    ("kip279_divergence", "kip320", "followed"),
    ("kip320_stale_fetch", "kip279", "reproduced"),
    ("kip320_stale_fetch", "kip320", "model_refused"),
    ("unclean.json", "unclean", "reproduced"),
    ("unclean.json", "kip320", "model_refused"),
]

MUTANTS = {  # name -> (file, the line as it is, the line seeded wrong, the run that must now fail)
    "stale fetch epoch passes the fence": (
        "impl/node/fencing.py", "    if fetch_epoch >= 0 and fetch_epoch != r.leader_epoch:",
        "    if fetch_epoch >= 0 and fetch_epoch > r.leader_epoch:", ("kip320_stale_fetch", "kip320")),
    "the leader's end offset taken as is (KIP-101's rule)": (
        "impl/node/truncation.py", '    if rule == "kip101":', '    if rule != "hw":',
        ("kip279_divergence", "kip320")),
    "a new follower truncates to its HW (the design's rule)": (
        "impl/node/replica.py", '        if rule == "hw":', '        if rule in ("hw", "kip320"):',
        ("kafka_1211", "kip320")),
}


def drive(run: str, config: str, tmp: Path, source: Path = ROOT) -> tuple[dict, float]:
    arg = ["--scenario", run]
    if run.endswith(".json"):
        path = tmp / run
        path.write_text(json.dumps(UNCLEAN_PATH))
        arg = ["--path", str(path)]
    env = dict(os.environ, PYTHONPATH=str(source))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "drive", "--config", config, *arg,
                           "--json", "--quiet"], capture_output=True, text=True, cwd=source, env=env,
                          timeout=900)
    seconds = time.perf_counter() - t0
    try:
        return json.loads(proc.stdout), seconds
    except json.JSONDecodeError:
        return {"exit_code": proc.returncode, "outcome": "error",
                "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}, seconds


def row(run: str, config: str, r: dict, seconds: float) -> str:
    steps = len([s for s in r.get("steps", []) if s.get("n")])
    return (f"{run:<20} {config:<8} {r.get('outcome', '?'):<14} {r.get('exit_code')!s:>4} {steps:>5} "
            f"{r.get('transitions', 0):>5} {r.get('setup_seconds', 0):>6.1f} {seconds:>6.1f} "
            f"{r.get('transitions_per_minute', 0):>7.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", action="store_true", help="also drive against seeded bugs")
    args = ap.parse_args(argv)
    bad = 0
    print(f"{'run':<20} {'config':<8} {'verdict':<14} {'exit':>4} {'steps':>5} {'trans':>5} "
          f"{'setup':>6} {'total':>6} {'t/min':>7}")
    with tempfile.TemporaryDirectory(prefix="bench-drive-") as d:
        tmp = Path(d)
        for run, config, want in RUNS:
            r, seconds = drive(run, config, tmp)
            print(row(run, config, r, seconds), "" if r.get("outcome") == want else f"  EXPECTED {want}", flush=True)
            bad += r.get("outcome") != want
        if args.mutants:
            print("\nseeded bugs (each must turn a run that follows the model into one that diverges):")
            for name, (file, line, wrong, (run, config)) in MUTANTS.items():
                src = tmp / "mutant"
                shutil.rmtree(src, ignore_errors=True)
                shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "*.pyc", "__pycache__"))
                text = (src / file).read_text()
                if line not in text:
                    print(f"{name}: the line to seed is gone from {file}")
                    bad += 1
                    continue
                (src / file).write_text(text.replace(line, wrong, 1))
                r, seconds = drive(run, config, tmp, src)
                killed = r.get("exit_code") == 1
                div = r.get("divergence") or {}
                print(f"{name:<52} {run} / {config}: {'killed' if killed else 'SURVIVED'} "
                      f"(step {div.get('step')}: {div.get('action')}) in {seconds:.0f}s", flush=True)
                bad += not killed
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
