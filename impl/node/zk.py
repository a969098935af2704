"""ZooKeeper: the embedded standalone server, the znode layout, and checked transactions.

The layout is the one seed 000 gives (paths 1-6) with seed 002's controller znodes:

* ``/controller`` -- ephemeral, ``{"version":1,"brokerid":N,"timestamp":"..."}`` (seed 002)
* ``/controller_epoch`` -- persistent integer, 1 for the first controller, +1 per new one
* ``/brokers/ids/N`` -- ephemeral ``host:port`` JSON; its creation zxid is the broker epoch
* ``/brokers/topics/T`` -- ``{"partitions": {"0": [1, 2, 3], ...}}``, first replica preferred
* ``/brokers/topics/T/P/leaderAndISR`` -- ``{leader, leader_epoch, isr, controller_epoch}``,
  only ever written conditionally on its zk_version
* ``/brokers/topics/T/next_partition`` -- an integer: one past every partition id the topic
  has had, written when partitions are removed (seed 000 H), so an id is never reused
* ``/admin/partitions_reassigned/T/P``, ``/admin/partitions_add/T/P``,
  ``/admin/partitions_remove/T/P``, ``/admin/delete_topics/T``,
  ``/admin/preferred_replica_election/T/P`` -- admin requests the controller consumes
* ``/isr_change_notification/change-NNN`` -- a leader changed an ISR (controller refreshes
  metadata)

Field notes honoured here: kazoo's ``transaction().commit()`` returns exceptions *in* its
result list instead of raising, so :func:`commit_checked` inspects every item.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import NoNodeError

from impl.node.auth.credentials import ClusterSecret
from impl.node.auth.zookeeper import (
    SERVER_LIMITS,
    ZkAcl,
    client_kwargs,
    secure_root,
    write_server_jaas,
)
from impl.node.layout import PRIVATE_UMASK, ZooKeeperDir, private_dir

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
ADMIN = "/admin"
REASSIGN = "/admin/partitions_reassigned"
PARTITIONS_ADD = "/admin/partitions_add"
PARTITIONS_REMOVE = "/admin/partitions_remove"
DELETE_TOPICS = "/admin/delete_topics"
PREFERRED = "/admin/preferred_replica_election"
ISR_CHANGE = "/isr_change_notification"
PERSISTENT_ROOTS = [
    BROKER_IDS, TOPICS, REASSIGN, PARTITIONS_ADD, PARTITIONS_REMOVE, DELETE_TOPICS,
    PREFERRED, ISR_CHANGE,
]


def broker_path(broker: int) -> str:
    return f"{BROKER_IDS}/{broker}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/{partition}"


def leader_and_isr_path(topic: str, partition: int) -> str:
    """Seed 000 path 4: ``/brokers/topics/[topic]/[partition_id]/leaderAndISR``."""
    return f"{TOPICS}/{topic}/{partition}/leaderAndISR"


def next_partition_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/next_partition"


def fresh_partition_id(zk: KazooClient, topic: str, current: Iterable[int]) -> int:
    """The lowest id a partition added to ``topic`` may take: past every id the topic has
    now (``current``) and every id it ever had (``next_partition_path``, written by the
    removal).  Seed 000 H leaves the question open; reusing a removed id would hand a
    broker that was down through the removal, and is named in the new partition's AR, its
    old log under the same topic id -- it would serve the removed partition's records.
    Kafka never removes partitions, and numbers new ones from the current count."""
    try:
        raw, _ = zk.get(next_partition_path(topic))
        recorded = int(raw.decode())
    except (NoNodeError, ValueError):
        recorded = 0
    return max([recorded, *(p + 1 for p in current)])


def encode(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def decode(data: bytes | None) -> Any:
    if not data:
        return None
    return json.loads(data.decode())


@dataclass(frozen=True)
class LeaderAndIsr:
    """The per-partition state the controller (and, for the ISR only, the leader) writes."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def to_json(self) -> bytes:
        return encode({
            "leader": self.leader, "leader_epoch": self.leader_epoch,
            "isr": sorted(self.isr), "controller_epoch": self.controller_epoch,
        })

    @staticmethod
    def from_json(data: bytes) -> LeaderAndIsr:
        d = decode(data)
        return LeaderAndIsr(int(d["leader"]), int(d["leader_epoch"]),
                            tuple(sorted(int(b) for b in d["isr"])), int(d["controller_epoch"]))


class TransactionFailed(Exception):
    """A ZooKeeper multi failed; ``errors`` holds the exception of each failed item."""

    def __init__(self, errors: list[BaseException]) -> None:
        super().__init__("; ".join(f"{type(e).__name__}" for e in errors))
        self.errors = errors


def commit_checked(txn: TransactionRequest) -> list[Any]:
    """Commit a kazoo transaction and raise :class:`TransactionFailed` if any item failed."""
    results = txn.commit()
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise TransactionFailed(errors)
    return results


def ensure_layout(zk: KazooClient, acl: ZkAcl | None = None) -> None:
    """Create the persistent parents (idempotent); with ``acl``, first give the cluster's
    root the cluster's ACL (impl.node.auth.zookeeper)."""
    if acl is not None:
        secure_root(zk, acl)
    for path in PERSISTENT_ROOTS:
        zk.ensure_path(path)


