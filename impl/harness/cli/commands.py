"""``epochal cluster|topics|quotas|produce|consume|broker``: the command line of the implementation.

Every command finds the cluster through ``--bootstrap HOST:PORT`` (default
``127.0.0.1:9092``, Kafka's convention).  ``broker kill|pause|resume|start`` act on the broker
processes, which ``<data-dir>/cluster.json`` (written by ``epochal cluster start``) lists;
they find that file from ``--bootstrap`` through the pointer ``cluster start`` leaves for
each broker endpoint (``CLUSTERS``), or from ``--data-dir`` where one is given.

Every failure is one line on stderr and exit code 2 (:class:`impl.harness.cli.errors.UsageError`),
and so is a request that would do nothing (resuming a broker that is not paused, removing a
quota that does not exist): it says so, and changes and records nothing.  Every command takes
``--json`` (one object on stdout; docs/cli.md).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from impl.harness.cli import client_config
from impl.harness.cli.errors import UsageError
from impl.harness.cli.numbers import check_port_span, endpoints
from impl.harness.cli.output import add_json_flag, print_json, wants_json
from impl.node.layout import DataDir

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_DATA_DIR = os.environ.get("EPOCHAL_DATA_DIR", "runs/cluster")
CLUSTERS = Path(os.environ.get("EPOCHAL_CLUSTERS", Path(tempfile.gettempdir()) / f"epochal-clusters-{os.getuid()}"))
"""Where ``cluster start`` leaves, per broker endpoint, the path of its data dir (removed
when it stops), so that ``broker`` commands find the cluster from ``--bootstrap`` alone."""


def _say(args: argparse.Namespace, text: str) -> None:
    """A command's human-readable line: stdout, or stderr under ``--json`` (stdout is then
    the one JSON object)."""
    print(text, file=sys.stderr if wants_json(args) else sys.stdout, flush=True)


def _friendly(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn every expected failure into one line (UsageError), never a traceback."""
    from impl.node.client import ClusterUnavailable
    from impl.node.wire import ErrorCode, ProtocolError, RpcError

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        previous = _sign_in(args) if hasattr(args, "bootstrap") else None
        try:
            return func(args)
        except UsageError:
            raise
        except ClusterUnavailable as exc:
            raise UsageError(f"cannot reach the cluster: {exc}") from None
        except RpcError as exc:
            if exc.code == ErrorCode.ILLEGAL_SASL_STATE:  # we did not sign in: no secret found
                raise UsageError(f"{exc} -- the cluster is authenticated: give its --data-dir "
                                 "(docs/security.md)") from None
            raise UsageError(str(exc)) from None
        except KeyError as exc:
            raise UsageError(str(exc.args[0]) if exc.args else "not found") from None
        except (TimeoutError, ProtocolError, FileNotFoundError, ProcessLookupError,
                ValueError, RuntimeError) as exc:
            raise UsageError(str(exc)) from None
        except BrokenPipeError:  # `epochal consume ... | head`: stop quietly
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except OSError as exc:
            raise UsageError(f"{exc.strerror or exc}") from None
        finally:
            if hasattr(args, "bootstrap"):
                from impl.node.auth import credentials

                credentials.set_default(previous)

    return wrapper


def _bootstrap(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT", type=endpoints,
                   help=f"any broker of the cluster (default {DEFAULT_BOOTSTRAP})")
    p.add_argument("--data-dir", default=None,
                   help="the data dir of the running `epochal cluster start`: its secret signs "
                        "this command in (docs/security.md; default: the cluster's that "
                        f"--bootstrap names, else {DEFAULT_DATA_DIR}; none there: no sign-in)")
    add_json_flag(p)


def _sign_in(args: argparse.Namespace) -> Any:
    """Sign this command's connections in with the secret of the cluster's data dir
    (``--data-dir``, or the one ``cluster start`` left a pointer to for ``--bootstrap``);
    a cluster without one (``--insecure``) is spoken to without.  Returns the keyring it
    replaced."""
    from impl.harness.cluster import cluster_keyring
    from impl.node.auth import credentials

    keyring, _ = cluster_keyring(_data_dir(args))
    return credentials.set_default(keyring)


def _principal_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", help="principal the controller mutation quota is charged to")
    p.add_argument("--client-id", help="client id the quota is charged to")


