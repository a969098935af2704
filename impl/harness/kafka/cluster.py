"""Real Apache Kafka brokers (ZooKeeper mode) on the harness's embedded ZooKeeper.

:class:`KafkaCluster` starts the same :class:`~impl.node.zk.EmbeddedZooKeeper` the
project's own clusters run on, made to accept SASL sign-ins, then N ``kafka.Kafka``
JVMs (broker ids 1..N, each listening on 127.0.0.1 at a :func:`~impl.node.zk.free_port`),
each in ``<data-dir>/broker-<id>/`` with its server.properties, log4j.properties, JAAS
file, ``kafka-logs/`` and ``logs/`` (:mod:`.config` says what is logged where).  With
``relay=True`` each broker advertises a :class:`~.relay.KafkaRelay` port instead of its own,
and the inter-broker messages are logged to ``<data-dir>/relay/broker-<id>.jsonl``.

Faults are real signals, as for the project's brokers: :meth:`KafkaCluster.kill`
(SIGKILL), :meth:`pause` / :meth:`resume` (SIGSTOP / SIGCONT), :meth:`stop_broker`
(SIGTERM: Kafka's controlled shutdown), :meth:`restart`.  Each is appended, with the
wall-clock time Kafka's log lines also carry, to ``<data-dir>/faults.jsonl``.  Who is
controller and who leads a partition is read from ZooKeeper, as Kafka writes it:
``/controller``, ``/controller_epoch`` and ``/brokers/topics/<t>/partitions/<p>/state``
(beneath the chroot :data:`~.config.CHROOT`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kazoo.exceptions import NoNodeError

from impl.harness.cluster import wait_stopped
from impl.harness.kafka import config
from impl.harness.kafka.fetch import DEFAULT_VERSION, KafkaJars, fetch
from impl.harness.kafka.reassign import Assignment, assignment, reassign
from impl.harness.kafka.relay import KafkaRelay
from impl.harness.kafka.wire import (
    INVALID_REPLICATION_FACTOR,
    NOT_CONTROLLER,
    KafkaRequestError,
    create_topic,
)
from impl.node.auth.credentials import ClusterSecret
from impl.node.auth.zookeeper import ZK_USER
from impl.node.zk import EmbeddedZooKeeper, connect, free_port

STATE_FILE = "kafka-cluster.json"
FAULTS_FILE = "faults.jsonl"
RELAY_DIR = "relay"
"""Where the relays (``relay=True``) log the inter-broker messages: ``broker-N.jsonl``."""
T = TypeVar("T")


@dataclass(frozen=True)
class Controller:
    """``/controller``'s broker and ``/controller_epoch``'s value."""

    broker: int
    epoch: int


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state`` as Kafka writes it, and its zk_version."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int


class KafkaBroker:
    """One ``kafka.Kafka`` JVM: its files, its process, its signals."""

    def __init__(self, settings: config.KafkaBrokerSettings, classpath: str,
                 zk_password: str, heap_mb: int = 256) -> None:
        self.settings = settings
        self.broker_id = settings.broker_id
        self.argv = [shutil.which("java") or "java",
                     *config.broker_jvm_args(settings, classpath, heap_mb)]
        self._jaas = config.client_jaas(ZK_USER, zk_password)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_from = 0  # server.log's size as this process started: its own lines follow

    @property
    def out_path(self) -> Path:
        return self.settings.broker_dir / "broker.out"

    def write_files(self) -> None:
        s = self.settings
        for d in (s.broker_dir, s.log_dir, s.log4j_dir):
            d.mkdir(parents=True, exist_ok=True)
        s.properties_path.write_text(config.render_properties(config.server_properties(s)))
        s.log4j_path.write_text(config.log4j_properties(s.log4j_dir))
        s.jaas_path.write_text(self._jaas)
        s.jaas_path.chmod(0o600)

    def start(self) -> None:
        if self.alive:
            raise RuntimeError(f"broker {self.broker_id} is already running (pid {self.pid})")
        self.write_files()
        log = self.settings.log4j_dir / "server.log"
        self._log_from = log.stat().st_size if log.exists() else 0
        with open(self.out_path, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def started(self) -> bool:
        """This process logged the end of its start-up (``KafkaServer.startup``): it goes on
        past its registration in ZooKeeper (the config manager reads ZooKeeper after it), and a
        pause that ends its session before then makes the process exit."""
        log = self.settings.log4j_dir / "server.log"
        if not log.exists():
            return False
        with open(log, "rb") as f:
            f.seek(self._log_from)
            return b"] started (kafka.server.KafkaServer)" in f.read()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if not self.alive:
            raise ProcessLookupError(f"broker {self.broker_id} is not running")
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """kill -9, and reap it."""
        self.signal(signal.SIGKILL)
        assert self.proc is not None
        self.proc.wait(10)

    def pause(self) -> None:
        """SIGSTOP, once it has taken effect."""
        self.signal(signal.SIGSTOP)
        assert self.pid is not None
        wait_stopped(self.pid)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def terminate(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (Kafka's controlled shutdown first), then SIGKILL if it is not gone
        within ``timeout``; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def rss_mb(self) -> float | None:
        """The JVM's resident set size (``VmRSS``), or None if it is not running."""
        if not self.alive:
            return None
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return None