def connect(hosts: str, timeout: float = 6.0, session_timeout: float = 3.0,
            acl: ZkAcl | None = None) -> KazooClient:
    """A started client, signed in (the server refuses every session that is not:
    :data:`SERVER_LIMITS`); with ``acl``, signed in by SASL as the cluster and creating every
    znode with the cluster's ACL, else (an insecure cluster's ZooKeeper) as
    :data:`~impl.node.auth.zookeeper.GUEST`."""
    zk = KazooClient(hosts=hosts, timeout=session_timeout, **client_kwargs(acl))
    zk.start(timeout=timeout)
    return zk


# -- the embedded server ------------------------------------------------------------------

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="ERROR">
  <Appenders><Console name="err" target="SYSTEM_ERR">
    <PatternLayout pattern="zk %d{HH:mm:ss.SSS} %-5p %c{1}: %m%n"/></Console></Appenders>
  <Loggers><Root level="ERROR"><AppenderRef ref="err"/></Root></Loggers>
</Configuration>
"""


def pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        raise RuntimeError(f"no ZooKeeper jar in {jars}")
    return jars


_PORT_FLOOR = 10_000
_MIN_PORT_ROOM = 1_000  # below this many candidate ports, leave the choice to the kernel
_PORT_PROBES = 200
_PORTS_GIVEN: set[int] = set()
_PORT_PICKS: dict[int, random.Random] = {}


def _ephemeral_floor() -> int:
    """The lowest port the kernel hands to outgoing connections (Linux's
    ip_local_port_range; 32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_picks() -> random.Random:
    """This process's draw of candidate ports, seeded by its pid: two test workers -- or a
    process and a child forked from it, which would otherwise inherit the same generator --
    draw different sequences."""
    pid = os.getpid()
    if pid not in _PORT_PICKS:
        _PORT_PICKS[pid] = random.Random(pid)
    return _PORT_PICKS[pid]


def free_port() -> int:
    """A port on 127.0.0.1 that a server started next can listen on.

    Why not the kernel's choice (bind to port 0): that port comes from the ephemeral range,
    and between this probe and the server's own bind an outgoing connection -- a ZooKeeper
    session, a fetch, a client -- can be given it, and the broker dies with "address already
    in use" (seen in a long generated-case run).  So the port is drawn below that range, where
    no outgoing connection is ever placed, differently in each process (``_port_picks``), and
    never twice in one process.  Falls back to the kernel's choice when there is too little
    room below the range, or no probe finds a free port."""
    ceiling = _ephemeral_floor()
    if ceiling - _PORT_FLOOR >= _MIN_PORT_ROOM:
        picks = _port_picks()
        for _ in range(_PORT_PROBES):
            port = picks.randrange(_PORT_FLOOR, ceiling)
            if port not in _PORTS_GIVEN and _bindable(port):
                _PORTS_GIVEN.add(port)
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            data = s.recv(4096)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


class EmbeddedZooKeeper:
    """A real standalone ZooKeeper (``ZooKeeperServerMain``) from the PySpark wheel's jars.

    With ``secret`` (a cluster's), it admits only sessions that sign in by SASL as the
    cluster (:attr:`acl`; impl.node.auth.zookeeper); without, any digest sign-in (an
    insecure cluster's)."""

    def __init__(self, port: int | None = None, data_dir: str | os.PathLike[str] | None = None,
                 tick_time_ms: int = 200, host: str = "127.0.0.1",
                 secret: ClusterSecret | None = None) -> None:
        self.host = host
        self.secret = secret
        self.acl = ZkAcl.from_secret(secret) if secret is not None else None
        self.port = port or free_port()
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="epochal-zk-"))
        self.tick_time_ms = tick_time_ms
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> EmbeddedZooKeeper:
        with socket.socket() as probe:  # a server already there would answer `srvr` for us
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host, self.port))
            except OSError as exc:
                raise RuntimeError(f"port {self.port} is already in use") from exc
        private_dir(self.data_dir)
        files = ZooKeeperDir(self.data_dir)
        cfg = files.config
        cfg.write_text(
            f"tickTime={self.tick_time_ms}\ndataDir={files.data}\n"
            f"clientPort={self.port}\nclientPortAddress={self.host}\n"
            f"maxClientCnxns={SERVER_LIMITS.max_client_cnxns}\nadmin.enableServer=false\n"
            "4lw.commands.whitelist=srvr,ruok,stat,mntr\n"
            f"minSessionTimeout={2 * self.tick_time_ms}\n"
        )
        log_cfg = files.log_config
        log_cfg.write_text(_LOG4J2)
        jaas = write_server_jaas(files.jaas, self.secret) if self.secret is not None else None
        java = shutil.which("java") or "java"
        cmd = [
            java, *SERVER_LIMITS.jvm_options(jaas), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=srvr,ruok,stat,mntr",
            f"-Dlog4j2.configurationFile={log_cfg}", "-Dlog4j.configurationFile=" + str(log_cfg),
            "-cp", str(pyspark_jars() / "*"),
            "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg),
        ]
        self.log_path = files.out
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         umask=PRIVATE_UMASK)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None or self._failed_in_log():
                self.stop()
                raise RuntimeError(f"ZooKeeper on port {self.port} failed to start "
                                   f"(port in use?); see {self.log_path}")
            try:
                if "Mode: standalone" in four_letter_word(self.host, self.port, "srvr"):
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not become ready on {self.hosts} within {timeout}s")

    def _failed_in_log(self) -> bool:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return "exiting abnormally" in text or "BindException" in text

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedZooKeeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