def _entity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", help="user name")
    p.add_argument("--user-default", action="store_true", help="the default user")
    p.add_argument("--client-id", help="client id")
    p.add_argument("--client-default", action="store_true", help="the default client id")


def register(sub: Any) -> None:
    # -- cluster --------------------------------------------------------------------------
    cluster = sub.add_parser("cluster", help="run a local cluster (ZooKeeper + brokers)")
    csub = cluster.add_subparsers(dest="action", metavar="ACTION", parser_class=type(cluster))
    csub.required = True
    client_config.register(csub)  # epochal cluster client-config
    start = csub.add_parser("start", help="start ZooKeeper and N brokers; runs until Ctrl-C")
    start.add_argument("--brokers", type=int, default=3, help="brokers to start (default 3)")
    start.add_argument("--zookeeper", metavar="HOST:PORT[,...]",
                       help="use this ZooKeeper ensemble instead of an embedded one")
    start.add_argument("--zk-port", type=int, default=2181, help="embedded ZooKeeper port (default 2181)")
    start.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"where logs, traces and cluster.json go (default {DEFAULT_DATA_DIR})")
    start.add_argument("--port-base", type=int, default=9092, help="broker i listens on base+i (default 9092)")
    start.add_argument("--truncation", choices=["kip320", "hw", "design"], default="kip320",
                       help="follower truncation rule (hw = seed 000 as written; default kip320)")
    start.add_argument("--min-insync-replicas", type=int, default=1, help="min.insync.replicas (default 1)")
    start.add_argument("--replica-lag-time-ms", type=int, default=4000, help="replica.lag.time.max.ms (default 4000)")
    start.add_argument("--session-timeout", type=float, default=4.0,
                       help="broker ZooKeeper session timeout in seconds (default 4.0)")
    start.add_argument("--unclean-leader-election", action="store_true",
                       help="unclean.leader.election.enable (default off)")
    start.add_argument("--insecure", action="store_true",
                       help="no authentication and no ZooKeeper ACLs: anyone who can connect can "
                            "change the cluster; for experiments only (docs/security.md)")
    start.add_argument("--tls", action="store_true",
                       help="also TLS on every connection, with a cluster CA made in the data dir "
                            "(docs/security.md)")
    add_json_flag(start, "the cluster's endpoints, once it is ready")
    start.set_defaults(func=_friendly(cmd_cluster_start))

    # -- topics ---------------------------------------------------------------------------
    topics = sub.add_parser("topics", help="create, delete, describe, grow, reassign topics")
    tsub = topics.add_subparsers(dest="action", metavar="ACTION", parser_class=type(topics))
    tsub.required = True
    p = tsub.add_parser("create", help="create a topic (no automatic retry when throttled)")
    p.add_argument("topic")
    p.add_argument("--partitions", type=int, default=1, help="partitions (default 1)")
    p.add_argument("--replication-factor", type=int, default=1, help="replicas of each partition (default 1)")
    p.add_argument("--validate-only", action="store_true",
                   help="check the request without creating anything (not charged to the quota)")
    _principal_args(p)
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_topics_create))
    p = tsub.add_parser("delete", help="delete a topic")
    p.add_argument("topic")
    _principal_args(p)
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_topics_delete))
    p = tsub.add_parser("describe", help="leader, leader epoch, ISR and replicas per partition")
    p.add_argument("topic", nargs="?")
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_topics_describe))
    p = tsub.add_parser("add-partitions", help="grow a topic to N partitions in all")
    p.add_argument("topic")
    p.add_argument("--partitions", type=int, dest="count", metavar="N",
                   help="new total number of partitions (Kafka's kafka-topics --alter --partitions)")
    p.add_argument("--count", type=int, dest="count", help=argparse.SUPPRESS)  # the older spelling
    _principal_args(p)
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_topics_add_partitions))
    p = tsub.add_parser("remove-partitions", help="remove partitions from a topic (seed 000 H)")
    p.add_argument("topic")
    p.add_argument("--partition", type=int, action="append", dest="partition_ids", metavar="ID",
                   help="a partition to remove (repeatable)")
    p.add_argument("--partitions", dest="partition_list", help=argparse.SUPPRESS)  # older: a comma list
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_topics_remove_partitions))
    p = tsub.add_parser("reassign", help="move a partition to a new replica set")
    p.add_argument("topic")
    p.add_argument("--partition", type=int, required=True)
    p.add_argument("--replicas", required=True, help="comma-separated broker ids, preferred first")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the move (default 60)")
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_topics_reassign))
    p = tsub.add_parser("elect-preferred", help="move leadership back to the preferred replica")
    p.add_argument("topic")
    p.add_argument("--partition", type=int, required=True)
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_topics_elect_preferred))

    # -- quotas (seed 001) -----------------------------------------------------------------------
    quotas = sub.add_parser("quotas", help="controller mutation quotas per user / client id")
    qsub = quotas.add_subparsers(dest="action", metavar="ACTION", parser_class=type(quotas))
    qsub.required = True
    p = qsub.add_parser("alter", help="set or remove a controller_mutation_rate")
    _entity_args(p)
    p.add_argument("--default", action="store_true",
                   help="the default for every user (same as --user-default)")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--controller-mutation-rate", type=float, metavar="R",
                       help="partition mutations per second (burst: R x 11 samples x 1 s)")
    group.add_argument("--delete", action="store_true", help="remove the quota")
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_quotas_alter))
    p = qsub.add_parser("describe", help="stored quotas, and the controller's metrics")
    _entity_args(p)
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_quotas_describe))

    # -- produce / consume ------------------------------------------------------------------
    p = sub.add_parser("produce", help="send one record per line of stdin (UTF-8), with a key where asked")
    p.add_argument("topic")
    p.add_argument("--key-separator", metavar="SEP",
                   help="each line is KEY SEP VALUE, split at the first SEP (default: no keys; a line without SEP "
                        "is then an error)")
    p.add_argument("--acks", choices=["all", "-1", "1", "0"], default="all", help="acks (default all)")
    p.add_argument("--partition", type=int, help="send every record to this partition (default: round robin)")
    p.add_argument("--retries", type=int, default=None,
                   help="at most this many retries of a retriable error (default: as many as the "
                        "producer's 30 s delivery timeout allows, docs/durability.md)")
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_produce))
    p = sub.add_parser("consume", help="print committed records, one value per line")
    p.add_argument("topic")
    p.add_argument("--from-beginning", action="store_true", help="from offset 0 (default: from the HW on)")
    p.add_argument("--partition", type=int, help="only this partition (default: every partition)")
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N records (default: no limit)")
    p.add_argument("--print-partition", action="store_true", help="prefix each value with its partition")
    p.add_argument("--print-offset", action="store_true", help="prefix each value with its offset")
    p.add_argument("--print-key", action="store_true", help="prefix each value with its key (null: none)")
    p.add_argument("--timeout", type=float, default=5.0,
                   help="stop after this many seconds without a new record (default 5)")
    _bootstrap(p)
    p.set_defaults(func=_friendly(cmd_consume))

    # -- broker faults ------------------------------------------------------------------------
    broker = sub.add_parser("broker", help="kill -9, pause (SIGSTOP), resume or start a broker")
    bsub = broker.add_subparsers(dest="action", metavar="ACTION", parser_class=type(broker))
    bsub.required = True
    for action, text in [("kill", "kill -9 the broker (recorded as broker_crash)"),
                         ("pause", "SIGSTOP the broker (broker_pause)"),
                         ("resume", "SIGCONT the broker (broker_resume)"),
                         ("start", "start a stopped or killed broker again")]:
        p = bsub.add_parser(action, help=text)
        p.add_argument("broker_id", type=int, metavar="ID")
        _bootstrap(p)  # its --data-dir: the cluster.json to act on, and the secret
        p.set_defaults(func=_friendly(cmd_broker))


