"""``epochal drive``: execute a run of the model against a real cluster, step by step, and
judge every step (:mod:`impl.harness.drive`, docs/drive.md).

Exit 0: the implementation followed the model to the end of the run (or to the step the
model itself refuses); 1: it diverged, or it reproduced a property violation of the model's
run; 2: bad input (one line)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from impl.cli.errors import UsageError
from impl.cli.output import add_json_flag, print_json
from impl.harness.drive import DriveError, Driver, DriveReport, PathError, from_json, scenario
from impl.harness.drive.network import SetupError
from model.config import NAMED
from model.scenarios import SCENARIOS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drive",
        help="execute a model run (a scenario or a check --json counterexample) step by step "
        "against a real cluster behind the harness's relay; judge every step (exit 0 followed, "
        "1 diverged or reproduced a violation, 2 bad input)",
        description="Model-driven testing: the model chooses the schedule, real brokers run it, "
        "the model judges every step (docs/drive.md).",
    )
    p.add_argument("--config", required=True, metavar="NAME",
                   help=f"the model configuration: its truncation rule is the cluster's ({', '.join(NAMED)})")
    run = p.add_mutually_exclusive_group(required=True)
    run.add_argument("--scenario", metavar="NAME", help=f"a named scenario ({', '.join(SCENARIOS)})")
    run.add_argument("--path", metavar="FILE.json", help="a counterexample exported by 'epochal check --json' "
                     "(or a list of {action, args} steps)")
    p.add_argument("--data-dir", metavar="DIR", help="where the cluster runs (default: a new temporary directory)")
    p.add_argument("--step-timeout", type=float, default=20.0, metavar="SECONDS",
                   help="how long a step waits for the implementation (default 20)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_json_flag(p, "the report (every step, the verdict, the divergence)")
    p.set_defaults(func=run_drive)


def run_drive(args: argparse.Namespace) -> int:
    if args.config not in NAMED:
        raise UsageError(f"unknown configuration {args.config!r}; choose one of {', '.join(NAMED)}")
    if args.step_timeout <= 0:
        raise UsageError("--step-timeout must be positive")
    try:
        model_run = scenario(args.scenario) if args.scenario else from_json(Path(args.path))
    except PathError as exc:
        raise UsageError(str(exc)) from None
    data_dir = Path(args.data_dir) if args.data_dir else None
    if data_dir is not None and data_dir.exists() and any(data_dir.iterdir()):
        raise UsageError(f"--data-dir {data_dir} is not empty")
    progress = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    driver = Driver(args.config, data_dir=data_dir, step_timeout=args.step_timeout, progress=progress)
    try:
        report = driver.run(model_run)
    except DriveError as exc:
        raise UsageError(str(exc)) from None
    except (SetupError, OSError, TimeoutError, RuntimeError) as exc:  # no Java, no free port, a broker that exited
        raise UsageError(f"could not start the cluster: {exc}") from None
    if args.json:
        return print_json(args, report.exit_code, **report.as_dict())
    print(render(report))
    return report.exit_code


def render(r: DriveReport) -> str:
    lines = [f"drive {r.run} against {r.config} (truncation {r.truncation}, {r.brokers} brokers): "
             f"{len([s for s in r.steps if s.outcome != 'inserted'])} steps, {r.transitions} transitions "
             f"in {r.seconds:.1f}s ({r.transitions_per_minute()} per minute after setup)"]
    for s in r.steps:
        n = f"{s.n:>3}" if s.n else "  +"
        lines.append(f"{n} {s.outcome:<12} {s.action}{s.args}  [{s.operation}]")
        if s.note:
            lines.append(f"      {s.note}")
    if r.verdict == "followed":
        lines.append("verdict: the implementation followed the model to the end of the run")
    elif r.verdict == "model_refused":
        lines.append("verdict: the implementation followed the model up to the step the model refuses")
    elif r.verdict == "reproduced":
        lines.append(f"verdict: reproduced the model's violation at step {r.steps[-1].n}: {r.model_violation}")
    else:
        d = r.divergence or {}
        lines.append(f"verdict: diverged at step {d.get('step')} ({d.get('action')})")
        lines.append(f"  the implementation: {d.get('implementation_did')}")
        lines.append(f"  the model allowed:  {d.get('model_allowed')}")
    return "\n".join(lines)
