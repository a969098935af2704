"""Model-guided fuzzing against plain ``epochal chaos``: distinct model states reached by real
runs per minute, the two side by side in one run.

    python bench/bench_guided_fuzz.py --seconds N [--seed S] [--brokers 3] [--config kip320]

For N seconds of wall time each, one after the other:

* **guided** -- ``epochal drive --generate guided`` (:func:`impl.harness.drive.guided.fuzz`):
  runs of up to ``--steps`` steps, each on a fresh cluster, steered toward model states not
  yet reached;
* **chaos** -- plain chaos runs (:class:`impl.harness.chaos.run.ChaosRun`, seeds S, S+1, ...,
  each ``--chaos-duration`` seconds of workload and faults, or what is left of N), with the
  same brokers and no authentication as the driven cluster has; without their Spark
  conformance pass, which is chaos's own verdict and not needed here (that favours chaos).

Both are mapped to model states the same way: every run's traces are judged by the trace
judge, and the model states it holds possible after each event (every hypothesis, every
(topic, partition) group) are the states that run reached (:func:`judged_states`).  Judging
for this count is not charged to either side's wall time (the driver's own judging, after
every step, is).  Two counts per side:

* **all** -- every distinct judged state.  A chaos run writes hundreds of records a second,
  and each write is a state nobody else reaches (a log one record longer): this counts the
  workload as much as the schedules;
* **bounded** -- the judged states within the model configuration's bounds (records
  produced, leader epochs, crashes, pauses: :func:`within_bounds`), the state graph ``epochal
  check`` explores at that broker count: the interleavings the model is about.

Prints one row per side, the ratios, and how many states only one side reached (the two
are judged in the same numbering: the trace's, from before the partition's life).  Figures: docs/benchmarks.md, "Model-guided fuzzing".
"""

from __future__ import annotations

import argparse
import platform
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from impl.harness.chaos.run import ChaosRun
from impl.harness.drive.driver import DriveReport
from impl.harness.drive.guided import fuzz, judged_states, run_trace_dir, within_bounds
from model.config import named
from model.state import State


def guided_side(args: argparse.Namespace, root: Path) -> dict:
    states: set[State] = set()

    def count(run_dir: Path, _r: DriveReport) -> None:  # (not charged to the campaign's time)
        states.update(judged_states(run_trace_dir(run_dir), args.config))

    r = fuzz(args.config, args.seconds, seed=args.seed, brokers=args.brokers, steps=args.steps,
             data_dir=root / "guided", on_run=count, step_timeout=args.step_timeout,
             progress=(lambda m: print(f"  guided: {m}", flush=True)) if args.verbose else None)
    wall = r.seconds
    failed = [x for x in r.runs if x.path]
    return {"side": "guided", "wall": wall, "runs": len(r.runs), "states": states,
            "driver_states": r.states, "note": f"cluster setup {sum(x.setup_seconds for x in r.runs):.0f} s; "
            f"{sum(x.transitions for x in r.runs)} transitions; {len(failed)} of {len(r.runs)} runs diverged"
            + (f" (first: {failed[0].path})" if failed else "")}


def chaos_side(args: argparse.Namespace, root: Path) -> dict:
    states: set[State] = set()
    wall, runs, seed = 0.0, 0, args.seed
    while wall < args.seconds:
        duration = max(5.0, min(args.chaos_duration, args.seconds - wall - 10.0))
        run_dir = root / f"chaos-{seed}"
        t0 = time.monotonic()
        report = ChaosRun(seed, duration, args.brokers, data_dir=run_dir, conform=False, insecure=True,
                          log=(lambda m: print(f"  chaos: {m}", flush=True)) if args.verbose else (lambda m: None)).run()
        wall += time.monotonic() - t0
        runs += 1
        states.update(judged_states(run_trace_dir(run_dir), "unclean" if report.unclean else args.config))
        shutil.rmtree(run_dir, ignore_errors=True)
        seed += 1
    return {"side": "chaos", "wall": wall, "runs": runs, "states": states, "driver_states": None,
            "note": f"seeds {args.seed}-{seed - 1}, {args.chaos_duration:g} s of faults each"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, required=True, help="wall time of each side")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--config", default="kip320")
    ap.add_argument("--brokers", type=int, default=3, choices=[3], help="chaos runs 3 to 5; the driver 2 or 3")
    ap.add_argument("--steps", type=int, default=30, help="steps per guided run")
    ap.add_argument("--chaos-duration", type=float, default=30.0, help="seconds of faults per chaos run")
    ap.add_argument("--step-timeout", type=float, default=8.0,
                    help="how long a guided step waits for the implementation (drive's default is 20)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.seconds <= 0:
        ap.error("--seconds must be positive")
    cfg = named(args.config, brokers=args.brokers)
    root = Path(tempfile.mkdtemp(prefix="epochal-bench-guided-"))
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {platform.machine()}; "
          f"{args.config} at {args.brokers} brokers, seed {args.seed}, {args.seconds:g} s each", flush=True)
    sides = [guided_side(args, root), chaos_side(args, root)]
    if not any((root / "guided").glob("*.json")):
        shutil.rmtree(root, ignore_errors=True)  # else the failed runs' schedules and clusters stay
    print(f"{'side':<7} {'runs':>4} {'wall s':>7} {'states':>7} {'/min':>8} {'bounded':>7} {'/min':>7}  note")
    rates = {}
    for s in sides:
        bounded = sum(1 for x in s["states"] if within_bounds(x, cfg))
        per_min = 60 * len(s["states"]) / s["wall"] if s["wall"] else 0.0
        b_min = 60 * bounded / s["wall"] if s["wall"] else 0.0
        rates[s["side"]] = (per_min, b_min)
        extra = f"; the driver's own count: {s['driver_states']}" if s["driver_states"] is not None else ""
        print(f"{s['side']:<7} {s['runs']:>4} {s['wall']:>7.1f} {len(s['states']):>7} {per_min:>8.1f} "
              f"{bounded:>7} {b_min:>7.1f}  {s['note']}{extra}")
    (g, gb), (c, cb) = rates["guided"], rates["chaos"]
    print(f"ratio guided/chaos: all states {g / c if c else float('inf'):.2f}, "
          f"bounded states {gb / cb if cb else float('inf'):.2f}")
    gs, cs = sides[0]["states"], sides[1]["states"]
    print(f"reached by one side only: guided {len(gs - cs)} of {len(gs)}, chaos {len(cs - gs)} of {len(cs)}; "
          f"both {len(gs & cs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
