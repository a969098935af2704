"""``epochal drive``: execute a run of the model against a real cluster, step by step, and
judge every step (:mod:`impl.harness.drive`, docs/drive.md).

Exit 0: the implementation followed the model to the end of the run (or to the step the
model itself refuses); 1: it diverged, or it reproduced a property violation of the model's
run; 2: bad input (one line), a path's step whose arguments do not fit its action included;
3: inconclusive -- Ctrl-C stopped the run (after the report of the steps driven), or
``--generate transitions`` covered fewer (action, outcome) pairs than its search found."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from impl.harness.cli.check import add_knob_arguments
from impl.harness.cli.drive_guided import run_guided
from impl.harness.cli.drive_kafka import add_kafka_engine_arguments, run_kafka_drive
from impl.harness.cli.drive_verdict import (
    check_path_fits,
    generate_exit_code,
    print_drive,
    print_generated,
)
from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import INCONCLUSIVE
from impl.harness.cli.heartbeat import Heartbeat
from impl.harness.cli.html_output import add_html_flag, check_writable
from impl.harness.cli.html_output import write as write_html
from impl.harness.cli.output import add_json_flag
from impl.harness.drive import (
    DriveError,
    Driver,
    DriveReport,
    ModelRun,
    PathError,
    from_json,
    scenario,
)
from impl.harness.drive.driver import INTERRUPTED
from impl.harness.drive.generate import generate
from impl.harness.drive.network import SetupError
from model.config import DRIVABLE, NAMED, named
from model.registry import ACTIONS
from model.scenarios import SCENARIOS

DRIVE_KNOBS = tuple(dict.fromkeys([ACTIONS["broker_crash"].knob] + [
    e.knob for e in ACTIONS.values() if e.knob is not None and e.knob.default == 0 and e.coverage.driver.supported]))
"""The knobs that turn on actions the driver runs (those off by default): a path's or a
scenario's steps may need them, and --generate transitions then searches and drives them;
and the crashes, which the zombie configuration has none of (a zombie controller frozen
inside an election needs a broker to have crashed: --config zombie --max-crashes 1)."""

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drive",
        help="execute a model run (a scenario or a check --json counterexample) step by step "
        "against a real cluster behind the harness's relay; judge every step (exit 0 followed, "
        "1 diverged or reproduced a violation, 2 bad input, 3 not every pair covered or Ctrl-C)",
        description="Model-driven testing: the model chooses the schedule, real brokers run it, "
        "the model judges every step (docs/drive.md).",
    )
    p.add_argument("--config", metavar="NAME",
                   help=f"the model configuration: its truncation rule is the cluster's ({', '.join(DRIVABLE)}); "
                   "with --engine kafka: default the profile's (kafka26, kafka39); another shows where Kafka and it part")
    add_kafka_engine_arguments(p)
    run = p.add_mutually_exclusive_group(required=True)
    run.add_argument("--scenario", metavar="NAME", help=f"a named scenario ({', '.join(SCENARIOS)})")
    run.add_argument("--path", metavar="FILE.json", help="a counterexample exported by 'epochal check --json' "
                     "(or a list of {action, args} steps)")
    run.add_argument("--generate", choices=["transitions", "guided"],
                     help="generate test cases: 'transitions', the shortest path to every (action, outcome) "
                     "pair of the model (at --brokers); 'guided', seeded random runs steered toward model "
                     "states not yet reached; each on a fresh cluster until --budget is spent")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="with --generate: start no case after this many seconds")
    p.add_argument("--brokers", type=int, choices=[2, 3], default=2,
                   help="with --generate: the model's (and the cluster's) broker count (default 2)")
    p.add_argument("--seed", type=int, metavar="N", help="with --generate guided: the choices' seed (default 0)")
    add_knob_arguments(p, DRIVE_KNOBS, {k.field: "default: the configuration's" + ("" if k.failure else ", 0")
                                        for k in DRIVE_KNOBS})
    p.add_argument("--data-dir", metavar="DIR", help="where the cluster runs (default: a new temporary directory)")
    p.add_argument("--step-timeout", type=float, default=20.0, metavar="SECONDS",
                   help="how long a step waits for the implementation (default 20)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_json_flag(p, "the report (every step, the verdict, the divergence)")
    add_html_flag(p, "the driven run (with --scenario or --path)")
    p.set_defaults(func=run_drive)


def _drivable_config(args: argparse.Namespace) -> None:
    """A configuration drive can run on Epochal's brokers, else the one-line reason (bad input)."""
    if args.profile is not None:
        raise UsageError("--profile goes with --engine kafka")
    if args.config is None:
        raise UsageError("--config NAME is required (or --engine kafka --profile P)")
    name = args.config
    if name not in NAMED:
        raise UsageError(f"unknown configuration {name!r}; choose one of {', '.join(DRIVABLE)}")
    if name not in DRIVABLE:
        raise UsageError(f"{name} has Apache Kafka's own rules, which Epochal's brokers do not follow: "
                         f"it judges Kafka's traces (epochal kafka record, conform); drive one of {', '.join(DRIVABLE)}")


