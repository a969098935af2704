"""``epochal package-job``: the conformance job as files ``spark-submit`` takes.

Writes ``DIR/epochal-job.zip`` (the job's modules) and ``DIR/conform_job.py`` (the script to
submit); what goes into them is decided by :mod:`conformance.spark.package`, and how to
submit them to YARN or Kubernetes is in ``docs/spark-submit.md``.
"""

from __future__ import annotations

import argparse
from typing import Any

from conformance.spark.package import ENTRY_NAME, REQUIREMENTS, ZIP_NAME, PackageError, build
from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import add_json_flag, print_json

DESCRIPTION = (f"write {ZIP_NAME} and {ENTRY_NAME} for spark-submit "
               f"(the cluster's Python needs {', '.join(REQUIREMENTS)})")


def _command(args: argparse.Namespace) -> int:
    try:
        zip_path, entry = build(args.out)
    except PackageError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        return print_json(args, 0, zip=str(zip_path), entry=str(entry))
    print(zip_path)
    print(entry)
    print(f"submit with: spark-submit --master URL --py-files {zip_path} {entry} PATH... --out DIR")
    return 0


def register(subparsers: Any) -> None:
    """Add ``epochal package-job`` to the ``epochal`` command."""
    p = subparsers.add_parser("package-job", help=DESCRIPTION, description=DESCRIPTION)
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"directory to write {ZIP_NAME} and {ENTRY_NAME} into (made if missing)")
    add_json_flag(p, "the two paths written")
    p.set_defaults(func=_command)
