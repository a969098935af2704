"""The data directory's layout: every path a broker, the harness and the command use under a
cluster's ``data_dir``, named once.

A cluster's brokers share one data directory; the harness and ``epochal`` find the cluster's
processes, traces and secrets there.  A port's broker writes the same files in the same
places (docs/ports.md), so the layout is a contract, stated here and nowhere else::

    DataDir(data_dir).broker(2).partition("t", 0).hw_checkpoint
        -> <data-dir>/broker-2/logs/t-0/hw-checkpoint

:data:`LAYOUT` is the table docs/implementation.md shows ("Data directory"); a test holds
the two equal.  This module imports nothing of the broker's, so every layer may use it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HARNESS_NODE = -1  # the trace node of the fault-injecting harness

# -- names, relative to their directory --------------------------------------------------------
CLUSTER_STATE = "cluster.json"
FAULT_PLAN = "faults.json"
TRACES = "traces"
VERDICTS = "verdicts"
ZOOKEEPER = "zookeeper"
SECURITY = "security"
TLS = "tls"
CLUSTER_SECRET = "cluster.secret"
BROKER = "broker-{broker}"
HARNESS_TRACE = "harness"
TRACE = "{node}.jsonl"

LOGS = "logs"
BROKER_OUT = "broker.out"
BROKER_CONFIG = "config.json"
ZK_SESSION = "zk-session.json"
DISK_FAULT = "disk-fault.json"
STEP_PERMITS = "step-permits.json"
ADMIN_AUDIT = "admin-audit.jsonl"

PARTITION = "{topic}-{partition}"
SEGMENT = "{base_offset:020d}.log"
SEGMENT_GLOB = "*.log"
OFFSET_INDEX = "{base_offset:020d}.index"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
HW_CHECKPOINT = "hw-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"

ZOO_CFG = "zoo.cfg"
ZK_DATA = "data"
ZK_LOG_CONFIG = "log4j2.xml"
ZK_OUT = "zookeeper.out"
ZK_JAAS = "jaas.conf"

_B = BROKER
_P = f"{_B}/{LOGS}/{PARTITION}"
LAYOUT: tuple[tuple[str, str], ...] = (
    (CLUSTER_STATE, "the running cluster: run id, ZooKeeper, each broker's pid, endpoint and argv "
                    "(written by the harness and `epochal broker start`, atomically)"),
    (FAULT_PLAN, "the harness's network faults: partitioned links and delays"),
    (f"{TRACES}/{TRACE.format(node=_B)}", "the broker's trace (rotated pieces `broker-{broker}.<n>.jsonl`)"),
    (f"{TRACES}/{TRACE.format(node=HARNESS_TRACE)}", "the harness's trace (node -1)"),
    (f"{VERDICTS}/", "the judge's verdicts of a chaos run"),
    (f"{SECURITY}/{CLUSTER_SECRET}", "the cluster secret every credential derives from"),
    (f"{SECURITY}/{TLS}/", "the TLS CA, certificate and key"),
    (f"{ZOOKEEPER}/", f"the embedded ZooKeeper: `{ZOO_CFG}`, `{ZK_DATA}/`, `{ZK_LOG_CONFIG}`, `{ZK_OUT}`, `{ZK_JAAS}` (its SASL user list, 0600)"),
    (f"{_B}/{BROKER_OUT}", "the broker's stdout and stderr"),
    (f"{_B}/{BROKER_CONFIG}", "every setting of the broker, for a port's broker (`{config_json}`)"),
    (f"{_B}/{ZK_SESSION}", "the broker's ZooKeeper session (id, password), for session expiry"),
    (f"{_B}/{DISK_FAULT}", "an armed disk fault, consumed by the broker's next append"),
    (f"{_B}/{STEP_PERMITS}", "the step permits a driving harness grants the broker"),
    (f"{_B}/{ADMIN_AUDIT}", "the broker's audit log of admin requests"),
    (f"{_P}/{SEGMENT.replace(':020d', '')}", "a segment, named by its base offset (20 digits)"),
    (f"{_P}/{OFFSET_INDEX.replace(':020d', '')}", "the segment's sparse offset index: (offset - base, "
                                                  "byte position) as two u32 every index interval"),
    (f"{_P}/{HW_CHECKPOINT}", "the high watermark"),
    (f"{_P}/{LOG_START_OFFSET_CHECKPOINT}", "the log start offset (moved by retention)"),
    (f"{_P}/{LEADER_EPOCH_CHECKPOINT}", "the leader-epoch cache, `epoch start_offset` per line"),
    (f"{_P}/{PARTITION_METADATA}", "the topic id of the partition's incarnation"),
)
"""Every path under ``<data-dir>``, with what it holds."""


# Everything under a data directory is private to the cluster's own processes: files 0600,
# directories 0700.  The brokers, the harness's ZooKeeper and the harness's own writes into a
# broker's directory create them under this umask (:func:`make_private`).
PRIVATE_UMASK = 0o077
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private() -> None:
    """Create everything from now on private to this process's user (a broker calls it at
    start; its segments, checkpoints, indexes, traces and audit log inherit it)."""
    os.umask(PRIVATE_UMASK)


def private_dir(path: Path) -> Path:
    """``mkdir -p`` the directory, mode 0700 whatever the umask (an existing one too)."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    path.chmod(PRIVATE_DIR_MODE)
    return path


