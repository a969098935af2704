"""``epochal kafka fetch`` and ``epochal cluster start --engine kafka``: real Apache Kafka.

``kafka fetch`` resolves Kafka's jars with Maven once and caches them (docs/kafka.md);
``cluster start --engine kafka`` runs N real Kafka brokers on the embedded ZooKeeper
until Ctrl-C, in one of the two profiles (:data:`impl.harness.kafka.PROFILES`).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import Any

from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import add_json_flag, print_json, wants_json

ENGINES = ("epochal", "kafka")


def register(sub: Any) -> None:
    kafka = sub.add_parser("kafka", help="real Apache Kafka for the harness: fetch its jars")
    ksub = kafka.add_subparsers(dest="action", metavar="ACTION", parser_class=type(kafka))
    ksub.required = True
    p = ksub.add_parser("fetch", help="resolve Kafka's jars with Maven (once) and cache them")
    _version_arg(p)
    add_json_flag(p, "the version, cache directory and jar count")
    p.set_defaults(func=cmd_kafka_fetch)
    r = ksub.add_parser("record", help="run a scenario on real Kafka and adapt its logs into a trace "
                                      "that `epochal conform` judges (docs/kafka.md)")
    from impl.harness.kafka.scenarios import SCENARIOS

    r.add_argument("--scenario", choices=SCENARIOS, required=True, help="whom kill -9 hits: the leader, the controller, or one broker that is both")
    r.add_argument("--profile", choices=("ibp-2.6", "3.9"), default="ibp-2.6")
    r.add_argument("--out", required=True, metavar="DIR",
                   help="the trace (broker-N.jsonl, harness.jsonl) goes here, the Kafka run under DIR/_kafka-run")
    _version_arg(r)
    r.set_defaults(func=cmd_kafka_record)


def _version_arg(p: argparse.ArgumentParser, flag: str = "--version") -> None:
    from impl.harness.kafka import DEFAULT_VERSION

    p.add_argument(flag, dest="kafka_version", default=DEFAULT_VERSION, metavar="V",
                   help=f"Kafka release, 3.9.x for ZooKeeper mode (default {DEFAULT_VERSION})")


def add_engine_args(start: argparse.ArgumentParser) -> None:
    """``cluster start``'s choice of broker: the project's own, or real Kafka."""
    from impl.harness.kafka import DEFAULT_PROFILE, PROFILES

    start.add_argument("--engine", choices=ENGINES, default="epochal",
                       help="the brokers: epochal's own (default) or real Apache Kafka "
                            "(fetched with `epochal kafka fetch`; docs/kafka.md)")
    start.add_argument("--kafka-profile", choices=sorted(PROFILES), default=DEFAULT_PROFILE,
                       help=f"with --engine kafka: {'; '.join(f'{n}: {p.summary}' for n, p in PROFILES.items())} "
                            f"(default {DEFAULT_PROFILE})")
    _version_arg(start, "--kafka-version")


def _fetch(args: argparse.Namespace) -> Any:
    from impl.harness.kafka import KafkaFetchError, fetch
    from impl.harness.kafka.fetch import cache_dir, cached

    if cached(args.kafka_version) is None:
        print(f"resolving org.apache.kafka:kafka_2.13:{args.kafka_version} with Maven into "
              f"{cache_dir(args.kafka_version)} ...", file=sys.stderr, flush=True)
    try:
        return fetch(args.kafka_version)
    except KafkaFetchError as exc:
        raise UsageError(str(exc)) from None


def cmd_kafka_fetch(args: argparse.Namespace) -> int:
    jars = _fetch(args)
    if wants_json(args):
        return print_json(args, 0, version=jars.version, directory=str(jars.directory),
                          jars=len(jars.jars), cached=jars.cached, seconds=round(jars.seconds, 1))
    how = "already cached" if jars.cached else f"fetched in {jars.seconds:.1f}s"
    print(f"kafka {jars.version}: {len(jars.jars)} jars in {jars.directory / 'lib'} ({how})")
    return 0


def cmd_kafka_record(args: argparse.Namespace) -> int:
    """``kafka record``: the scenario on a fresh cluster, then its logs as a trace."""
    from pathlib import Path

    from conformance.kafka.adapter import AdapterError, adapt, model_config, to_records, write_trace
    from impl.harness.kafka.scenarios import ScenarioError, run_scenario

    out = Path(args.out)
    run_dir = out / "_kafka-run"  # "_": the trace reader skips it (traces/SCHEMA.md section 5)
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"{run_dir} is not empty: record into a new --out")
    jars = _fetch(args)
    try:
        run_scenario(args.scenario, run_dir, args.profile, jars=jars)
        records = to_records(adapt(run_dir), f"kafka-{args.scenario}-{args.profile}")
    except (ScenarioError, AdapterError) as exc:
        raise UsageError(str(exc)) from None
    written = write_trace(records, out)
    print(f"{len(records)} events in {len(written)} files under {out}; "
          f"judge with: epochal conform {out} --config {model_config(run_dir)}")
    return 0


def run_kafka_cluster(args: argparse.Namespace) -> int:
    """``cluster start --engine kafka``: brokers 1..N until Ctrl-C or SIGTERM."""
    from impl.harness.kafka import KafkaCluster

    unsupported = [flag for flag, used in (("--zookeeper", args.zookeeper), ("--insecure", args.insecure),
                                           ("--tls", args.tls), ("--truncation", args.truncation != "kip320"))
                   if used]
    if unsupported:
        raise UsageError(f"{', '.join(unsupported)} not supported with --engine kafka (docs/kafka.md)")
    jars = _fetch(args)
    t0 = time.monotonic()
    cluster = KafkaCluster(Path(args.data_dir), brokers=args.brokers, profile=args.kafka_profile,
                           jars=jars, zk_port=args.zk_port, port_base=args.port_base,
                           session_timeout_ms=int(args.session_timeout * 1000),
                           replica_lag_time_ms=args.replica_lag_time_ms,
                           min_insync_replicas=args.min_insync_replicas,
                           unclean_leader_election=args.unclean_leader_election)
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            cluster.start()
        except (RuntimeError, TimeoutError, ValueError) as exc:
            raise UsageError(f"Kafka cluster did not start: {exc}") from None
        brokers = [{"id": b, "host": k.settings.host, "port": k.settings.port, "pid": k.pid,
                    "dir": str(k.settings.broker_dir)} for b, k in sorted(cluster.brokers.items())]
        if wants_json(args):
            print_json(args, 0, engine="kafka", kafka_version=jars.version, profile=cluster.profile.name,
                       zookeeper=cluster.zookeeper, data_dir=str(cluster.data_dir), brokers=brokers)
            sys.stdout.flush()
        else:
            print(f"zookeeper  {cluster.zookeeper} (embedded; SASL-signed ACLs)")
            for b in brokers:
                print(f"broker {b['id']}   {b['host']}:{b['port']}  pid {b['pid']}  logs {b['dir']}/logs")
            print(f"kafka      {jars.version}, profile {cluster.profile.name}: {cluster.profile.summary}")
            print(f"ready in {time.monotonic() - t0:.1f}s; Ctrl-C to stop", flush=True)
        while not stop:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping Kafka cluster ...", file=sys.stderr, flush=True)
        cluster.stop(graceful=True)
    return 0
