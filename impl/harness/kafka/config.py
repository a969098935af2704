"""What one real Kafka broker is started with: server.properties, log4j.properties, JAAS.

Pure functions of a :class:`KafkaBrokerSettings`; nothing here starts a process.

* **Profiles** (:data:`PROFILES`): ``ibp-2.6`` pins ``inter.broker.protocol.version=2.6``,
  below 2.7-IV2, so a leader writes a shrunk or expanded ISR to ZooKeeper itself (as the
  model's leaders do); ``3.9`` leaves Kafka's default, under which a leader asks the
  controller with AlterPartition and only the controller writes partition state.
* **Timeouts** are short so that a failover takes seconds, not the production minutes:
  the ZooKeeper session (the embedded server's tickTime of 200 ms caps it at 4 s), the
  replica lag, controlled shutdown's retries.  Internal topics get one partition and a
  replication factor no larger than the cluster.
* **Logs** (:func:`log4j_properties`) go to files in the broker's ``logs/`` directory, one
  per logger a later trace adapter reads: ``state-change.log`` (TRACE: every LeaderAndIsr,
  UpdateMetadata and StopReplica sent and received), ``controller.log`` (TRACE),
  ``partition.log`` (``kafka.cluster.Partition`` at DEBUG: ISR changes, high watermarks),
  ``kafka-request.log`` (the request log at DEBUG: every request completed) and
  ``server.log`` (everything else at INFO).  Each line starts with an ISO-8601 timestamp
  in milliseconds, the level and the thread.
* **ZooKeeper ACLs** stay on: the broker signs in to ZooKeeper with SASL DIGEST-MD5 as the
  cluster's identity (:data:`impl.node.auth.zookeeper.ZK_USER`, the password derived from
  the cluster secret) and ``zookeeper.set.acl=true`` makes every znode it creates writable
  by that identity only (and readable by anyone, as the harness's own brokers do).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CHROOT = "/kafka"
"""The brokers' ZooKeeper chroot: Kafka creates it with the cluster's ACL, so no other
client can delete or pre-create ``/controller`` beneath it."""

SESSION_TIMEOUT_MS = 3000


@dataclass(frozen=True)
class KafkaProfile:
    """A way of running real Kafka: its name and ``inter.broker.protocol.version`` (None:
    the release's own default)."""

    name: str
    inter_broker_protocol_version: str | None
    summary: str

    @property
    def leader_writes_isr(self) -> bool:
        """Below 2.7-IV2 the leader writes the ISR to ZooKeeper itself; from it on, the
        controller does, on the leader's AlterPartition."""
        return self.inter_broker_protocol_version is not None and \
            _version_tuple(self.inter_broker_protocol_version) < (2, 7)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("-")[0].split("."))


PROFILES: dict[str, KafkaProfile] = {
    p.name: p for p in (
        KafkaProfile("ibp-2.6", "2.6", "inter.broker.protocol.version=2.6: the leader writes the ISR "
                     "to ZooKeeper (the ZooKeeper-era protocol the model follows)"),
        KafkaProfile("3.9", None, "the release's default protocol version: the leader asks the "
                     "controller with AlterPartition"),
    )
}
DEFAULT_PROFILE = "ibp-2.6"


@dataclass(frozen=True)
class KafkaBrokerSettings:
    """Everything one broker's files are rendered from."""

    broker_id: int
    port: int
    zookeeper: str  # host:port of the ensemble, without the chroot
    broker_dir: Path  # the broker's own directory: its config, log dir and log4j files
    cluster_size: int
    profile: KafkaProfile
    session_timeout_ms: int = SESSION_TIMEOUT_MS
    replica_lag_time_ms: int = 4000
    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    host: str = "127.0.0.1"
    advertised_port: int | None = None  # a relay's port (impl.harness.kafka.relay), else ``port``

    @property
    def log_dir(self) -> Path:
        """Kafka's ``log.dirs``: the partitions' segments."""
        return self.broker_dir / "kafka-logs"

    @property
    def log4j_dir(self) -> Path:
        """Where the broker's log4j files go (``kafka.logs.dir``)."""
        return self.broker_dir / "logs"

    @property
    def properties_path(self) -> Path:
        return self.broker_dir / "server.properties"

    @property
    def log4j_path(self) -> Path:
        return self.broker_dir / "log4j.properties"

    @property
    def jaas_path(self) -> Path:
        return self.broker_dir / "jaas.conf"


