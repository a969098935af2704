"""``epochal record-traces``: regenerate the stored traces from real runs with faults
(:mod:`impl.harness.recordings`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

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


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)  # progress: stdout is the summary's (or --json's)


def _recorded(name: str, directory: Path) -> dict[str, Any]:
    """What one scenario left: its directory, trace files and records (lines)."""
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    records = sum(sum(1 for line in p.read_bytes().splitlines() if line.strip()) for p in files)
    return {"scenario": name, "dir": str(directory), "files": len(files), "records": records}


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    names = args.scenario or list(SCENARIOS)
    broker_cmd = broker_command(args, RECORDING_BROKERS)
    started = time.monotonic()
    try:
        out.mkdir(parents=True, exist_ok=True)
        recorded = [_recorded(name, record(name, out, log=_say, broker_cmd=broker_cmd)) for name in names]
    except (OSError, TimeoutError, RuntimeError) as exc:  # no Java, no free port, unwritable --out, a hung failover, a broker that exited
        raise UsageError(f"could not record traces: {exc}") from None
    seconds = round(time.monotonic() - started, 1)
    if args.json:
        return print_json(args, 0, out=str(out), scenarios=recorded, seconds=seconds)
    print(f"recorded {len(recorded)} scenario(s) under {out} in {seconds} s:")
    for r in recorded:
        print(f"  {r['scenario']:<22} {r['records']:>6} records in {r['files']} files  {r['dir']}")
    return 0
