"""The conformance job's command line, as ``spark-submit`` runs it.

The same arguments work for ``epochal conform`` (``impl.harness.cli.conform``, which adds these
arguments to its parser), ``python -m conformance.spark.cli`` and ``spark-submit ...
conformance/spark/job.py`` -- the last two need nothing of ``impl``, so a Spark cluster runs
the job from the conformance and model packages alone.  Unusable input (missing paths, no
readable record, judge not installed) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

DESCRIPTION = ("judge recorded traces against the model with Spark (exit 0 conforms, 1 not, 2 unusable input, "
               "3 inconclusive: a group the judge could not decide, or none to judge)")


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
    p.add_argument("--json", action="store_true",
                   help="print one JSON object instead of the table: the counts and timings of summary.json, "
                        "and each group's verdict (shape: docs/cli.md)")


def run(args: argparse.Namespace, spark: Any = None, then: Any = None) -> int:
    """Run the job for parsed arguments; raises ``InputError`` for unusable input.
    ``then(outcome)``, if given, runs after the output is printed (``epochal conform``
    writes its HTML report there)."""
    from conformance.spark.job import conform, render
    from conformance.spark.report import as_json

    outcome = conform(args.paths, args.out, spark=spark, master=args.master, config=args.config,
                      judge=args.judge, strict=args.strict)
    if args.json:  # the shape every epochal command's --json has: command, exit_code, then its own
        print(json.dumps({"command": "conform", **as_json(outcome)}, indent=2, sort_keys=True, default=str))
    else:
        print(render(outcome))
    if then is not None:
        then(outcome)
    return outcome.exit_code


def standalone_main(argv: list[str] | None = None, spark: Any = None) -> int:
    """``python -m conformance.spark.cli`` / ``spark-submit DIR/conform_job.py`` (``epochal package-job``): no ``impl`` needed."""
    from conformance.spark.job import InputError

    p = argparse.ArgumentParser(prog="conformance.spark.job", description=DESCRIPTION)
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args, spark=spark)
    except InputError as exc:
        print(f"conform: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # python -m conformance.spark.cli PATH... (the job without impl)
    raise SystemExit(standalone_main(sys.argv[1:]))
