"""``epochal broker kill|pause|resume|start``: faults on one broker process of a cluster that
``epochal cluster start`` runs, as its ``<data-dir>/cluster.json`` lists them.

``kill``, ``pause`` and ``resume`` are recorded in the cluster's traces (``broker_crash``,
``broker_pause``, ``broker_resume``: :func:`impl.harness.cluster.signal_broker`); ``start``
starts a stopped or killed broker again with the command line it was first started with.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

from impl.harness.cli.cluster_access import add_bootstrap_flags, data_dir, friendly
from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import print_json, wants_json
from impl.node.layout import DataDir

PAUSED = "T"
"""/proc/<pid>/stat's state of a stopped (SIGSTOP) process."""


def register(sub: Any) -> None:
    broker = sub.add_parser("broker", help="kill -9, pause (SIGSTOP), resume or start a broker")
    bsub = broker.add_subparsers(dest="action", metavar="ACTION", parser_class=type(broker))
    bsub.required = True
    for action, text in [("kill", "kill -9 the broker (recorded as broker_crash)"),
                         ("pause", "SIGSTOP the broker (broker_pause)"),
                         ("resume", "SIGCONT the broker (broker_resume)"),
                         ("start", "start a stopped or killed broker again")]:
        p = bsub.add_parser(action, help=text)
        p.add_argument("broker_id", type=int, metavar="ID")
        add_bootstrap_flags(p)  # its --data-dir: the cluster.json to act on, and the secret
        p.set_defaults(func=friendly(run))


def run(args: argparse.Namespace) -> int:
    """kill / pause / resume / start one broker.  One that would do nothing -- resume a
    broker that is not paused, pause one that is -- says so and exits 2, sending no signal
    and recording no event: a recorded ``broker_resume`` the broker never saw would make
    every trace group of the run fail conformance."""
    from impl.harness.cluster import read_state

    cluster_dir = data_dir(args)
    state = read_state(cluster_dir)
    pid = _start_again(args, cluster_dir, state) if args.action == "start" else _signal(args, cluster_dir, state)
    if wants_json(args):
        return print_json(args, 0, broker=args.broker_id, pid=pid, data_dir=cluster_dir)
    print(f"broker {args.broker_id} started (pid {pid})" if args.action == "start"
          else f"broker {args.broker_id} (pid {pid}): {args.action}")
    return 0


def _signal(args: argparse.Namespace, cluster_dir: str, state: dict[str, Any]) -> int:
    """kill, pause or resume the broker, refusing what would do nothing; returns its pid."""
    from impl.harness.cluster import pid_alive, signal_broker

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
    return signal_broker(cluster_dir, args.broker_id, args.action)


def _start_again(args: argparse.Namespace, cluster_dir: str, state: dict[str, Any]) -> int:
    """Start a broker that is not running with its first command line, and record its new pid
    in cluster.json; returns that pid."""
    from impl.harness.cluster import pid_alive

    info = state["brokers"].get(str(args.broker_id))
    if info is None:
        raise UsageError(f"no broker {args.broker_id} in this cluster")
    if pid_alive(int(info["pid"])):
        raise UsageError(f"broker {args.broker_id} is already running (pid {info['pid']})")
    files = DataDir.of(state["data_dir"])
    with open(files.broker(args.broker_id).out, "ab") as out:
        proc = subprocess.Popen(info["argv"], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                cwd=info["cwd"])
    info["pid"] = proc.pid
    DataDir.of(cluster_dir).write_cluster_state(state)
    return proc.pid


def _process_state(pid: int) -> str | None:
    """A process's state letter from /proc (None where there is no /proc entry)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]