class KafkaCluster:
    """N real Kafka brokers (ids 1..N) on an embedded, SASL-securing ZooKeeper."""

    def __init__(self, data_dir: str | os.PathLike[str], brokers: int = 3,
                 profile: str = config.DEFAULT_PROFILE, version: str = DEFAULT_VERSION,
                 jars: KafkaJars | None = None, heap_mb: int = 256,
                 zk_port: int | None = None, port_base: int | None = None, relay: bool = False,
                 **settings: Any) -> None:
        if profile not in config.PROFILES:
            raise ValueError(f"unknown Kafka profile {profile!r} (known: {', '.join(config.PROFILES)})")
        if brokers < 1:
            raise ValueError("a Kafka cluster needs at least one broker")
        self.data_dir = Path(data_dir).resolve()
        self.n = brokers
        self.profile = config.PROFILES[profile]
        self.version = version
        self.jars = jars
        self.heap_mb = heap_mb
        self.zk_port = zk_port
        self.port_base = port_base
        self.settings = settings
        self.relay: KafkaRelay | None = KafkaRelay(self.data_dir / RELAY_DIR) if relay else None
        self.zk_server: EmbeddedZooKeeper | None = None
        self.brokers: dict[int, KafkaBroker] = {}
        self._zk: Any = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> KafkaCluster:
        self.jars = self.jars or fetch(self.version)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        secret = ClusterSecret.ensure(self.data_dir)
        password = secret.zk_password()
        try:
            # the same ZooKeeper as the project's clusters: only the cluster's SASL user gets in
            self.zk_server = EmbeddedZooKeeper(port=self.zk_port, data_dir=self.data_dir / "zookeeper",
                                               secret=secret).start()
            if self.relay is not None:
                self.relay.start()
            for i in range(1, self.n + 1):
                port = self.port_base + i - 1 if self.port_base else free_port()
                relay_port = self.relay.add(i, port) if self.relay is not None else None
                s = config.KafkaBrokerSettings(
                    broker_id=i, port=port, zookeeper=self.zk_server.hosts,
                    broker_dir=self.data_dir / f"broker-{i}", cluster_size=self.n,
                    profile=self.profile, advertised_port=relay_port, **self.settings)
                self.brokers[i] = KafkaBroker(s, self.jars.classpath, password, self.heap_mb)
            for broker in self.brokers.values():
                broker.start()
            self._write_state()
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _write_state(self) -> None:
        assert self.zk_server is not None and self.jars is not None
        state = {"kafka_version": self.jars.version, "profile": self.profile.name,
                 "zookeeper": self.zk_server.hosts + config.CHROOT, "data_dir": str(self.data_dir),
                 "brokers": {str(b): {"pid": k.pid, "host": k.settings.host, "port": k.settings.port,
                                      "advertised_port": k.settings.advertised_port or k.settings.port,
                                      "dir": str(k.settings.broker_dir), "argv": k.argv}
                             for b, k in self.brokers.items()}}
        tmp = self.data_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, self.data_dir / STATE_FILE)

    def wait_ready(self, timeout: float = 120.0, brokers: list[int] | None = None) -> None:
        """Every broker listed is registered in ZooKeeper and done starting, and there is a
        controller."""
        want = set(brokers if brokers is not None else self.brokers)

        def ready() -> bool:
            for b in want:
                if not self.brokers[b].alive:
                    raise RuntimeError(f"Kafka broker {b} exited with {self.brokers[b].proc.returncode}"  # type: ignore[union-attr]
                                       f"; see {self.brokers[b].out_path} and its logs/server.log")
            return (want <= self.registered() and self.controller() is not None
                    and all(self.brokers[b].started for b in want))

        self.wait_until(ready, timeout, f"Kafka brokers {sorted(want)} registered and started, with a controller")

    def stop(self, graceful: bool = False) -> None:
        """Stop every broker (SIGTERM with controlled shutdown if ``graceful``, else
        SIGKILL), then ZooKeeper."""
        for broker in self.brokers.values():
            if broker.alive:
                if graceful:
                    broker.terminate()
                else:
                    broker.kill()
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None
        if self.zk_server is not None:
            self.zk_server.stop()
            self.zk_server = None
        if self.relay is not None:
            self.relay.stop()
        (self.data_dir / STATE_FILE).unlink(missing_ok=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what ZooKeeper says --------------------------------------------------------------
    @property
    def zookeeper(self) -> str:
        """The brokers' ZooKeeper connect string, chroot included."""
        assert self.zk_server is not None
        return self.zk_server.hosts + config.CHROOT

    def zk(self) -> Any:
        """A kazoo client of the ensemble, signed in as the cluster (the ensemble admits no
        one else): Kafka's znodes are writable by that SASL identity only.  Not chrooted
        (kazoo warns about a chroot Kafka has not created yet): paths take :data:`CHROOT`."""
        if self._zk is None:
            assert self.zk_server is not None
            self._zk = connect(self.zk_server.hosts, session_timeout=10.0, acl=self.zk_server.acl)
        return self._zk

    def zk_read(self, path: str) -> tuple[bytes, Any] | None:
        """The znode at ``path`` beneath the chroot (its data and stat), or None."""
        try:
            return self.zk().get(config.CHROOT + path)  # type: ignore[no-any-return]
        except NoNodeError:
            return None

    def registered(self) -> set[int]:
        try:
            return {int(b) for b in self.zk().get_children(config.CHROOT + "/brokers/ids")}
        except NoNodeError:
            return set()

    def controller(self) -> Controller | None:
        found, epoch = self.zk_read("/controller"), self.zk_read("/controller_epoch")
        if found is None or epoch is None:
            return None
        return Controller(int(json.loads(found[0])["brokerid"]), int(epoch[0]))

    def partition_state(self, topic: str, partition: int = 0) -> PartitionState | None:
        found = self.zk_read(f"/brokers/topics/{topic}/partitions/{partition}/state")
        if found is None:
            return None
        d = json.loads(found[0])
        return PartitionState(int(d["leader"]), int(d["leader_epoch"]),
                              tuple(sorted(int(b) for b in d["isr"])),
                              int(d["controller_epoch"]), found[1].version)

    @staticmethod
    def wait_until(probe: Callable[[], T], timeout: float, what: str, every: float = 0.1) -> T:
        """``probe()``'s first truthy value within ``timeout`` seconds, else TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"not within {timeout:.0f}s: {what}")
            time.sleep(every)

    # -- topics ---------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int = 1, replication_factor: int | None = None,
                     timeout: float = 60.0, assignment: list[list[int]] | None = None) -> dict[int, PartitionState]:
        """Create ``topic`` through the controller (CreateTopics) and wait until every
        partition's state is in ZooKeeper with its whole replica set in the ISR.  With
        ``assignment`` (partition p's replicas, preferred leader first) the topic has
        ``len(assignment)`` partitions placed so; without it Kafka places them."""
        if assignment is not None:
            partitions, replication_factor = len(assignment), len(assignment[0])
        rf = replication_factor or self.n

        def created() -> bool:
            ctrl = self.controller()
            if ctrl is None or not self.brokers[ctrl.broker].alive:
                return False
            try:
                create_topic(self.brokers[ctrl.broker].settings.host,
                             self.brokers[ctrl.broker].settings.port, topic, partitions, rf,
                             assignment=assignment)
            except KafkaRequestError as exc:
                # the controller moved, or its metadata does not list every registered
                # broker yet (it learns of them a moment after ZooKeeper does)
                if exc.code == NOT_CONTROLLER or \
                        (exc.code == INVALID_REPLICATION_FACTOR and rf <= len(self.registered())):
                    return False
                raise
            except OSError:
                return False
            return True

        self.wait_until(created, timeout, f"topic {topic} created", every=0.5)

        def states() -> dict[int, PartitionState] | None:
            got = {p: self.partition_state(topic, p) for p in range(partitions)}
            if all(s is not None and len(s.isr) == rf for s in got.values()):
                return {p: s for p, s in got.items() if s is not None}
            return None

        return self.wait_until(states, timeout, f"every partition of {topic} with {rf} replicas in its ISR")

    # -- faults ---------------------------------------------------------------------------
    def _record(self, fault: str, broker: int) -> None:
        line = json.dumps({"time": time.time(), "fault": fault, "broker": broker,
                           "pid": self.brokers[broker].pid})
        with open(self.data_dir / FAULTS_FILE, "a") as out:
            out.write(line + "\n")

    def kill(self, broker: int) -> None:
        """kill -9 (its ZooKeeper session ends a session timeout later)."""
        self.brokers[broker].kill()
        self._record("kill", broker)

    def pause(self, broker: int) -> None:
        self.brokers[broker].pause()
        self._record("pause", broker)

    def resume(self, broker: int) -> None:
        self._record("resume", broker)
        self.brokers[broker].resume()

    def stop_broker(self, broker: int, timeout: float = 30.0) -> int | None:
        """SIGTERM: Kafka's controlled shutdown (leadership moved away first), then exit."""
        code = self.brokers[broker].terminate(timeout)
        self._record("stop", broker)
        return code

    def restart(self, broker: int, timeout: float = 120.0) -> None:
        """Start a stopped or killed broker again, with the same settings and log dir --
        once its old registration is gone (Kafka refuses to start while another session
        holds ``/brokers/ids/<id>``: a kill's lasts a session timeout)."""
        self.wait_until(lambda: broker not in self.registered(), timeout,
                        f"broker {broker}'s old ZooKeeper session ended")
        self.brokers[broker].start()
        self._record("start", broker)
        self._write_state()
        self.wait_ready(timeout, [broker])

    # -- administration -------------------------------------------------------------------
    def assignment(self, topic: str) -> dict[int, Assignment] | None:
        """Every partition's assignment of ``topic`` as ``/brokers/topics/<t>`` says."""
        return assignment(self, topic)

    def reassign(self, topic: str, partition: int, replicas: list[int], timeout: float = 60.0) -> Assignment:
        """Move ``topic``-``partition`` to ``replicas`` with Kafka's own tool and wait until the
        move is complete (:mod:`.reassign`)."""
        return reassign(self, topic, partition, replicas, timeout)

    def rss_mb(self) -> dict[int, float | None]:
        return {b: k.rss_mb() for b, k in self.brokers.items()}
