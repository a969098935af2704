"""``epochal chaos``: a seeded fault schedule against a real cluster, and a verdict on every
acknowledged write (the run is :mod:`impl.harness.chaos`).

Exit code 0 on pass, 1 on any finding, 2 on bad arguments or a cluster that cannot run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from impl.harness.chaos.clients import CLIENTS
from impl.harness.chaos.run import MAX_BROKERS, ChaosError, ChaosReport, ChaosRun
from impl.harness.chaos.schedule import MIN_INSYNC, REPLICATION
from impl.harness.cli.chaos_verdict import chaos_document
from impl.harness.cli.errors import UsageError
from impl.harness.cli.verdict import print_verdict
from impl.harness.cluster import PLACEHOLDERS, BrokerCommand, BrokerCommandError

if TYPE_CHECKING:
    from impl.harness.chaos.kafka_run import KafkaChaosReport

ACKS = {"all": -1, "-1": -1, "1": 1}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chaos", help="seeded faults against a real cluster; judge every "
                                     "acknowledged write and the traces")
    p.add_argument("--seed", type=int, required=True, help="the schedule's seed (same seed, same schedule)")
    p.add_argument("--duration", type=float, required=True, metavar="SECONDS",
                   help="seconds of workload and faults (the run adds start, heal and judging)")
    p.add_argument("--brokers", type=int, default=3, help=f"{REPLICATION} to {MAX_BROKERS} (default 3)")
    p.add_argument("--unclean-leader-election", dest="unclean", action="store_true",
                   help="enable unclean leader election (unsafe; default off)")
    p.add_argument("--unclean", dest="unclean", action="store_true", help=argparse.SUPPRESS)  # older spelling
    p.add_argument("--acks", default="all", help="all (default) or 1 (unsafe)")
    p.add_argument("--admin", action="store_true",
                   help="mix admin operations into the schedule: preferred-replica elections, "
                        "controlled shutdowns, and deletion and re-creation of a second topic "
                        "the workload also writes to; with --engine kafka also partitions added to it, "
                        "through Kafka's admin client (default off)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="the run's directory (cluster data, traces, verdicts); default a new temp dir")
    p.add_argument("--json", action="store_true",
                   help="print the report as one JSON object on stdout (progress on stderr; shape: docs/cli.md)")
    p.add_argument("--insecure", action="store_true",
                   help="run the cluster without authentication or ZooKeeper ACLs, to compare "
                        "(default: authenticated; docs/security.md)")
    p.add_argument("--tls", action="store_true",
                   help="also TLS on every broker connection (docs/security.md)")
    p.add_argument("--client", default="epochal", metavar="|".join(CLIENTS),
                   help="the client the workload produces and reads back through: epochal "
                        "(default: Epochal's own, each value sent once) or one of Kafka's own "
                        "clients through the brokers' Kafka listeners -- confluent "
                        "(confluent-kafka) or kafka-python, idempotent, acks=all, retrying as "
                        "they do (docs/chaos.md)")
    p.add_argument("--engine", choices=("epochal", "kafka"), default="epochal",
                   help="the brokers: epochal (default) or real Apache Kafka 3.9 in ZooKeeper mode "
                        "(docs/kafka.md; three brokers, a confluent-kafka producer, kills and pauses, "
                        "the run's logs judged against the model)")
    p.add_argument("--judge-seconds", type=float, default=None, metavar="SECONDS",
                   help="with --engine kafka: the wall-clock budget of judging each partition's trace "
                        "(default 60; a judgement cut short is inconclusive, no pass; 0: not judged)")
    p.add_argument("--kafka-profile", choices=("ibp-2.6", "3.9"), default="3.9",
                   help="with --engine kafka: the inter-broker protocol (default 3.9)")
    add_broker_cmd_args(p)
    p.set_defaults(func=run)


KAFKA_REFUSES = (("--insecure", "insecure"), ("--tls", "tls"), ("--broker-cmd", "broker_cmd"))


def run_kafka(args: argparse.Namespace) -> int:
    """``--engine kafka``: :mod:`impl.harness.chaos.kafka_run` on real Kafka brokers."""
    import tempfile

    from impl.harness.chaos import kafka_run
    from impl.harness.chaos.clients import client_missing
    from impl.harness.kafka import KafkaCluster

    for flag, name in KAFKA_REFUSES:
        if getattr(args, name):
            raise UsageError(f"{flag} does not apply to --engine kafka")
    if args.acks != "all" or args.brokers != kafka_run.BROKERS or args.client not in ("epochal", "confluent"):
        raise UsageError(f"--engine kafka runs {kafka_run.BROKERS} brokers, acks=all and the confluent client")
    seconds = kafka_run.JUDGE_SECONDS if args.judge_seconds is None else args.judge_seconds
    if seconds < 0:
        raise UsageError(f"--judge-seconds must be 0 or more, got {seconds:g}")
    if (missing := client_missing("confluent")) is not None:
        raise UsageError(missing)
    stream = sys.stderr if args.json else sys.stdout

    def log(msg: str) -> None:
        print(msg, file=stream, flush=True)

    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="epochal-kafka-chaos-"))
    log(f"epochal chaos --engine kafka: seed {args.seed}, {args.duration:g} s, profile {args.kafka_profile}, "
        f"unclean election {'on' if args.unclean else 'off'}, min.insync.replicas={kafka_run.MIN_INSYNC}, "
        f"client confluent{', admin operations on' if args.admin else ''}, under {out}")
    for wait, kind in kafka_run.schedule(args.seed, args.duration, args.unclean, args.admin):
        log(f"  after {wait:.1f} s: {kind}")
    try:
        cluster = KafkaCluster(out, profile=args.kafka_profile, **kafka_run.cluster_settings(args.unclean))
        report = kafka_run.run(args.seed, args.duration, cluster, args.kafka_profile, args.unclean, log=log,
                               judge_seconds=seconds, admin=args.admin)
    except (OSError, TimeoutError, RuntimeError) as exc:
        raise UsageError(f"could not run the Kafka cluster: {exc}") from None
    code = 0 if report.passed else 1
    if args.json:
        return print_chaos(args, report, code)
    else:
        log(kafka_run.render(report))
    return code


def print_chaos(args: argparse.Namespace, report: ChaosReport | KafkaChaosReport, code: int) -> int:
    """The run's report as the verdict object (:mod:`impl.harness.cli.chaos_verdict`)."""
    config, violation, fields = chaos_document(report)
    return print_verdict(args, code, config, violation, **fields)