def private_opener(path: str, flags: int) -> int:
    """``open(..., opener=private_opener)``: a file created 0600 whatever the umask."""
    return os.open(path, flags, PRIVATE_FILE_MODE)


def markdown() -> str:
    """:data:`LAYOUT` as the Markdown table docs/implementation.md shows."""
    rows = [f"| `<data-dir>/{path}` | {what} |" for path, what in LAYOUT]
    return "\n".join(["| path | holds |", "|---|---|", *rows])


def write_atomic(path: Path, text: str) -> None:
    """Write-then-rename: a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", opener=private_opener) as f:
        f.write(text)
    os.replace(tmp, path)


@dataclass(frozen=True)
class PartitionDir:
    """One replica's log directory: ``broker-N/logs/<topic>-<partition>/``."""

    path: Path

    @staticmethod
    def parse(name: str) -> tuple[str, int] | None:
        """``t-0`` -> ("t", 0); a name that is no partition directory's -> None."""
        topic, _, p = name.rpartition("-")
        return (topic, int(p)) if topic and p.isdigit() else None

    def segment(self, base_offset: int) -> Path:
        return self.path / SEGMENT.format(base_offset=base_offset)

    def segments(self) -> list[Path]:
        return sorted(self.path.glob(SEGMENT_GLOB))

    def offset_index(self, base_offset: int) -> Path:
        """The offset index of the segment at ``base_offset``."""
        return self.path / OFFSET_INDEX.format(base_offset=base_offset)

    @property
    def log_start_offset_checkpoint(self) -> Path:
        return self.path / LOG_START_OFFSET_CHECKPOINT

    @property
    def hw_checkpoint(self) -> Path:
        return self.path / HW_CHECKPOINT

    @property
    def leader_epoch_checkpoint(self) -> Path:
        return self.path / LEADER_EPOCH_CHECKPOINT

    @property
    def metadata(self) -> Path:
        return self.path / PARTITION_METADATA


@dataclass(frozen=True)
class BrokerDir:
    """One broker's directory: ``<data-dir>/broker-N/``."""

    path: Path

    @property
    def logs(self) -> Path:
        return self.path / LOGS

    def partition(self, topic: str, partition: int) -> PartitionDir:
        return PartitionDir(self.logs / PARTITION.format(topic=topic, partition=partition))

    @property
    def out(self) -> Path:
        return self.path / BROKER_OUT

    @property
    def config_json(self) -> Path:
        return self.path / BROKER_CONFIG

    @property
    def zk_session(self) -> Path:
        return self.path / ZK_SESSION

    @property
    def disk_fault(self) -> Path:
        return self.path / DISK_FAULT

    @property
    def step_permits(self) -> Path:
        return self.path / STEP_PERMITS

    @property
    def admin_audit(self) -> Path:
        return self.path / ADMIN_AUDIT


@dataclass(frozen=True)
class ZooKeeperDir:
    """The embedded ZooKeeper's directory (``<data-dir>/zookeeper/``, or a temporary one)."""

    path: Path

    @property
    def config(self) -> Path:
        return self.path / ZOO_CFG

    @property
    def data(self) -> Path:
        return self.path / ZK_DATA

    @property
    def log_config(self) -> Path:
        return self.path / ZK_LOG_CONFIG

    @property
    def out(self) -> Path:
        return self.path / ZK_OUT

    @property
    def jaas(self) -> Path:
        """The server's SASL user list (impl.node.auth.zookeeper.server_jaas), mode 0600."""
        return self.path / ZK_JAAS


def node_name(node: int) -> str:
    """A trace node's file stem: ``broker-N``, or ``harness`` for node -1."""
    return HARNESS_TRACE if node == HARNESS_NODE else BROKER.format(broker=node)


@dataclass(frozen=True)
class DataDir:
    """A cluster's data directory."""

    path: Path

    @classmethod
    def of(cls, data_dir: str | os.PathLike[str]) -> DataDir:
        return cls(Path(data_dir))

    def broker(self, broker: int) -> BrokerDir:
        return BrokerDir(self.path / BROKER.format(broker=broker))

    @property
    def traces(self) -> Path:
        return self.path / TRACES

    def trace(self, node: int) -> Path:
        """Node ``node``'s trace file (the harness is node -1)."""
        return self.traces / TRACE.format(node=node_name(node))

    @property
    def verdicts(self) -> Path:
        return self.path / VERDICTS

    @property
    def fault_plan(self) -> Path:
        return self.path / FAULT_PLAN

    @property
    def zookeeper(self) -> ZooKeeperDir:
        return ZooKeeperDir(self.path / ZOOKEEPER)

    @property
    def security(self) -> Path:
        return self.path / SECURITY

    @property
    def tls(self) -> Path:
        return self.security / TLS

    @property
    def cluster_secret(self) -> Path:
        return self.security / CLUSTER_SECRET

    @property
    def cluster_state(self) -> Path:
        return self.path / CLUSTER_STATE

    def read_cluster_state(self) -> dict[str, Any]:
        if not self.cluster_state.exists():
            raise FileNotFoundError(f"no running cluster recorded in {self.cluster_state}")
        return json.loads(self.cluster_state.read_text())

    def write_cluster_state(self, state: dict[str, Any]) -> None:
        """The one writer of ``cluster.json`` (the harness at each start, ``epochal broker
        start`` after a restart): atomic, so another shell never reads half of it."""
        write_atomic(self.cluster_state, json.dumps(state, indent=2))
