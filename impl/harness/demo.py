"""``epochal demo``: the end-to-end run on embedded defaults (the README's first command).

Part one replays Kafka's history in the model: the design as written loses a committed
record (found by the exhaustive checker, with its shortest counterexample), each fix stops
the scenario that broke its predecessor, and the fixed protocol exhausts its bounds with
every property holding.  Part two runs the real system -- three broker processes on an
embedded ZooKeeper -- through a leader kill and a controller failover with an acks=all
workload, records the traces, and judges them with the Spark conformance job.  The exit
code is 0 only when every outcome is the expected one.
"""

from __future__ import annotations

import argparse
import sys
import time

from impl.cli.check import summary
from model.config import named
from model.scenarios import SCENARIOS
from properties.checkers.bfs import check
from properties.checkers.scenarios import play


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the end-to-end demonstration on embedded defaults")
    p.set_defaults(func=run)


def _say(msg: str = "") -> None:
    print(msg, flush=True)


def model_history() -> bool:
    """Check the design and the fix exhaustively, then play the history scenarios."""
    ok = True
    _say("== 1. The model: Kafka's replication history, rediscovered")
    for name, overrides, expect_bug in (("design", {}, True), ("kip320", {"brokers": 2, "max_crashes": 2}, False)):
        t0 = time.perf_counter()
        r = check(named(name, **overrides))
        found = r.violation is not None
        verdict = "as expected" if found == expect_bug and r.complete else "UNEXPECTED"
        ok &= found == expect_bug and r.complete
        _say(summary(r))
        _say(f"-> {name}: {'violation found' if found else 'holds'} ({verdict}, {time.perf_counter() - t0:.1f} s)")
        _say()
    _say("Known scenarios (3 brokers, 2 crashes): which configuration each one breaks")
    expectations = {
        "kafka_1211": {"design": True, "kip101": False, "kip279": False, "kip320": False},
        "kip279_divergence": {"kip101": True, "kip279": False, "kip320": False},
        "kip320_stale_fetch": {"kip279": True, "kip320": False},
    }
    for scenario, per_config in expectations.items():
        _say(f"  {scenario}: {SCENARIOS[scenario][0]}")
        for cfg_name, expect in per_config.items():
            brokers = 2 if scenario == "kafka_1211" else 3
            out = play(scenario, named(cfg_name, brokers=brokers, max_crashes=2))
            broken = bool(out.violations)
            mark = "ok" if broken == expect else "UNEXPECTED"
            ok &= broken == expect
            what = ", ".join(sorted({n for n, _ in out.violations})) if broken else (f"stopped at step {out.blocked_at}: {out.blocked_step}" if out.blocked_at else "no property broken")
            _say(f"    {cfg_name:7s} {'BREAKS' if broken else 'safe  '} after {len(out.steps):2d} steps ({what}) [{mark}]")
    return ok


def real_system() -> bool:
    """Record two faulty runs of the implementation and judge their traces with Spark."""
    import tempfile
    from pathlib import Path

    from conformance.spark.job import conform, render
    from impl.harness.recordings import record

    _say("== 2. The implementation: real brokers on real ZooKeeper, judged against the model")
    out = Path(tempfile.mkdtemp(prefix="epochal-demo-"))
    try:
        for scenario in ("leader-kill", "controller-failover"):
            record(scenario, out, log=lambda m: _say("  " + m))
    except (OSError, TimeoutError, RuntimeError) as exc:  # no Java, no free port, a hung failover, a broker that exited
        _say(f"-> could not run the cluster: {exc}")
        return False
    _say(f"  traces in {out}; judging them with the Spark conformance job (config kip320) ...")
    outcome = conform([str(out)], out=str(out / "verdicts"), config="kip320", log=lambda m: None)
    _say(render(outcome))
    ok = outcome.exit_code == 0 and outcome.groups >= 2 and outcome.conforming == outcome.groups
    _say(f"-> traces {'conform' if ok else 'DO NOT conform'} (verdicts in {out / 'verdicts'})")
    return ok


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    ok = model_history()
    _say()
    ok &= real_system()
    _say()
    _say(f"demo {'PASSED' if ok else 'FAILED'}: every outcome {'is' if ok else 'is not'} the expected one ({time.perf_counter() - started:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run(argparse.Namespace()))