# -- implementations ----------------------------------------------------------------------

def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def cmd_cluster_start(args: argparse.Namespace) -> int:
    from impl.harness.cluster import LocalCluster, pid_alive, read_state

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
    t0 = time.monotonic()
    cluster = LocalCluster(
        data_dir, brokers=args.brokers, zookeeper=args.zookeeper,
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
        pointers = _leave_pointers(cluster.data_dir, list(endpoints.values()))
        if wants_json(args):
            print_json(args, 0, zookeeper=cluster.zookeeper, embedded_zookeeper=not args.zookeeper,
                       data_dir=str(cluster.data_dir), run_id=cluster.run_id,
                       brokers=[{"id": b, "host": h, "port": port, "pid": cluster.procs[b].pid}
                                for b, (h, port) in endpoints.items()])
            sys.stdout.flush()
        else:
            print(f"zookeeper  {cluster.zookeeper}" + ("" if args.zookeeper else " (embedded)"))
            for b, (host, port) in endpoints.items():
                print(f"broker {b}   {host}:{port}  pid {cluster.procs[b].pid}")
            print(f"data dir   {cluster.data_dir}  (traces in {cluster.files.traces})")
            print("security   " + ("NONE (--insecure): anyone who can connect can change the cluster"
                                   if args.insecure else "SCRAM-SHA-256 and ZooKeeper digest ACLs; secret in "
                                   f"{cluster.files.security} (docs/security.md)")
                  + ("; TLS with the cluster CA" if args.tls else ""))
            print(f"ready in {time.monotonic() - t0:.1f}s; run id {cluster.run_id}; Ctrl-C to stop",
                  flush=True)
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


def _pointer(host: str, port: int) -> Path:
    return CLUSTERS / f"{host}_{port}"


def _leave_pointers(data_dir: Path, endpoints: list[tuple[str, int]]) -> list[Path]:
    """One file per broker endpoint naming the cluster's data dir (``CLUSTERS``)."""
    CLUSTERS.mkdir(parents=True, exist_ok=True)
    out = []
    for host, port in endpoints:
        pointer = _pointer(host, port)
        pointer.write_text(str(Path(data_dir).resolve()))
        out.append(pointer)
    return out


def _data_dir(args: argparse.Namespace) -> str:
    """The data dir of the cluster a ``broker`` command acts on: ``--data-dir`` if given,
    else the one ``cluster start`` left a pointer to for ``--bootstrap``'s endpoint (checked
    against that cluster's own cluster.json), else the default data dir."""
    if args.data_dir is not None:
        return args.data_dir
    host, _, port = args.bootstrap.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--bootstrap must be HOST:PORT, got {args.bootstrap!r}")
    pointer = _pointer(host, int(port))
    if not pointer.exists():
        return DEFAULT_DATA_DIR
    data_dir = pointer.read_text().strip()
    from impl.harness.cluster import read_state

    try:
        state = read_state(data_dir)
    except (FileNotFoundError, ValueError):
        raise UsageError(f"the cluster at {args.bootstrap} left {data_dir}, which holds no cluster.json "
                         "(give --data-dir)") from None
    if not any(b.get("host") == host and int(b.get("port", -1)) == int(port) for b in state["brokers"].values()):
        raise UsageError(f"{data_dir}/cluster.json lists no broker at {args.bootstrap} (give --data-dir)")
    return data_dir


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


def _admin(args: argparse.Namespace, as_user: bool = True) -> Any:
    """An admin client that does not retry throttled requests: the command says how long
    to wait instead (seed 001), and exits non-zero.  ``as_user=False`` for the quota commands,
    whose ``--user`` names the quota's entity, not who is asking: they sign in as the
    operator (the data dir's secret), since a user may not set quotas -- its own least of all."""
    from impl.node.client import Admin

    return Admin(args.bootstrap, user=getattr(args, "user", None) if as_user else None,
                 client_id=getattr(args, "client_id", None), api_timeout_s=30.0,
                 retry_on_quota_violation=False)


def _throttled(exc: Any, what: str) -> UsageError:
    return UsageError(f"{what} refused by the controller mutation quota; "
                      f"retry in {exc.throttle_time_ms / 1000:.1f}s")


def cmd_topics_create(args: argparse.Namespace) -> int:
    from impl.node.client import ThrottlingQuotaExceeded

    with _admin(args) as admin:
        try:
            admin.create_topic(args.topic, args.partitions, args.replication_factor,
                               validate_only=args.validate_only)
        except ThrottlingQuotaExceeded as exc:
            raise _throttled(exc, f"topic {args.topic} not created:") from None
        if args.validate_only:
            if wants_json(args):
                return print_json(args, 0, topic=args.topic, valid=True, created=False)
            print(f"topic {args.topic}: valid ({args.partitions} partitions, "
                  f"replication factor {args.replication_factor}); nothing created")
            return 0
        return _print_topics(args, admin.describe(args.topic))


def cmd_topics_delete(args: argparse.Namespace) -> int:
    from impl.node.client import ThrottlingQuotaExceeded

    with _admin(args) as admin:
        try:
            admin.delete_topic(args.topic)
        except ThrottlingQuotaExceeded as exc:
            raise _throttled(exc, f"topic {args.topic} not deleted:") from None
    if wants_json(args):
        return print_json(args, 0, topic=args.topic, deleted=True)
    print(f"deleted topic {args.topic}")
    return 0


def _entity(args: argparse.Namespace, need: bool) -> tuple[str | None, str | None]:
    from impl.node.quota import DEFAULT, validate_entity_name

    if args.user and args.user_default:
        raise UsageError("give --user or --user-default, not both")
    if args.client_id and args.client_default:
        raise UsageError("give --client-id or --client-default, not both")
    user = DEFAULT if args.user_default or getattr(args, "default", False) else args.user
    client = DEFAULT if args.client_default else args.client_id
    if need and user is None and client is None:
        raise UsageError("name the quota's entity: --user U, --client-id C (or both), "
                         "--user-default, --client-default or --default")
    validate_entity_name(user, "user")
    validate_entity_name(client, "client id")
    return user, client


def _entity_text(user: str | None, client: str | None) -> str:
    from impl.node.quota import tag_name

    return tag_name((user, client))


def cmd_quotas_alter(args: argparse.Namespace) -> int:
    if args.default and args.user:
        raise UsageError("give --user or --default, not both")
    user, client = _entity(args, need=True)
    rate = None if args.delete else args.controller_mutation_rate
    if rate is not None and not rate > 0:
        raise UsageError(f"--controller-mutation-rate must be positive, got {rate:g}")
    entity = _entity_text(user, client)
    with _admin(args, as_user=False) as admin:
        if rate is None and not any(q["user"] == user and q["client_id"] == client
                                    for q in admin.describe_quotas()["quotas"]):
            raise UsageError(f"no controller_mutation_rate quota for {entity}: nothing removed")
        admin.alter_quota(user, client, rate)
    if wants_json(args):
        return print_json(args, 0, user=user, client_id=client, controller_mutation_rate=rate,
                          removed=rate is None)
    what = "removed" if rate is None else f"set to {rate:g} mutations/s"
    print(f"controller_mutation_rate for {entity}: {what}")
    return 0


def cmd_quotas_describe(args: argparse.Namespace) -> int:
    user, client = _entity(args, need=False)
    with _admin(args, as_user=False) as admin:
        resp = admin.describe_quotas()
    quotas = [q for q in resp["quotas"]
              if (user is None or q["user"] == user) and (client is None or q["client_id"] == client)]
    if wants_json(args):
        return print_json(args, 0, quotas=quotas, metrics=resp.get("metrics", {}))
    shown = 0
    for q in quotas:
        shown += 1
        print(f"{_entity_text(q['user'], q['client_id'])}  "
              f"controller_mutation_rate={q['controller_mutation_rate']:g}")
    if not shown:
        print("(no quotas)")
    for name, m in sorted(resp.get("metrics", {}).items()):
        print(f"metrics {name}  rate={m['rate']:.2f}/s  tokens={m['tokens']:.1f}  "
              f"throttle-time={m['throttle-time']:.0f}ms")
    return 0


def _print_topics(args: argparse.Namespace, topics: dict[str, Any]) -> int:
    """Every partition of ``topics``: a line each, or under ``--json`` the object
    ``{"topics": [{"topic", "partition", "leader", "leader_epoch", "isr", "replicas"}]}``
    (leader -1: none).  Returns the exit code, 0."""
    rows = [{"topic": t, "partition": p, "leader": i.leader, "leader_epoch": i.leader_epoch,
             "isr": list(i.isr), "replicas": list(i.replicas)}
            for t in sorted(topics) for p, i in sorted(topics[t].items())]
    if wants_json(args):
        return print_json(args, 0, topics=rows)
    if not topics:
        print("(no topics)")
    for t in sorted(t for t in topics if not topics[t]):  # every partition removed (seed 000 H)
        print(f"topic {t}  (no partitions)")
    for r in rows:
        leader = r["leader"] if r["leader"] >= 0 else "none"
        print(f"topic {r['topic']}  partition {r['partition']}  leader {leader}  leader_epoch {r['leader_epoch']}  "
              f"isr {','.join(map(str, r['isr']))}  replicas {','.join(map(str, r['replicas']))}")
    return 0


def cmd_topics_describe(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    with Admin(args.bootstrap) as admin:
        return _print_topics(args, admin.describe(args.topic))


def cmd_topics_add_partitions(args: argparse.Namespace) -> int:
    from impl.node.client import ThrottlingQuotaExceeded

    if args.count is None:
        raise UsageError("give --partitions N, the new total number of partitions")
    with _admin(args) as admin:
        try:
            admin.add_partitions(args.topic, args.count)
        except ThrottlingQuotaExceeded as exc:
            raise _throttled(exc, f"partitions of {args.topic} not added:") from None
        return _print_topics(args, admin.describe(args.topic))


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} must be comma-separated integers, got {text!r}") from None


def cmd_topics_remove_partitions(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    ids = list(args.partition_ids or []) + (_ints(args.partition_list, "--partitions") if args.partition_list else [])
    if not ids:
        raise UsageError("name the partitions to remove: --partition ID (repeatable)")
    with Admin(args.bootstrap) as admin:
        admin.remove_partitions(args.topic, ids)
        return _print_topics(args, admin.describe(args.topic))


def cmd_topics_reassign(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    with Admin(args.bootstrap) as admin:
        admin.reassign(args.topic, args.partition, _ints(args.replicas, "--replicas"),
                       wait=args.timeout)
        return _print_topics(args, admin.describe(args.topic))


def cmd_topics_elect_preferred(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    with Admin(args.bootstrap) as admin:
        admin.elect_preferred(args.topic, args.partition)
        time.sleep(0.5)
        return _print_topics(args, admin.describe(args.topic))


def cmd_produce(args: argparse.Namespace) -> int:
    """One record per line of stdin, read as bytes: a line that is not UTF-8 stops the
    command there, and -- like any failure part-way -- it says how many records were
    written before it (those stay written: there is no transaction to undo them)."""
    from impl.node.client import Producer

    acks = {"all": -1, "-1": -1, "1": 1, "0": 0}[args.acks]
    sent = 0
    by_partition: dict[int, int] = {}

    def partial(why: str) -> UsageError:
        where = ", ".join(f"partition {p}: {n}" for p, n in sorted(by_partition.items()))
        return UsageError(f"{why}; {sent} record(s) were produced to {args.topic} before it"
                          + (f" ({where})" if where else "") + " and stay written")

    with Producer(args.bootstrap, acks=acks, retries=args.retries) as producer:
        producer.partitions(args.topic)  # fail fast on an unknown topic
        for n, raw in enumerate(sys.stdin.buffer, 1):
            try:
                value = raw.rstrip(b"\n").decode("utf-8")
            except UnicodeDecodeError as exc:
                raise partial(f"line {n} is not UTF-8 ({exc.reason} at byte {exc.start}): stopped there") from None
            key = None
            if args.key_separator is not None:
                key, sep, value = value.partition(args.key_separator)
                if not sep:
                    raise partial(f"line {n} has no key separator {args.key_separator!r}: stopped there")
            try:
                resp = producer.send(args.topic, value, args.partition, key=key)
            except Exception as exc:  # noqa: BLE001 -- any failure: say what was written first
                raise partial(f"line {n} not produced: {exc}") from None
            sent += 1
            by_partition[resp["partition"]] = by_partition.get(resp["partition"], 0) + 1
    if wants_json(args):
        return print_json(args, 0, topic=args.topic, acks=args.acks, produced=sent,
                          partitions={str(p): n for p, n in sorted(by_partition.items())})
    print(f"produced {sent} record(s) to {args.topic} with acks={args.acks}", file=sys.stderr)
    return 0


def cmd_consume(args: argparse.Namespace) -> int:
    """Committed records until ``--timeout`` seconds pass with none new, or ``--max-messages``;
    each value on a line, after its partition, offset and key where asked (tab-separated)."""
    from impl.node.client import Consumer

    if args.max_messages is not None and args.max_messages < 1:
        raise UsageError("--max-messages must be at least 1")
    records: list[dict[str, Any]] = []
    with Consumer(args.bootstrap) as consumer:
        consumer.assign(args.topic, args.from_beginning)
        if args.partition is not None:
            mine = {(t, p): o for (t, p), o in consumer.positions.items() if p == args.partition}
            if not mine:
                known = sorted(p for _, p in consumer.positions)
                raise UsageError(f"topic {args.topic} has no partition {args.partition} (partitions: "
                                 f"{', '.join(map(str, known))})")
            consumer.positions = mine
        consumed, idle_since = 0, time.monotonic()
        while time.monotonic() - idle_since < args.timeout and consumed != args.max_messages:
            batch = consumer.poll_records()
            if batch:
                idle_since = time.monotonic()
            for r in batch[:None if args.max_messages is None else args.max_messages - consumed]:
                consumed += 1
                text = r.value.decode("utf-8", "replace")
                key = None if r.key is None else r.key.decode("utf-8", "replace")
                if wants_json(args):
                    records.append({"partition": r.partition, "offset": r.offset, "key": key, "value": text})
                    continue
                prefix = ((f"{r.partition}\t" if args.print_partition else "")
                          + (f"{r.offset}\t" if args.print_offset else "")
                          + (f"{'null' if key is None else key}\t" if args.print_key else ""))
                sys.stdout.write(prefix + text + "\n")
                sys.stdout.flush()
    if wants_json(args):
        return print_json(args, 0, topic=args.topic, records=records)
    return 0


PAUSED = "T"
"""/proc/<pid>/stat's state of a stopped (SIGSTOP) process."""


def _process_state(pid: int) -> str | None:
    """A process's state letter from /proc (None where there is no /proc entry)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def cmd_broker(args: argparse.Namespace) -> int:
    """kill / pause / resume / start one broker.  One that would do nothing -- resume a
    broker that is not paused, pause one that is -- says so and exits 2, sending no signal
    and recording no event: a recorded ``broker_resume`` the broker never saw would make
    every trace group of the run fail conformance."""
    from impl.harness.cluster import pid_alive, read_state, signal_broker

    data_dir = _data_dir(args)
    state = read_state(data_dir)
    if args.action != "start":
        info = state["brokers"].get(str(args.broker_id))
        if info is None:
            raise UsageError(f"no broker {args.broker_id} in this cluster "
                             f"(brokers: {', '.join(sorted(state['brokers']))})")
        pid = int(info["pid"])
        paused = pid_alive(pid) and _process_state(pid) == PAUSED
        if args.action == "resume" and not paused:
            raise UsageError(f"broker {args.broker_id} (pid {pid}) is not paused: nothing to resume, nothing recorded")
        if args.action == "pause" and paused:
            raise UsageError(f"broker {args.broker_id} (pid {pid}) is already paused: nothing done, nothing recorded")
        if args.action != "resume":
            print(f"broker {args.broker_id}: {args.action}; waiting for its ZooKeeper session "
                  "to end ...", file=sys.stderr, flush=True)
        pid = signal_broker(data_dir, args.broker_id, args.action)
        if wants_json(args):
            return print_json(args, 0, broker=args.broker_id, pid=pid, data_dir=data_dir)
        print(f"broker {args.broker_id} (pid {pid}): {args.action}")
        return 0
    info = state["brokers"].get(str(args.broker_id))
    if info is None:
        raise UsageError(f"no broker {args.broker_id} in this cluster")
    if pid_alive(int(info["pid"])):
        raise UsageError(f"broker {args.broker_id} is already running (pid {info['pid']})")
    log = DataDir.of(state["data_dir"]).broker(args.broker_id).out
    with open(log, "ab") as out:
        proc = subprocess.Popen(info["argv"], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                cwd=str(Path(__file__).resolve().parent.parent))
    info["pid"] = proc.pid
    DataDir.of(data_dir).write_cluster_state(state)
    if wants_json(args):
        return print_json(args, 0, broker=args.broker_id, pid=proc.pid, data_dir=data_dir)
    print(f"broker {args.broker_id} started (pid {proc.pid})")
    return 0
