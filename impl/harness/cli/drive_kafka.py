"""``epochal drive --engine kafka``: a path of model steps driven on real Apache Kafka
(:mod:`impl.harness.kafka.drive`, docs/drive.md "Real Kafka").

``--json`` prints the verdict object (docs/cli.md) with the report under ``drive``; the
violation of a divergence has no model steps (the run is Kafka's trace, judged as
``epochal conform`` judges one).  What the engine does not have -- a counterexample path,
generated cases, the admin knobs, the HTML report -- is refused in one line (exit 2) before any process starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from impl.harness.cli.errors import UsageError
from impl.harness.cli.verdict import print_verdict

if TYPE_CHECKING:
    from impl.harness.kafka.drive import KafkaDriveReport

ENGINES = ("epochal", "kafka")


def add_kafka_engine_arguments(p: argparse.ArgumentParser) -> None:
    from impl.harness.kafka.paths import PATHS

    p.add_argument("--engine", choices=ENGINES, default="epochal",
                   help="the brokers driven: epochal's own (default), or real Apache Kafka "
                   f"(--profile; paths: {', '.join(PATHS)})")
    p.add_argument("--profile", choices=("ibp-2.6", "3.9"),
                   help="with --engine kafka: the Kafka profile (default ibp-2.6), judged by kafka26 or kafka39")


UNSUPPORTED = (("--path", "path"), ("--generate", "generate"), ("--html", "html"),
               ("--budget", "budget"), ("--seed", "seed"))
"""Options the Kafka engine does not take yet."""


def run_kafka_drive(args: argparse.Namespace, knobs_given: list[str]) -> int:
    """``knobs_given``: the model knobs' flags on the command line (none applies to Kafka)."""
    from conformance.kafka.adapter import CONFIGS
    from impl.harness.kafka.drive import KafkaDriveError, KafkaDriver, render
    from impl.harness.kafka.paths import PATHS
    from model.config import NAMED

    used = [flag for flag, dest in UNSUPPORTED if getattr(args, dest, None)] + knobs_given
    if args.brokers != 2:
        used.append("--brokers")
    if used:
        raise UsageError(f"{', '.join(used)} not supported with --engine kafka (a --scenario of "
                         f"{', '.join(PATHS)}, at --profile ibp-2.6 or 3.9)")
    profile = args.profile or "ibp-2.6"
    if args.config is not None and args.config not in NAMED:
        raise UsageError(f"unknown configuration {args.config!r}; the profile's is {CONFIGS[profile]}")
    if args.scenario not in PATHS:
        raise UsageError(f"{args.scenario!r} is not a Kafka path; choose one of {', '.join(PATHS)}")
    if args.step_timeout <= 0:
        raise UsageError("--step-timeout must be positive")
    data_dir = Path(args.data_dir) if args.data_dir else None
    if data_dir is not None and data_dir.exists() and any(data_dir.iterdir()):
        raise UsageError(f"--data-dir {data_dir} is not empty")
    progress = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    jars = _jars()
    try:
        report = KafkaDriver(args.scenario, profile, data_dir, args.step_timeout, progress, jars, args.config).run()
    except KafkaDriveError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, TimeoutError, RuntimeError) as exc:  # no Java, a broker that exited, no controller
        raise UsageError(f"could not start the Kafka cluster: {exc}") from None
    if args.json:
        config, violation = verdict_fields(report)
        return print_verdict(args, report.exit_code, config, violation, drive=report.as_dict())
    print(render(report))
    return report.exit_code


def verdict_fields(report: KafkaDriveReport) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The verdict object's configuration (the profile's, the engine, the path) and violation:
    the property a reproduced run breaks, or ``follows_model`` for a divergence."""
    from impl.harness.cli.verdict import FOLLOWS_MODEL, violation_object
    from impl.harness.kafka.drive import DIVERGED, REPRODUCED

    config = {"name": report.config, "engine": "kafka", "profile": report.profile, "path": report.path}
    if report.verdict == REPRODUCED and report.violated is not None:
        at = report.steps[-1]
        return config, violation_object(report.violated, f"step {at.n} ({at.step.describe()}): {at.note}",
                                        "reproduced", [])
    d = report.divergence
    if report.verdict != DIVERGED or d is None:
        return config, None
    message = f"step {d.get('step')} ({d.get('action')}): {d.get('implementation_did')}"
    return config, violation_object(FOLLOWS_MODEL, message, f"kafka {report.profile} {report.path}", [])


def _jars() -> object:
    """Kafka's jars, fetched once (``epochal kafka fetch``); no Maven or no network: one line."""
    import shutil

    from impl.harness.kafka import KafkaFetchError, fetch

    if shutil.which("java") is None:
        raise UsageError("--engine kafka needs java on PATH (docs/kafka.md)")
    try:
        return fetch()
    except KafkaFetchError as exc:
        raise UsageError(str(exc)) from None
