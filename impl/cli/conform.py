"""``epochal conform``: judge recorded traces against the model with the Spark job.

The arguments and the run are the job's own (:mod:`conformance.spark.cli`, shared with
``spark-submit``); here its unusable-input error becomes the command's one-line usage error.
"""

from __future__ import annotations

import argparse

from conformance.spark.cli import DESCRIPTION, add_arguments
from conformance.spark.cli import run as run_job
from impl.cli.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conform", help=DESCRIPTION, description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.spark.job import InputError

    try:
        return run_job(args)
    except InputError as exc:
        raise UsageError(str(exc)) from None
