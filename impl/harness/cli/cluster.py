"""``epochal cluster start``: run a local cluster -- ZooKeeper and N brokers -- until Ctrl-C
(:class:`impl.harness.cluster.LocalCluster`).

It records the cluster in ``<data-dir>/cluster.json`` and leaves, for each broker endpoint, a
pointer to that data dir (:mod:`impl.harness.cli.cluster_access`), so that the other cluster
commands find the cluster from ``--bootstrap`` alone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from impl.harness.cli import client_config
from impl.harness.cli.cluster_access import DEFAULT_DATA_DIR, friendly, leave_pointers
from impl.harness.cli.errors import UsageError
from impl.harness.cli.kafka import add_engine_args, run_kafka_cluster
from impl.harness.cli.option_ranges import check_port_span
from impl.harness.cli.output import add_json_flag, print_json, wants_json


def register(sub: Any) -> None:
    cluster = sub.add_parser("cluster", help="run a local cluster (ZooKeeper + brokers)")
    csub = cluster.add_subparsers(dest="action", metavar="ACTION", parser_class=type(cluster))
    csub.required = True
    client_config.register(csub)  # epochal cluster client-config
    p = csub.add_parser("start", help="start ZooKeeper and N brokers; runs until Ctrl-C")
    p.add_argument("--brokers", type=int, default=3, help="brokers to start (default 3)")
    p.add_argument("--zookeeper", metavar="HOST:PORT[,...]",
                   help="use this ZooKeeper ensemble instead of an embedded one")
    p.add_argument("--zk-port", type=int, default=2181, help="embedded ZooKeeper port (default 2181)")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"where logs, traces and cluster.json go (default {DEFAULT_DATA_DIR})")
    p.add_argument("--port-base", type=int, default=9092, help="broker i listens on base+i (default 9092)")
    p.add_argument("--truncation", choices=["kip320", "hw", "design"], default="kip320",
                   help="follower truncation rule (hw = seed 000 as written; default kip320)")
    p.add_argument("--min-insync-replicas", type=int, default=1, help="min.insync.replicas (default 1)")
    p.add_argument("--replica-lag-time-ms", type=int, default=4000, help="replica.lag.time.max.ms (default 4000)")
    p.add_argument("--session-timeout", type=float, default=4.0,
                   help="broker ZooKeeper session timeout in seconds (default 4.0)")
    p.add_argument("--unclean-leader-election", action="store_true",
                   help="unclean.leader.election.enable (default off)")
    p.add_argument("--insecure", action="store_true",
                   help="no authentication and no ZooKeeper ACLs: anyone who can connect can "
                        "change the cluster; for experiments only (docs/security.md)")
    p.add_argument("--tls", action="store_true",
                   help="also TLS on every connection, with a cluster CA made in the data dir "
                        "(docs/security.md)")
    add_engine_args(p)
    add_json_flag(p, "the cluster's endpoints, once it is ready")
    p.set_defaults(func=friendly(start))


def start(args: argparse.Namespace) -> int:
    from impl.harness.cluster import LocalCluster

    _refuse_to_start(args)
    if args.engine == "kafka":
        return run_kafka_cluster(args)
    t0 = time.monotonic()
    cluster = LocalCluster(
        Path(args.data_dir), brokers=args.brokers, zookeeper=args.zookeeper,
        zk_port=None if args.zookeeper else args.zk_port, port_base=args.port_base,
        tick_time_ms=500, truncation=args.truncation,
        min_insync_replicas=args.min_insync_replicas,
        replica_lag_time_ms=args.replica_lag_time_ms,
        zk_session_timeout_s=args.session_timeout,
        unclean_leader_election=args.unclean_leader_election, insecure=args.insecure,
        tls=args.tls)
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C even if inherited ignored
    pointers: list[Path] = []
    try:
        cluster.start()
        endpoints = {b: cluster.endpoint(b) for b in sorted(cluster.configs)}
        pointers = leave_pointers(cluster.data_dir, list(endpoints.values()))
        _print_ready(args, cluster, endpoints, time.monotonic() - t0)
        while not stop:
            time.sleep(0.5)
            for proc in cluster.procs.values():
                proc.poll()  # reap brokers killed by `epochal broker kill` (they stay down)
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping cluster ...", file=sys.stderr, flush=True)
        for pointer in pointers:
            pointer.unlink(missing_ok=True)
        _adopt_restarted(cluster)
        cluster.stop()
    return 0


def _refuse_to_start(args: argparse.Namespace) -> None:
    """A broker count out of range, a cluster already running from the data dir, or a port
    already taken: a UsageError, before anything starts."""
    from impl.harness.cluster import pid_alive, read_state

    if args.brokers < 1 or args.brokers > 64:
        raise UsageError("--brokers must be between 1 and 64")
    data_dir = Path(args.data_dir)
    with contextlib.suppress(FileNotFoundError, ValueError):
        state = read_state(data_dir)
        if pid_alive(int(state.get("supervisor_pid", -1))):
            raise UsageError(f"a cluster is already running from {data_dir} "
                             f"(pid {state['supervisor_pid']})")
    check_port_span(args.port_base, 2 * args.brokers)
    ports = [args.port_base + i for i in range(2 * args.brokers)]  # and the Kafka listeners
    if not args.zookeeper:
        ports.append(args.zk_port)
    busy = [p for p in ports if not _port_free("127.0.0.1", p)]
    if busy:
        raise UsageError(f"port(s) {', '.join(map(str, busy))} already in use "
                         "(use --port-base / --zk-port)")


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _print_ready(args: argparse.Namespace, cluster: Any, endpoints: dict[int, tuple[str, int]],
                 seconds: float) -> None:
    """The ready cluster: its ZooKeeper, brokers, data dir and security, as lines or as the
    one ``--json`` object."""
    if wants_json(args):
        print_json(args, 0, zookeeper=cluster.zookeeper, embedded_zookeeper=not args.zookeeper,
                   data_dir=str(cluster.data_dir), run_id=cluster.run_id,
                   brokers=[{"id": b, "host": h, "port": port, "pid": cluster.procs[b].pid}
                            for b, (h, port) in endpoints.items()])
        sys.stdout.flush()
        return
    print(f"zookeeper  {cluster.zookeeper}" + ("" if args.zookeeper else " (embedded)"))
    for b, (host, port) in endpoints.items():
        print(f"broker {b}   {host}:{port}  pid {cluster.procs[b].pid}")
    print(f"data dir   {cluster.data_dir}  (traces in {cluster.files.traces})")
    print("security   " + ("NONE (--insecure): anyone who can connect can change the cluster"
                           if args.insecure else "SCRAM-SHA-256, ZooKeeper SASL sign-in and ACLs; secret in "
                           f"{cluster.files.security} (docs/security.md)")
          + ("; TLS with the cluster CA" if args.tls else ""))
    print(f"ready in {seconds:.1f}s; run id {cluster.run_id}; Ctrl-C to stop", flush=True)


def _adopt_restarted(cluster: Any) -> None:
    """Brokers started with `epochal broker start` are not our children: stop them too."""
    from impl.harness.cluster import pid_alive, read_state

    with contextlib.suppress(Exception):
        state = read_state(cluster.data_dir)
        known = {p.pid for p in cluster.procs.values()}
        for info in state["brokers"].values():
            pid = int(info["pid"])
            if pid not in known and pid_alive(pid):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGTERM)
