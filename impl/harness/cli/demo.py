"""``epochal demo``: the end-to-end run on embedded defaults (the README's first command).

The runs and what each is expected to show are :mod:`impl.harness.demo`'s; this module
prints them as they finish.  The exit code is 0 only when every outcome is the expected one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from impl.harness.cli.chaos_verdict import demo_violation
from impl.harness.cli.check import summary
from impl.harness.cli.output import add_json_flag
from impl.harness.cli.verdict import print_verdict
from impl.harness.demo import (
    JUDGED_CONFIG,
    SCENARIO_CRASHES,
    SCENARIO_EXPECTATIONS,
    check_history,
    judge_runs,
    play_history,
    record_runs,
    runs_conform,
    scenario_summary,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the end-to-end demonstration on embedded defaults")
    add_json_flag(p, "whether each part passed (the demonstration's text then goes to stderr)")
    p.set_defaults(func=run)


_STREAM = [sys.stdout]  # stderr under --json: stdout is then the one JSON object


def _say(msg: str = "") -> None:
    print(msg, file=_STREAM[0], flush=True)


def model_history() -> bool:
    """Part one: the exhaustive checks, then the history scenarios."""
    ok = True
    _say("== 1. The model: Kafka's replication history, rediscovered")
    for c in check_history():
        verdict = "as expected" if c.as_expected else "UNEXPECTED"
        ok &= c.as_expected
        _say(summary(c.result))
        _say(f"-> {c.name}: {'violation found' if c.found else 'holds'} ({verdict}, {c.seconds:.1f} s)")
        _say()
    _say(f"Known scenarios (3 brokers, {SCENARIO_CRASHES} crashes): which configuration each one breaks")
    for scenario in SCENARIO_EXPECTATIONS:
        _say(f"  {scenario}: {scenario_summary(scenario)}")
        for p in play_history(scenario):
            out = p.outcome
            mark = "ok" if p.as_expected else "UNEXPECTED"
            ok &= p.as_expected
            what = (
                ", ".join(sorted({n for n, _ in out.violations}))
                if p.broken
                else (f"stopped at step {out.blocked_at}: {out.blocked_step}" if out.blocked_at else "no property broken")
            )
            _say(f"    {p.config:7s} {'BREAKS' if p.broken else 'safe  '} after {len(out.steps):2d} steps ({what}) [{mark}]")
    return ok


def real_system() -> bool:
    """Part two: record two faulty runs of the implementation and judge their traces."""
    from conformance.spark.job import render

    _say("== 2. The implementation: real brokers on real ZooKeeper, judged against the model")
    out = Path(tempfile.mkdtemp(prefix="epochal-demo-"))
    try:
        record_runs(out, log=lambda m: _say("  " + m))
    except (OSError, TimeoutError, RuntimeError) as exc:
        _say(f"-> could not run the cluster: {exc}")
        return False
    _say(f"  traces in {out}; judging them with the Spark conformance job (config {JUDGED_CONFIG}) ...")
    outcome = judge_runs(out)
    _say(render(outcome))
    ok = runs_conform(outcome)
    _say(f"-> traces {'conform' if ok else 'DO NOT conform'} (verdicts in {out / 'verdicts'})")
    return ok


def run(args: argparse.Namespace) -> int:
    _STREAM[0] = sys.stderr if args.json else sys.stdout
    started = time.perf_counter()
    model_ok = model_history()
    _say()
    system_ok = real_system()
    ok = model_ok and system_ok
    _say()
    seconds = time.perf_counter() - started
    _say(f"demo {'PASSED' if ok else 'FAILED'}: every outcome {'is' if ok else 'is not'} the expected one ({seconds:.0f} s)")
    code = 0 if ok else 1
    if args.json:
        return print_verdict(args, code, {"name": "demo"}, demo_violation(model_ok, system_ok), passed=ok,
                             model_as_expected=model_ok, system_conforms=system_ok, seconds=round(seconds, 1))
    return code