def server_properties(s: KafkaBrokerSettings) -> dict[str, str]:
    """The broker's server.properties, as ordered key/value pairs."""
    internal_rf = str(min(3, s.cluster_size))
    props = {
        "broker.id": str(s.broker_id),
        "listeners": f"PLAINTEXT://{s.host}:{s.port}",
        # what other brokers and clients connect to: a relay in front of the broker, if any
        "advertised.listeners": f"PLAINTEXT://{s.host}:{s.advertised_port or s.port}",
        "log.dirs": str(s.log_dir),
        "zookeeper.connect": f"{s.zookeeper}{CHROOT}",
        "zookeeper.session.timeout.ms": str(s.session_timeout_ms),
        "zookeeper.connection.timeout.ms": "10000",
        "zookeeper.set.acl": "true",
        "replica.lag.time.max.ms": str(s.replica_lag_time_ms),
        "replica.fetch.wait.max.ms": "200",
        "min.insync.replicas": str(s.min_insync_replicas),
        "unclean.leader.election.enable": str(s.unclean_leader_election).lower(),
        "controlled.shutdown.enable": "true",
        "controlled.shutdown.max.retries": "3",
        "controlled.shutdown.retry.backoff.ms": "500",
        "controller.socket.timeout.ms": "5000",
        "offsets.topic.replication.factor": internal_rf,
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.partitions": "1",
        "default.replication.factor": str(s.cluster_size),
        # leadership moves only when the test makes it move
        "auto.create.topics.enable": "false",
        "auto.leader.rebalance.enable": "false",
        # a small broker on a shared machine: few threads, no 128 MB cleaner buffer
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.replica.fetchers": "1",
        "background.threads": "2",
        "log.cleaner.enable": "false",
        "log.segment.bytes": str(16 * 1024 * 1024),
    }
    if s.profile.inter_broker_protocol_version is not None:
        props["inter.broker.protocol.version"] = s.profile.inter_broker_protocol_version
    return props


def render_properties(props: dict[str, str]) -> str:
    """Java properties text; values here never need escaping beyond backslashes."""
    return "".join(f"{k}={v.replace(chr(92), chr(92) * 2)}\n" for k, v in props.items())


LOG_FILES: dict[str, tuple[str, str]] = {
    # appender name: (file in logs/, the loggers it takes at which level, as "logger=LEVEL,...")
    "stateChange": ("state-change.log", "state.change.logger=TRACE"),
    "controller": ("controller.log", "kafka.controller=TRACE"),
    "partition": ("partition.log", "kafka.cluster.Partition=DEBUG"),
    "request": ("kafka-request.log", "kafka.request.logger=DEBUG,kafka.network.RequestChannel$=DEBUG"),
}
"""The log files a trace adapter reads, each with the loggers routed to it only."""

LINE_PATTERN = "[%d{ISO8601}] %p [%t] %m (%c)%n"


def log4j_properties(log4j_dir: Path) -> str:
    """reload4j configuration: ``server.log`` at INFO for everything, and each of
    :data:`LOG_FILES` for its own loggers only (additivity off)."""
    lines = [
        "log4j.rootLogger=INFO, server",
        *_file_appender("server", log4j_dir / "server.log"),
    ]
    for appender, (file_name, loggers) in LOG_FILES.items():
        lines += _file_appender(appender, log4j_dir / file_name)
        for entry in loggers.split(","):
            logger, level = entry.split("=")
            lines += [f"log4j.logger.{logger}={level}, {appender}",
                      f"log4j.additivity.{logger}=false"]
    lines += ["log4j.logger.org.apache.zookeeper=WARN", "log4j.logger.kafka=INFO",
              "log4j.logger.org.apache.kafka=INFO"]
    return "\n".join(lines) + "\n"


def _file_appender(name: str, path: Path) -> list[str]:
    return [f"log4j.appender.{name}=org.apache.log4j.FileAppender",
            f"log4j.appender.{name}.File={path}",
            f"log4j.appender.{name}.Append=true",
            f"log4j.appender.{name}.layout=org.apache.log4j.PatternLayout",
            f"log4j.appender.{name}.layout.ConversionPattern={LINE_PATTERN}"]


def client_jaas(user: str, password: str) -> str:
    """The broker's JAAS file: its ZooKeeper client signs in with SASL DIGEST-MD5."""
    return ("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
            f'  username="{user}"\n  password="{password}";\n}};\n')


def broker_jvm_args(s: KafkaBrokerSettings, classpath: str, heap_mb: int = 256) -> list[str]:
    """The ``java`` arguments that run the broker (``kafka.Kafka server.properties``)."""
    return [
        f"-Xmx{heap_mb}m", f"-Xms{min(heap_mb, 64)}m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={s.log4j_dir}", f"-Dlog4j.configuration=file:{s.log4j_path}",
        f"-Djava.security.auth.login.config={s.jaas_path}",
        "-cp", classpath, "kafka.Kafka", str(s.properties_path),
    ]