def run_drive(args: argparse.Namespace) -> int:
    if args.engine == "kafka":
        return run_kafka_drive(args, [k.flag for k in DRIVE_KNOBS if getattr(args, k.field) is not None])
    _drivable_config(args)
    if args.step_timeout <= 0:
        raise UsageError("--step-timeout must be positive")
    if args.generate and (args.budget is None or args.budget <= 0):
        raise UsageError("--generate needs a positive --budget SECONDS")
    if (args.budget is not None or args.brokers != 2) and not args.generate:
        raise UsageError("--budget and --brokers go with --generate")
    if args.seed is not None and args.generate != "guided":
        raise UsageError("--seed goes with --generate guided")
    if args.html is not None and args.generate:
        raise UsageError("--html goes with --scenario or --path")
    knobs = {k.field: getattr(args, k.field) for k in DRIVE_KNOBS if getattr(args, k.field) is not None}
    if knobs and args.generate == "guided":
        raise UsageError(f"{', '.join(k.flag for k in DRIVE_KNOBS)} go with --scenario, --path or --generate transitions")
    try:
        named(args.config, **knobs)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    args.knobs = knobs
    check_writable(args)
    data_dir = Path(args.data_dir) if args.data_dir else None
    if data_dir is not None and data_dir.exists() and any(data_dir.iterdir()):
        raise UsageError(f"--data-dir {data_dir} is not empty")
    progress = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    if args.generate == "guided":
        return run_guided(args, data_dir, progress)
    if args.generate:
        return _generate(args, data_dir, progress)
    model_run = _model_run(args)
    driver = Driver(args.config, data_dir=data_dir, step_timeout=args.step_timeout, progress=progress,
                    knobs=args.knobs)
    try:
        report = driver.run(model_run)
    except DriveError as exc:
        raise UsageError(str(exc)) from None
    except (SetupError, OSError, TimeoutError, RuntimeError) as exc:  # no Java, no free port, a broker that exited
        raise UsageError(f"could not start the cluster: {exc}") from None
    from impl.harness.report import write_drive_report

    write_html(args, lambda path: write_drive_report(path, model_run, report))
    if args.json:
        return print_drive(args, report, model_run)
    print(render(report))
    return report.exit_code


def _model_run(args: argparse.Namespace) -> ModelRun:
    """The run to drive: the named scenario, or the path read and walked through the model
    (a step whose arguments do not fit its action is bad input, before any process starts)."""
    try:
        model_run = scenario(args.scenario) if args.scenario else from_json(Path(args.path))
    except PathError as exc:
        raise UsageError(str(exc)) from None
    if args.path:
        check_path_fits(model_run, args.config, args.knobs)
    return model_run


CASE_STARTS = re.compile(r"case \d+/\d+:")
"""How ``generate`` says it starts driving a case (``case 3/23: ...``)."""


def _generate(args: argparse.Namespace, data_dir: Path | None, progress: Callable[[str], None] | None) -> int:
    with Heartbeat(lambda m: progress(f"generate: {m}") if progress else None) as beat:
        beat.phase("searching the model")

        def say(line: str) -> None:  # a case's cluster start and steps can be silent for long
            if CASE_STARTS.match(line):
                beat.phase(f"driving {line.split(':')[0]}")
            beat.said()
            if progress is not None:
                progress(line)

        try:
            report = generate(args.config, args.budget, data_dir=data_dir, brokers=args.brokers,
                              step_timeout=args.step_timeout, progress=say, knobs=args.knobs)
        except (SetupError, OSError, TimeoutError, RuntimeError) as exc:
            raise UsageError(f"could not start the cluster: {exc}") from None
    code = generate_exit_code(report)
    if args.json:
        return print_generated(args, report, code)
    d = report.as_dict()
    print(f"generated {len(report.pairs)} cases of {report.config} ({report.states} states, "
          f"{report.transitions} transitions searched); drove {len(report.cases)} in {d['seconds']}s")
    for c in report.cases:
        div = c["divergence"] or {}
        extra = f" at step {div.get('step')}: {div.get('implementation_did')}" if div else ""
        name = f"{c['pair'][0]}/{c['pair'][1]}"
        print(f"  {name:<36} {c['steps']:>3} steps  {c['verdict']}{extra}")
    print(f"covered {len(report.covered_pairs)} of {len(report.pairs)} (action, outcome) pairs and "
          f"{report.covered_transitions} distinct model transitions ({d['transitions_per_minute']} per minute)")
    missing = sorted(set(report.pairs) - set(report.covered_pairs))
    if missing:
        print("not covered: " + ", ".join(f"{a}/{o}" for a, o in missing))
    if code == INCONCLUSIVE:
        print(f"INCONCLUSIVE: {len(missing)} of {len(report.pairs)} pairs not covered")
    return code


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
    elif r.verdict == INTERRUPTED:
        lines.append(f"verdict: INCONCLUSIVE: interrupted by Ctrl-C after {len(r.steps)} steps")
    elif r.verdict == "reproduced":
        lines.append(f"verdict: reproduced the model's violation at step {r.steps[-1].n}: {r.model_violation}")
    else:
        d = r.divergence or {}
        lines.append(f"verdict: diverged at step {d.get('step')} ({d.get('action')})")
        lines.append(f"  the implementation: {d.get('implementation_did')}")
        lines.append(f"  the model allowed:  {d.get('model_allowed')}")
    return "\n".join(lines)
