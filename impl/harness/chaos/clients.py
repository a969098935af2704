"""The client a chaos run's workload writes and reads back through (``--client``).

One small interface, :class:`ChaosClient`, and three clients behind it: Epochal's own
(``epochal``, the broker protocol, :mod:`impl.node.client`) and two of Kafka's own clients
through the brokers' Kafka listeners (docs/kafka-protocol.md) -- ``confluent``
(confluent-kafka, i.e. librdkafka) and ``kafka-python``.  The workload and the verdict do
not know which one ran: every send ends in exactly one :class:`Delivery` per delivery
report the client gives, and the read-back gives each partition's committed log.

Epochal's client sends each value once (no retries: a value found twice is the system's
duplicate).  Kafka's clients run as their users run them -- acks=all, the idempotent
producer on, retries as the client does them -- so a value found twice is a duplicate the
idempotent producer should have prevented.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

LogRecords = list[tuple[int, int, str]]  # (offset, leader_epoch, value)

CLIENTS = ("epochal", "confluent", "kafka-python")
KAFKA_USER = "chaos"  # the Kafka clients' SCRAM user (any name is a user: docs/security.md)
DELIVERY_TIMEOUT_MS = 10000  # a Kafka client's retries of one send end after this
REQUEST_TIMEOUT_MS = 3000  # acks=all: longer than replica.lag.time.max, as the bursts wait
READ_TIMEOUT = 30.0  # seconds the read-back has to reach every partition's high watermark


@dataclass(frozen=True)
class Delivery:
    """A client's report on one send: acknowledged at ``offset`` (``error`` None), or failed."""

    topic: str
    partition: int
    value: str
    # -1: the client does not say -- librdkafka's report on a retry the leader answered
    # DUPLICATE_SEQUENCE_NUMBER (delivered before, too long ago for the leader to say where)
    offset: int = -1
    leader_epoch: int = -1  # -1: the client does not say (the verdict reads it from the log)
    leader: int = -1  # -1: the client does not say
    error: str | None = None


OnDelivery = Callable[[Delivery], None]


