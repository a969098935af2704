"""How the cluster commands (``epochal cluster|topics|quotas|produce|consume|broker``) reach a
running cluster: its address, its data dir, the sign-in, and one line for every failure.

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
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from impl.harness.cli.errors import UsageError
from impl.harness.cli.option_ranges import endpoints
from impl.harness.cli.output import add_json_flag

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_DATA_DIR = os.environ.get("EPOCHAL_DATA_DIR", "runs/cluster")
CLUSTERS = Path(os.environ.get("EPOCHAL_CLUSTERS", Path(tempfile.gettempdir()) / f"epochal-clusters-{os.getuid()}"))
"""Where ``cluster start`` leaves, per broker endpoint, the path of its data dir (removed
when it stops), so that ``broker`` commands find the cluster from ``--bootstrap`` alone."""


def add_bootstrap_flags(p: argparse.ArgumentParser) -> None:
    """``--bootstrap``, ``--data-dir`` (the secret to sign in with) and ``--json``."""
    p.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT", type=endpoints,
                   help=f"any broker of the cluster (default {DEFAULT_BOOTSTRAP})")
    p.add_argument("--data-dir", default=None,
                   help="the data dir of the running `epochal cluster start`: its secret signs "
                        "this command in (docs/security.md; default: the cluster's that "
                        f"--bootstrap names, else {DEFAULT_DATA_DIR}; none there: no sign-in)")
    add_json_flag(p)


def friendly(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a cluster command signed in to its cluster, every expected failure turned into one
    line (UsageError), never a traceback."""

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        previous = _sign_in(args) if hasattr(args, "bootstrap") else None
        try:
            return func(args)
        except BrokenPipeError:  # `epochal consume ... | head`: stop quietly
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except Exception as exc:
            usage = _one_line(exc)
            if usage is None:
                raise
            raise usage from None
        finally:
            if hasattr(args, "bootstrap"):
                from impl.node.auth import credentials

                credentials.set_default(previous)

    return wrapper


def _one_line(exc: Exception) -> UsageError | None:
    """The UsageError an expected failure is told as; None for one that needs no telling (a
    UsageError already is one line) or is no user's doing (a bug: its traceback shows)."""
    from impl.node.client import ClusterUnavailable
    from impl.node.wire import ErrorCode, ProtocolError, RpcError

    if isinstance(exc, UsageError):
        return None
    if isinstance(exc, ClusterUnavailable):
        return UsageError(f"cannot reach the cluster: {exc}")
    if isinstance(exc, RpcError) and exc.code == ErrorCode.ILLEGAL_SASL_STATE:
        # we did not sign in: no secret found
        return UsageError(f"{exc} -- the cluster is authenticated: give its --data-dir "
                          "(docs/security.md)")
    if isinstance(exc, KeyError):
        return UsageError(str(exc.args[0]) if exc.args else "not found")
    if isinstance(exc, (RpcError, TimeoutError, ProtocolError, FileNotFoundError,
                        ProcessLookupError, ValueError, RuntimeError)):
        return UsageError(str(exc))
    if isinstance(exc, OSError):
        return UsageError(f"{exc.strerror or exc}")
    return None


def _sign_in(args: argparse.Namespace) -> Any:
    """Sign this command's connections in with the secret of the cluster's data dir
    (``--data-dir``, or the one ``cluster start`` left a pointer to for ``--bootstrap``);
    a cluster without one (``--insecure``) is spoken to without.  Returns the keyring it
    replaced."""
    from impl.harness.cluster import cluster_keyring
    from impl.node.auth import credentials

    keyring, _ = cluster_keyring(data_dir(args))
    return credentials.set_default(keyring)


def _pointer(host: str, port: int) -> Path:
    return CLUSTERS / f"{host}_{port}"


def leave_pointers(data_dir: Path, endpoints: list[tuple[str, int]]) -> list[Path]:
    """One file per broker endpoint naming the cluster's data dir (``CLUSTERS``)."""
    CLUSTERS.mkdir(parents=True, exist_ok=True)
    out = []
    for host, port in endpoints:
        pointer = _pointer(host, port)
        pointer.write_text(str(Path(data_dir).resolve()))
        out.append(pointer)
    return out


def data_dir(args: argparse.Namespace) -> str:
    """The data dir of the cluster a command acts on: ``--data-dir`` if given, else the one
    ``cluster start`` left a pointer to for ``--bootstrap``'s endpoint (checked against that
    cluster's own cluster.json), else the default data dir."""
    if args.data_dir is not None:
        return args.data_dir
    host, _, port = args.bootstrap.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--bootstrap must be HOST:PORT, got {args.bootstrap!r}")
    pointer = _pointer(host, int(port))
    if not pointer.exists():
        return DEFAULT_DATA_DIR
    pointed = pointer.read_text().strip()
    from impl.harness.cluster import read_state

    try:
        state = read_state(pointed)
    except (FileNotFoundError, ValueError):
        raise UsageError(f"the cluster at {args.bootstrap} left {pointed}, which holds no cluster.json "
                         "(give --data-dir)") from None
    if not any(b.get("host") == host and int(b.get("port", -1)) == int(port) for b in state["brokers"].values()):
        raise UsageError(f"{pointed}/cluster.json lists no broker at {args.bootstrap} (give --data-dir)")
    return pointed


def admin(args: argparse.Namespace, as_user: bool = True) -> Any:
    """An admin client that does not retry throttled requests: the command says how long
    to wait instead (seed 001), and exits non-zero.  ``as_user=False`` for the quota commands,
    whose ``--user`` names the quota's entity, not who is asking: they sign in as the
    operator (the data dir's secret), since a user may not set quotas -- its own least of all."""
    from impl.node.client import Admin

    return Admin(args.bootstrap, user=getattr(args, "user", None) if as_user else None,
                 client_id=getattr(args, "client_id", None), api_timeout_s=30.0,
                 retry_on_quota_violation=False)
