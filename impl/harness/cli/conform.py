"""``epochal conform``: judge recorded traces against the model with the Spark job.

The arguments and the run are the job's own (:mod:`conformance.spark.cli`, shared with
``spark-submit``); here local input is looked at before Spark starts (``readable_input``),
unusable input is the command's one-line usage error, ``--json`` prints the verdict object
(``impl.harness.cli.verdict``), and the HTML report is written: ``report.html`` under
``--out`` (a local directory) and ``--html FILE`` -- every group's verdict, and each
non-conforming group drawn up to its first divergence (``impl.harness.report``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from conformance.spark.cli import DESCRIPTION, add_arguments
from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import FOUND
from impl.harness.cli.heartbeat import Heartbeat
from impl.harness.cli.html_output import add_html_flag, check_writable
from impl.harness.cli.html_output import write as write_html
from impl.harness.cli.output import print_json
from impl.harness.cli.verdict import FOLLOWS_MODEL, verdict_of, violation_object

WELL_FORMED = "records_well_formed"
"""What ``--strict`` holds a corpus to besides conformance: every record is one the trace
schema accepts (none quarantined)."""

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
        _log(f"report written to {written}")
    write_html(args, writer)


def _log(message: str) -> None:
    """In the job's own progress format: one more stage of the run, not a stray line."""
    print(f"[conform {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def readable_input(paths: list[str]) -> None:
    """Refuse local input that holds no trace record before Spark starts (10-25 s): no trace
    file under the paths, or none with a record the schema accepts.  The first valid record
    ends the look, so a real corpus costs one file's read.  Other filesystems (``hdfs://``)
    and glob patterns are the job's to list."""
    from conformance.spark.job import InputError
    from conformance.spark.read import display_path, list_local
    from traces.reader import TRACE_GLOB, iter_file

    local = [p for p in map(_local, paths) if p is not None and not any(c in p for c in "*?[")]
    if len(local) < len(paths):
        return
    files: list[str] = []
    for p in local:
        if not Path(p).exists():
            raise InputError(f"no such file or directory: {p}")
        files += [display_path(u) for u in list_local(str(Path(p).resolve()))] if Path(p).is_dir() else [p]
    if not files:
        raise InputError(f"no trace files under {', '.join(paths)} (looked for {TRACE_GLOB})")
    reasons: dict[str, int] = {}
    for name in files:
        try:
            data = Path(name).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {name}: {exc.strerror or exc}") from None
        for _line, event, reason, _raw in iter_file(name, data):
            if event is not None:
                return
            kind = str(reason).split(":")[0]
            reasons[kind] = reasons.get(kind, 0) + 1
    found = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "none"
    raise InputError(f"no readable trace records in {len(files)} files (malformed: {found})")


def conform_document(args: argparse.Namespace, outcome: Any) -> dict[str, Any]:
    """The verdict object's fields of a judged corpus: the configuration judged against (and
    how), the first non-conforming group as the violation (a trace, not a model run: no
    steps), and the counts, timings and verdicts of ``summary.json``."""
    from conformance.spark.report import as_json

    fields = as_json(outcome)
    code = fields.pop("exit_code")
    first = next((v for v in fields["verdicts"] if v.get("status") == "violates"), None)
    violation = None
    if first is not None:
        label = f"{first['scenario']} {first['topic']}-{first['partition']}"
        message = first.get("reason") or f"the trace breaks the model after {first.get('matched')} events"
        violation = violation_object(first.get("property") or FOLLOWS_MODEL, message, label, [])
    elif code == FOUND:  # every group conforms, but --strict fails the quarantined records
        violation = violation_object(WELL_FORMED, f"{fields['malformed']} records quarantined: {fields['quarantined']}",
                                     "--strict", [])
    config = {"name": args.config, "judge": args.judge, "strict": args.strict, "paths": list(args.paths)}
    return {"exit_code": code, "verdict": verdict_of(code), "config": config, "violation": violation, **fields}


def run(args: argparse.Namespace) -> int:
    from conformance.spark.job import InputError, conform, render

    check_writable(args)
    try:
        readable_input(args.paths)
        with Heartbeat(_log) as beat:  # a stage of a large corpus may say nothing for minutes

            def stage(message: str) -> None:
                _log(message)
                beat.phase(message)

            outcome = conform(args.paths, args.out, master=args.master, config=args.config, judge=args.judge,
                              strict=args.strict, log=stage)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        fields = conform_document(args, outcome)
        print_json(args, fields.pop("exit_code"), **fields)
    else:
        print(render(outcome))
    report(args, outcome)
    return outcome.exit_code