def add_broker_cmd_args(p: argparse.ArgumentParser) -> None:
    """``--broker-cmd`` / ``--broker-cmd-for``: a port's broker in the harness (docs/ports.md)."""
    p.add_argument("--broker-cmd", default=None, metavar="TEMPLATE",
                   help="start brokers with this command instead of the Python broker, e.g. "
                        "'my-broker {id} {port} {zookeeper} {data_dir}'; placeholders: "
                        + " ".join("{" + k + "}" for k in PLACEHOLDERS) + " (docs/ports.md)")
    p.add_argument("--broker-cmd-for", default=None, metavar="IDS",
                   help="the brokers --broker-cmd starts, e.g. 1,2 (default: all)")


def broker_command(args: argparse.Namespace, brokers: int) -> BrokerCommand | None:
    """The parsed ``--broker-cmd`` for a cluster of ``brokers``, or None; bad input: UsageError."""
    if args.broker_cmd is None:
        if args.broker_cmd_for is not None:
            raise UsageError("--broker-cmd-for needs --broker-cmd")
        return None
    try:
        cmd = BrokerCommand.parse(args.broker_cmd, args.broker_cmd_for)
        cmd.check_brokers(brokers)
    except BrokerCommandError as exc:
        raise UsageError(str(exc)) from None
    return cmd


def run(args: argparse.Namespace) -> int:
    if args.engine == "kafka":
        return run_kafka(args)
    if args.judge_seconds is not None:
        raise UsageError("--judge-seconds applies to --engine kafka (the Epochal engine's traces are judged by Spark)")
    if args.acks not in ACKS:
        raise UsageError(f"--acks must be all or 1, got {args.acks!r}")
    acks = ACKS[args.acks]
    stream = sys.stderr if args.json else sys.stdout

    def log(msg: str) -> None:
        print(msg, file=stream, flush=True)

    out = Path(args.out) if args.out else None
    broker_cmd = broker_command(args, args.brokers)
    try:
        chaos = ChaosRun(args.seed, args.duration, args.brokers, acks, args.unclean, out, log=log,
                         admin=args.admin, broker_cmd=broker_cmd, insecure=args.insecure,
                         tls=args.tls, client=args.client)
    except ChaosError as exc:
        raise UsageError(str(exc)) from None
    log(f"epochal chaos: seed {args.seed}, {args.duration:g} s, {args.brokers} brokers, "
        f"acks={'1' if acks == 1 else 'all'}, unclean election {'on' if args.unclean else 'off'}, "
        f"min.insync.replicas={MIN_INSYNC}" + (", admin operations on" if args.admin else "")
        + (", INSECURE: no authentication" if args.insecure else "") + (", TLS" if args.tls else "")
        + f", client {args.client}")
    if broker_cmd is not None:
        which = "every broker" if broker_cmd.brokers is None else \
            "brokers " + ",".join(map(str, sorted(broker_cmd.brokers)))
        log(f"{which} started by: {broker_cmd.template}")
    log(f"schedule ({len(chaos.schedule)} faults):")
    for f in chaos.schedule:
        log(f"  {f.index:2d}  {f.describe()}")
    try:
        report = chaos.run()
    except (OSError, TimeoutError, RuntimeError) as exc:
        if out is None:
            shutil.rmtree(chaos.data_dir, ignore_errors=True)
        raise UsageError(f"could not run the cluster: {exc}") from None
    if args.json:
        return print_chaos(args, report, report.exit_code)
    else:
        log(render_report(report))
    return report.exit_code


def render_report(r: ChaosReport) -> str:
    """The report's text: the counts, the conformance, every finding, and the verdict."""
    v = r.verdict
    faults = len(r.faults)
    lines = [f"writes ({r.client} client): {v.attempted} attempted, {v.acknowledged} acknowledged, "
             f"{v.lost} lost, {v.duplicated} duplicated; {faults} faults injected"]
    c = r.conformance
    if c.get("skipped"):
        lines.append("conformance: not judged")
    elif "groups" in c:
        lines.append(f"conformance ({c['config']}): {c['conforming']} of {c['groups']} "
                     f"trace groups conform")
        if c.get("render"):
            lines.append(c["render"])
    for finding in v.findings + ([c["problem"]] if c.get("problem") else []):
        lines.append(f"  - {finding}")
    lines.append(f"VERDICT: {'PASS' if r.passed else 'FAIL'} (seed {r.seed}, client {r.client}, "
                 f"{r.seconds:.0f} s, data in {r.data_dir})")
    return "\n".join(lines)