class ChaosClient(Protocol):
    """What the workload needs of a client: send a value to a partition (its delivery report
    comes to ``on_delivery``, now or later), wait for the reports outstanding, and read a
    topic's partitions back by assignment from the earliest offset to the high watermark."""

    name: str

    def send(self, topic: str, partition: int, value: str, on_delivery: OnDelivery) -> None: ...

    def flush(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for every outstanding delivery report; how many
        are still outstanding."""
        ...

    def read_all(self, topic: str, partitions: int) -> tuple[dict[int, LogRecords], list[str]]:
        """Each partition's committed log, and a problem for each partition that could not
        be read to its high watermark."""
        ...

    def close(self) -> None: ...


class EpochalClient:
    """Epochal's own producer and fetches (the broker protocol): each send synchronous and
    never retried; the leader's answer names its leader epoch, the leader from metadata."""

    name = "epochal"

    def __init__(self, bootstrap: str, acks: int) -> None:
        self.bootstrap, self.acks = bootstrap, acks
        self._producer: Any = None

    def send(self, topic: str, partition: int, value: str, on_delivery: OnDelivery) -> None:
        from impl.node.client import Producer

        if self._producer is None:
            self._producer = Producer(self.bootstrap, acks=self.acks, retries=0,
                                      request_timeout_ms=2000, timeout=4)
        producer = self._producer
        try:
            info = producer.partitions(topic).get(partition)
            leader = info.leader if info else -1
            resp = producer.send(topic, value, partition=partition)
        except Exception as exc:  # noqa: BLE001 - not acknowledged: never resent
            on_delivery(Delivery(topic, partition, value, error=f"{type(exc).__name__}: {exc}"))
            try:
                producer.refresh()
            except Exception:  # noqa: BLE001 - no broker answers right now
                pass
            time.sleep(0.05)
            return
        on_delivery(Delivery(topic, partition, value, int(resp["base_offset"]),
                             int(resp["leader_epoch"]), leader))

    def flush(self, timeout: float) -> int:
        return 0  # every send was answered before it returned

    def read_all(self, topic: str, partitions: int) -> tuple[dict[int, LogRecords], list[str]]:
        from impl.node.client import Client
        from impl.node.wire import ApiKey

        out: dict[int, LogRecords] = {}
        problems: list[str] = []
        with Client(self.bootstrap, timeout=5) as c:
            for p in range(partitions):
                records: LogRecords = []
                hw = None
                try:
                    c.refresh()
                    while hw is None or len(records) < hw:
                        resp = c.call(c.leader_addr(topic, p), ApiKey.FETCH, {
                            "replica_id": -1, "topic": topic, "partition": p,
                            "fetch_offset": len(records), "max_records": 5000, "max_wait_ms": 0})
                        hw = int(resp["hw"])
                        got = [(int(o), int(e), bytes(v).decode("utf-8", "replace"))
                               for o, e, v in resp["records"]]
                        if not got:
                            break
                        records.extend(got)
                except Exception as exc:  # noqa: BLE001 - no leader serving: judged as read
                    problems.append(_unread(topic, p, len(records), exc))
                out[p] = records
        return out, problems

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()


class ConfluentClient:
    """confluent-kafka (librdkafka): ``enable.idempotence=true``, acks=all, its own retries
    within ``delivery.timeout.ms``; the delivery callback's error or offset (and the leader
    epoch librdkafka knew) is the report."""

    name = "confluent"

    def __init__(self, properties: dict[str, str]) -> None:
        self.properties = properties
        self._producer: Any = None
        self._fatal = False  # the producer had a fatal error (_on_error)

    def _open(self) -> Any:
        import confluent_kafka

        if self._producer is None:
            self._producer = confluent_kafka.Producer({
                **self.properties, "acks": "all", "enable.idempotence": True,
                "delivery.timeout.ms": DELIVERY_TIMEOUT_MS, "request.timeout.ms": REQUEST_TIMEOUT_MS,
                "linger.ms": 0, "error_cb": self._on_error})
        return self._producer

    def send(self, topic: str, partition: int, value: str, on_delivery: OnDelivery) -> None:
        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                on_delivery(Delivery(topic, partition, value, error=str(err)))
            else:
                epoch, offset = msg.leader_epoch(), msg.offset()
                on_delivery(Delivery(topic, partition, value, -1 if offset is None else offset,
                                     -1 if epoch is None else epoch))

        self._drop_if_fatal()
        producer = self._open()
        try:
            producer.produce(topic, value=value.encode(), partition=partition, on_delivery=delivered)
        except Exception as exc:  # noqa: BLE001 - refused before it was queued (BufferError, a fatal error)
            on_delivery(Delivery(topic, partition, value, error=f"{type(exc).__name__}: {exc}"))
        try:
            producer.poll(0)  # serve the delivery reports that are in
        except Exception as exc:  # a fatal error is raised here too, once its reports are served
            if not (exc.args and hasattr(exc.args[0], "fatal") and exc.args[0].fatal()):
                raise
            self._fatal = True

    def _on_error(self, err: Any) -> None:
        """librdkafka's error reports: it retries every error but a fatal one itself."""
        if err.fatal():
            self._fatal = True

    def _drop_if_fatal(self) -> None:
        """After a fatal error the producer sends nothing more -- the idempotent producer's
        sequence desynchronised (OUT_OF_ORDER_SEQUENCE_NUMBER) when an unclean election
        dropped records it had written -- and an application's remedy is a new one: the
        values it still held fail (reported as such), and the next send opens another."""
        if self._producer is None or not self._fatal:
            return
        producer, self._producer, self._fatal = self._producer, None, False
        producer.purge()
        with contextlib.suppress(Exception):  # the fatal error, raised again as its reports are served
            producer.flush(0)

    def flush(self, timeout: float) -> int:
        self._drop_if_fatal()
        return 0 if self._producer is None else int(self._producer.flush(timeout))

    def read_all(self, topic: str, partitions: int) -> tuple[dict[int, LogRecords], list[str]]:
        import confluent_kafka

        consumer = confluent_kafka.Consumer({**self.properties, "group.id": "epochal-chaos",
                                             "enable.auto.commit": False})
        out: dict[int, LogRecords] = {p: [] for p in range(partitions)}
        problems: list[str] = []
        try:
            hw = {}
            for p in range(partitions):
                try:
                    hw[p] = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p),
                                                           timeout=10)[1]
                except Exception as exc:  # noqa: BLE001 - no leader serving: judged as read
                    problems.append(_unread(topic, p, 0, exc))
            consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                             for p in hw if hw[p] > 0])
            deadline = time.monotonic() + READ_TIMEOUT
            while any(len(out[p]) < hw[p] for p in hw) and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None or msg.error() is not None:
                    continue
                p = msg.partition()
                if msg.offset() == len(out[p]) and msg.offset() < hw[p]:
                    epoch = msg.leader_epoch()
                    out[p].append((msg.offset(), -1 if epoch is None else epoch,
                                   msg.value().decode("utf-8", "replace")))
        finally:
            consumer.close()
        problems += _short(topic, out, hw)
        return out, problems

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(0)
            self._producer = None


