"""Broker configuration (one dataclass, parsed from ``python -m impl.node.broker`` arguments)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from pathlib import Path

from impl.node import limits
from impl.node.layout import BrokerDir, DataDir


@dataclass
class BrokerConfig:
    broker_id: int
    port: int
    zookeeper: str
    data_dir: Path  # the cluster's data dir: logs in broker-N/, traces in traces/
    run_id: str = "run"
    host: str = "127.0.0.1"
    truncation: str = "kip320"  # "hw" (seed 000 C as written) or "kip320"
    min_insync_replicas: int = 1
    replica_lag_time_ms: int = 4000  # seed 000 G MAX_TIME_LAG
    replica_lag_max_messages: int = 4000  # seed 000 G MAX_BYTES_LAG, counted in records
    unclean_leader_election: bool = False
    # seed 000 question 1: the controller's leader/ISR writes go to ZooKeeper in multis of
    # up to 500; false = one fenced conditional write per partition (the seed's baseline)
    controller_batch_zk_writes: bool = True
    zk_session_timeout_s: float = 6.0
    fetch_max_wait_ms: int = 200
    reassign_interval_s: float = 1.0  # seed 000 F: the agent's periodic wake-up
    controller_request_timeout_s: float = 3.0
    # seed 003: control requests carry the max broker epoch and one UpdateMetadata payload is
    # shared by all brokers; false = the KIP-380 format (per-broker epoch, one copy per broker)
    cache_update_metadata: bool = True
    # seed 001 (KIP-599): the controller-mutation token bucket's burst is quota x samples x
    # window (Kafka's controller.quota.window.num / controller.quota.window.size.seconds)
    controller_quota_window_num: int = 11
    controller_quota_window_size_s: float = 1.0
    # test hook (seed 004): wait this long between discovering the controller and forwarding
    # an old-version admin request to it, so a test can run an election in between
    forward_delay_ms: int = 0
    segment_bytes: int = 1 << 20
    # harness only (docs/drive.md), off in normal runs: the port registered in
    # /brokers/ids/N, where the controller and the other brokers connect (Kafka's
    # advertised.listeners); 0 = ``port``.  ``epochal drive`` puts its relay there
    advertised_port: int = 0
    # the Kafka listener (impl.node.broker.kafka_listener, docs/kafka-protocol.md): Kafka's
    # own clients on this port, registered in /brokers/ids/N as kafka_port; 0 = none
    kafka_port: int = 0
    # harness only (docs/drive.md), off in normal runs: the steps taken on a timer or on
    # the broker's own initiative wait for the harness's permit (impl.node.step_gate)
    harness_step_mode: bool = False
    # size limits (impl.node.limits, checked consistent at construction): the largest frame,
    # the largest value a producer may write (Kafka's max.message.bytes; 4 MiB rather than
    # Kafka's 1 MiB so multi-MiB values stay legal), and the record bytes one fetch response
    # carries in all (fetch.max.bytes) and per partition (max.partition.fetch.bytes)
    max_frame: int = 8 * 1024 * 1024
    max_message_bytes: int = 4 * 1024 * 1024
    fetch_max_bytes: int = 4 * 1024 * 1024
    fetch_partition_max_bytes: int = 1024 * 1024
    # authentication and connection limits, so that nobody but the cluster changes it (impl.node.auth, docs/security.md):
    # SCRAM with the data dir's cluster secret unless insecure; Kafka's max.connections,
    # max.connections.per.ip and connections.max.idle.ms, with the last connections under
    # the cap kept for brokers, and a bound on each connection's replica fetches in flight
    insecure: bool = False
    tls: bool = False  # also TLS (Kafka's SASL_SSL), with the harness's cluster CA (impl.node.auth.tls)
    max_connections: int = 1000
    max_connections_per_ip: int = 1000
    connections_broker_reserve: int = 32
    connections_max_idle_ms: int = 600_000
    authentication_timeout_ms: int = 10_000
    max_inflight_fetches: int = 256
    # durability (impl.node.log, docs/durability.md): Kafka's flush.messages / flush.ms --
    # fsync a log after this many records / milliseconds; 0 = never (the default, as Kafka's
    # and as the design's acks=all: a committed record is on every ISR replica, not on disk)
    flush_messages: int = 0
    flush_ms: int = 0
    # retention (impl.node.log): Kafka's log.retention.bytes / log.retention.ms -- delete a
    # partition's oldest whole segments past this size / age; -1 = off (the default).  The
    # model knows no retention: judged runs keep it off (docs/conformance.md)
    retention_bytes: int = -1
    retention_ms: int = -1
    # trace files (impl.node.tracing): rotated at trace_file_bytes, at most trace_files kept
    # per broker (the oldest deleted), so a long run cannot fill the disk: 64 MiB x 8
    trace_file_bytes: int = 64 * 1024 * 1024
    trace_files: int = 8

    def __post_init__(self) -> None:
        limits.check(self.max_frame, self.max_message_bytes, self.fetch_max_bytes,
                     self.fetch_partition_max_bytes)

    @property
    def files(self) -> BrokerDir:
        """This broker's directory under the data dir (impl.node.layout)."""
        return DataDir.of(self.data_dir).broker(self.broker_id)

    @property
    def log_dir(self) -> Path:
        return self.files.logs

    def to_argv(self) -> list[str]:
        argv: list[str] = []
        for f in fields(self):
            value = getattr(self, f.name)
            flag = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                argv += [flag, "true" if value else "false"]
            else:
                argv += [flag, str(value)]
        return argv

    @classmethod
    def from_argv(cls, argv: list[str] | None = None) -> BrokerConfig:
        parser = argparse.ArgumentParser(prog="python -m impl.node.broker")
        for f in fields(cls):
            flag = "--" + f.name.replace("_", "-")
            kind = {"int": int, "float": float, "bool": _bool, "Path": Path, "str": str}[str(f.type)]
            required = f.default is f.default_factory  # both MISSING for required fields
            if required:
                parser.add_argument(flag, type=kind, required=True, dest=f.name)
            else:
                parser.add_argument(flag, type=kind, default=f.default, dest=f.name)
        try:
            return cls(**vars(parser.parse_args(argv)))
        except ValueError as exc:  # inconsistent limits: one line, exit 2
            parser.error(str(exc))


def _bool(text: str) -> bool:
    return text.lower() in ("1", "true", "yes", "on")
