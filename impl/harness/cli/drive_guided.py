"""``epochal drive --generate guided --budget SECONDS [--seed N]``: model-guided fuzzing
(:mod:`impl.harness.drive.guided`, docs/drive.md "Model-guided fuzzing").

Exit 0: every run followed the model; 1: a run diverged or reproduced a property violation
(each such run's schedule is saved as a path ``epochal drive --path`` replays); 2: bad input;
3: Ctrl-C stopped the campaign (after the report of its runs so far)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from impl.harness.cli.drive_verdict import print_guided
from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import INCONCLUSIVE
from impl.harness.drive.guided import GuidedReport, fuzz
from impl.harness.drive.network import SetupError


def run_guided(args: argparse.Namespace, data_dir: Path | None, progress: Callable[[str], None] | None) -> int:
    seed = 0 if args.seed is None else args.seed
    try:
        report = fuzz(args.config, args.budget, seed=seed, brokers=args.brokers, data_dir=data_dir, step_timeout=args.step_timeout,
                      progress=progress)
    except (SetupError, OSError, TimeoutError, RuntimeError) as exc:  # no free port, a broker that exited
        raise UsageError(f"could not start the cluster: {exc}") from None
    if args.json:
        return print_guided(args, report)
    print(render(report))
    return report.exit_code


def render(r: GuidedReport) -> str:
    runs = f"{len(r.runs)} run" + ("" if len(r.runs) == 1 else "s")
    lines = [f"guided fuzzing of {r.config} at {r.brokers} brokers, seed {r.seed}: {runs} of up to "
             f"{r.steps_per_run} steps in {r.seconds:.1f}s (a fresh cluster each: setup and teardown included)"]
    for run in r.runs:
        d = run.divergence or {}
        where = f" at step {d.get('step')} ({d.get('action')})" if d else ""
        lines.append(f"  run {run.n:>3}: {run.verdict}{where}, {run.steps} steps, {run.new_states} new states, "
                     f"{run.seconds:.1f}s")
        if d:
            lines.append(f"      the implementation: {d.get('implementation_did')}")
            lines.append(f"      the model allowed:  {d.get('model_allowed')}")
            lines.append(f"      replay: epochal drive --config {r.config} --path {run.path}")
    lines.append(f"{r.states} distinct model states reached ({r.states_per_minute()} per minute), "
                 f"{sum(x.transitions for x in r.runs)} transitions driven")
    failed = [x for x in r.runs if x.path]
    if failed:
        lines.append(f"verdict: {len(failed)} run(s) diverged or reproduced a violation")
    elif r.exit_code == INCONCLUSIVE:
        lines.append("verdict: INCONCLUSIVE: interrupted by Ctrl-C")
    else:
        lines.append("verdict: every run followed the model")
    return "\n".join(lines)
