"""``epochal record-traces``: regenerate the stored traces from real runs with faults
(:mod:`impl.harness.recordings`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from impl.harness.cli.chaos import add_broker_cmd_args, broker_command
from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import add_json_flag, print_json
from impl.harness.recordings import BROKERS as RECORDING_BROKERS
from impl.harness.recordings import SCENARIOS, record


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "record-traces",
        help="record traces from real runs with faults (regenerates traces/data/recorded): "
        "leader-kill, controller-failover, zombie-leader (pause/resume), reassignment (seed 000 F)",
    )
    p.add_argument("--out", default="traces/data/recorded", help="directory of the recordings, one subdirectory per scenario (default traces/data/recorded)")
    p.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="a scenario to record (repeatable; default: all)")
    add_broker_cmd_args(p)
    add_json_flag(p, "the scenarios recorded and where")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    names = args.scenario or list(SCENARIOS)
    broker_cmd = broker_command(args, RECORDING_BROKERS)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            record(name, out, broker_cmd=broker_cmd)
    except (OSError, TimeoutError, RuntimeError) as exc:  # no Java, no free port, unwritable --out, a hung failover, a broker that exited
        raise UsageError(f"could not record traces: {exc}") from None
    if args.json:
        return print_json(args, 0, out=str(out), scenarios=[{"scenario": n, "dir": str(out / n)} for n in names])
    return 0
