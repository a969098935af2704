"""The conformance job's command line, as ``spark-submit`` runs it.

The same arguments work for ``epochal conform`` (``impl.cli.conform``, which adds these
arguments to its parser), ``python -m conformance.spark.job`` and ``spark-submit ...
conformance/spark/job.py`` -- the last two need nothing of ``impl``, so a Spark cluster runs
the job from the conformance and model packages alone.  Unusable input (missing paths, no
readable record, judge not installed) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

DESCRIPTION = "judge recorded traces against the model with Spark (exit 0 conforms, 1 not, 2 unusable input)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="trace files or directories (JSON Lines, .gz, Parquet), local or any Hadoop URI")
    p.add_argument("--out", metavar="DIR", help="write verdicts, quarantine and summary here (Parquet and JSON)")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[2]; spark-submit's own when submitted)")
    p.add_argument("--config", default="kip320", metavar="NAME", help="model configuration to judge against (default kip320)")
    p.add_argument("--judge", metavar="MODULE:FUNC", default=None,
                   help="judge function (default conformance.judge.diagnose:judge: conformance.judge.replay.judge plus "
                        "which protocol variant explains a failing trace)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if any record was quarantined, even if every group conforms")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")


def run(args: argparse.Namespace, spark: Any = None) -> int:
    """Run the job for parsed arguments; raises ``InputError`` for unusable input."""
    from conformance.spark.job import conform, render

    outcome = conform(args.paths, args.out, spark=spark, master=args.master, config=args.config,
                      judge=args.judge, strict=args.strict)
    if args.json:
        print(json.dumps(outcome.as_dict(), indent=2, sort_keys=True))
    else:
        print(render(outcome))
    return outcome.exit_code


def standalone_main(argv: list[str] | None = None, spark: Any = None) -> int:
    """``python -m conformance.spark.job`` / ``spark-submit conformance/spark/job.py``: no ``impl`` needed."""
    from conformance.spark.job import InputError

    p = argparse.ArgumentParser(prog="conformance.spark.job", description=DESCRIPTION)
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args, spark=spark)
    except InputError as exc:
        print(f"conform: error: {exc}", file=sys.stderr)
        return 2
