"""``epochal conform``: judge recorded traces against the model with the Spark job.

The arguments and the run are the job's own (:mod:`conformance.spark.cli`, shared with
``spark-submit``); here its unusable-input error becomes the command's one-line usage error,
and the HTML report is written: ``report.html`` under ``--out`` (a local directory) and
``--html FILE`` -- every group's verdict, and each non-conforming group drawn up to its
first divergence (``impl.harness.report``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from conformance.spark.cli import DESCRIPTION, add_arguments
from conformance.spark.cli import run as run_job
from impl.harness.cli.errors import UsageError
from impl.harness.cli.html import add_html_flag, check_writable
from impl.harness.cli.html import write as write_html

REPORT = "report.html"
"""The report's name under ``--out``, beside verdicts.parquet and summary.json."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conform", help=DESCRIPTION, description=DESCRIPTION)
    add_arguments(p)
    add_html_flag(p, f"the verdicts, each failing group drawn (also written as {REPORT} under a local --out)")
    p.set_defaults(func=run)


def _local(path: str) -> str | None:
    """A path on this machine's filesystem (``file:`` URIs included), or None for another
    filesystem (``hdfs://``...), which the report does not read from or write to."""
    if path.startswith("file:"):
        return path[len("file:"):].removeprefix("//")
    return None if "://" in path else path


def report(args: argparse.Namespace, outcome: Any) -> None:
    from conformance.spark.report import render
    from impl.harness.report import write_conformance_report

    paths = [p for p in (_local(x) for x in args.paths) if p is not None]
    counts = render(outcome).strip().splitlines()[-2:]  # the counts lines of the table

    def writer(path: Path) -> Path:
        return write_conformance_report(path, paths, outcome.verdicts, outcome.scenarios, "; ".join(counts))

    out = _local(args.out) if args.out else None
    if out is not None:
        written = writer(Path(out) / REPORT)
        # in the job's own progress format: one more stage of the run, not a stray line
        print(f"[conform {time.strftime('%H:%M:%S')}] report written to {written}", file=sys.stderr)
    write_html(args, writer)


def run(args: argparse.Namespace) -> int:
    from conformance.spark.job import InputError

    check_writable(args)
    try:
        return run_job(args, then=lambda outcome: report(args, outcome))
    except InputError as exc:
        raise UsageError(str(exc)) from None