class KafkaPythonClient:
    """kafka-python: its defaults (idempotent, acks=all, retries within
    ``delivery_timeout_ms``); the send's future -- its result's offset, or its exception --
    is the report."""

    name = "kafka-python"

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self._producer: Any = None

    def _open(self) -> Any:
        import kafka

        if self._producer is None:
            self._producer = kafka.KafkaProducer(acks="all", enable_idempotence=True, linger_ms=0,
                                                 delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
                                                 request_timeout_ms=REQUEST_TIMEOUT_MS, **self.config)
        return self._producer

    def send(self, topic: str, partition: int, value: str, on_delivery: OnDelivery) -> None:
        try:
            future = self._open().send(topic, value=value.encode(), partition=partition)
        except Exception as exc:  # noqa: BLE001 - refused before it was queued
            on_delivery(Delivery(topic, partition, value, error=f"{type(exc).__name__}: {exc}"))
            return
        future.add_callback(lambda md: on_delivery(Delivery(topic, partition, value, md.offset)))
        future.add_errback(lambda exc: on_delivery(
            Delivery(topic, partition, value, error=f"{type(exc).__name__}: {exc}")))

    def flush(self, timeout: float) -> int:
        if self._producer is None:
            return 0
        import kafka

        try:
            self._producer.flush(timeout)
        except kafka.errors.KafkaTimeoutError:
            return -1  # kafka-python does not say how many: some
        return 0

    def read_all(self, topic: str, partitions: int) -> tuple[dict[int, LogRecords], list[str]]:
        import kafka

        out: dict[int, LogRecords] = {p: [] for p in range(partitions)}
        consumer = kafka.KafkaConsumer(enable_auto_commit=False, **self.config)
        try:
            tps = [kafka.TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            hw = {tp.partition: int(o) for tp, o in consumer.end_offsets(tps).items()}
            consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + READ_TIMEOUT
            while any(len(out[p]) < hw[p] for p in hw) and time.monotonic() < deadline:
                for tp, msgs in consumer.poll(timeout_ms=500).items():
                    for m in msgs:
                        p = tp.partition
                        if m.offset == len(out[p]) and m.offset < hw[p]:
                            out[p].append((m.offset, -1 if m.leader_epoch is None else m.leader_epoch,
                                           m.value.decode("utf-8", "replace")))
        except Exception as exc:  # noqa: BLE001 - no leader serving: judged as read
            return out, [_unread(topic, p, len(out[p]), exc) for p in out]
        finally:
            consumer.close()
        return out, _short(topic, out, hw)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close(10)
            self._producer = None


def _unread(topic: str, p: int, offset: int, exc: Any) -> str:
    return f"could not read the final log of {topic}-{p} past offset {offset}: {exc}"


def _short(topic: str, out: dict[int, LogRecords], hw: dict[int, int]) -> list[str]:
    """A problem for each partition read short of its high watermark."""
    return [_unread(topic, p, len(out[p]), f"the high watermark is {hw[p]}")
            for p in sorted(hw) if len(out[p]) < hw[p]]


def client_factory(name: str, cluster: Any, acks: int) -> Callable[[], ChaosClient]:
    """A new client of kind ``name`` (one of :data:`CLIENTS`) for ``cluster`` per call: each
    workload thread and the read-back have their own.  Kafka's clients get the properties
    ``epochal cluster client-config`` prints (SCRAM unless ``--insecure``, the CA with TLS)."""
    if name == "epochal":
        return lambda: EpochalClient(cluster.bootstrap, acks)
    from impl.harness.cluster import kafka_client_properties

    props = dict(kafka_client_properties(str(cluster.data_dir), KAFKA_USER))
    if name == "confluent":
        return lambda: ConfluentClient(props)
    config: dict[str, Any] = {"bootstrap_servers": props["bootstrap.servers"].split(","),
                              "security_protocol": props["security.protocol"]}
    if "sasl.mechanism" in props:
        config.update(sasl_mechanism=props["sasl.mechanism"], sasl_plain_username=props["sasl.username"],
                      sasl_plain_password=props["sasl.password"])
    if "ssl.ca.location" in props:
        config["ssl_cafile"] = props["ssl.ca.location"]
    return lambda: KafkaPythonClient(config)


def client_missing(name: str) -> str | None:
    """Why client ``name`` cannot run here (its library is not installed), or None."""
    module = {"confluent": "confluent_kafka", "kafka-python": "kafka"}.get(name)
    if module is None:
        return None
    try:
        __import__(module)
    except ImportError:
        return f"--client {name} needs the {name.replace('confluent', 'confluent-kafka')} " \
               f"library (the dev extra of pyproject.toml)"
    return None
