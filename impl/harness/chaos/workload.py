"""The workload of a chaos run, and what it saw.

A producer writes unique values round-robin over the partitions of the topic through the
run's client (:mod:`~impl.harness.chaos.clients`: Epochal's own sends each value exactly once
-- no client retries, so a value found twice is the system's duplicate; Kafka's clients
retry as their idempotent producers do), a consumer reads what is committed, and the
targeted faults send a burst of writes in one produce request.  Every write attempted,
every acknowledgement (the client's delivery report: where the leader put the value) and
every committed record read goes into the :class:`Ledger` the verdict judges.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from impl.harness.chaos.clients import ChaosClient, Delivery, EpochalClient, OnDelivery
from impl.harness.chaos.schedule import ADMIN_PARTITIONS, ADMIN_TOPIC, BURST, PARTITIONS, TOPIC

FLUSH_TIMEOUT = 15.0  # seconds a producer loop waits for its outstanding delivery reports


@dataclass(frozen=True)
class Ack:
    """An acknowledged write: where the leader said it put it."""

    partition: int
    value: str
    offset: int  # -1: acknowledged, but the client did not say where (clients.Delivery)
    leader_epoch: int
    leader: int
    acks: int
    stream: str  # writes of one stream were sent one after another: their order must hold
    t: float  # seconds after the workload started
    topic: str = TOPIC
    incarnation: int = 0  # how many times the topic had been deleted before the write was sent


@dataclass
class Ledger:
    """Every write attempted and acknowledged, and every committed record the consumer read;
    shared by the workload threads (hence the lock)."""

    attempted: int = 0
    failed: int = 0
    acked: list[Ack] = field(default_factory=list)
    consumed: dict[tuple[int, int], str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attempt(self, n: int = 1) -> None:
        with self.lock:
            self.attempted += n

    def fail(self, n: int = 1) -> None:
        with self.lock:
            self.failed += n

    def ack(self, acks: list[Ack]) -> None:
        with self.lock:
            self.acked.extend(acks)


class Workload:
    """The producer and consumer threads' loops, and the bursts, against one cluster; all
    of it recorded in ``ledger``.  Times are seconds after ``t0`` (``time.monotonic``)."""

    def __init__(self, bootstrap: str, ledger: Ledger, seed: int, acks: int, t0: float,
                 stop: threading.Event, client: Callable[[], ChaosClient] | None = None) -> None:
        self.bootstrap, self.ledger, self.seed, self.acks, self.t0 = bootstrap, ledger, seed, acks, t0
        # the client the producer loops write through (a new one per loop); the bursts and
        # the consumer are Epochal's own
        self.client = client or (lambda: EpochalClient(bootstrap, acks))
        self.stop = stop
        self.admin_gate = threading.Lock()  # held by a re-creation of ADMIN_TOPIC
        self.incarnation = 0  # ADMIN_TOPIC's deletions so far (changed under admin_gate)

    def burst(self, p: int, leader: int, label: str) -> int:
        """One produce request of BURST new values to partition ``p``; returns how many were
        acknowledged (all or none)."""
        from impl.node.client import Producer

        values = [f"s{self.seed}-{label}-{i}" for i in range(BURST)]
        # acks=all: wait longer than replica.lag.time.max, so the ISR can shrink under the
        # waiting burst (min.insync.replicas must still refuse it then)
        producer = Producer(self.bootstrap, acks=self.acks, retries=0,
                            request_timeout_ms=1000 if self.acks == 1 else 3000, timeout=5)
        t = time.monotonic() - self.t0
        self.ledger.attempt(len(values))
        try:
            resp = producer.send_batch(TOPIC, list(values), partition=p)
        except Exception:  # noqa: BLE001 - not acknowledged, whatever the reason
            self.ledger.fail(len(values))
            return 0
        finally:
            producer.close()
        base, epoch = int(resp["base_offset"]), int(resp["leader_epoch"])
        self.ledger.ack([Ack(p, v, base + i, epoch, leader, self.acks, label, t)
                         for i, v in enumerate(values)])
        return len(values)

    def produce_loop(self) -> None:
        """Write one new value at a time to the main topic, round-robin over the partitions,
        until stopped; each write's delivery report goes into the ledger."""
        self._produce(TOPIC, PARTITIONS, "w", "workload", 0.01, None)

    def admin_produce_loop(self) -> None:
        """The same on ADMIN_TOPIC, each write sent and reported within one incarnation of
        the topic (under :attr:`admin_gate`), so that its acknowledgement names it."""
        self._produce(ADMIN_TOPIC, ADMIN_PARTITIONS, "a", "admin-workload", 0.02, self.admin_gate)

    def _produce(self, topic: str, partitions: int, tag: str, source: str, pause: float,
                 gate: Any) -> None:
        client = self.client()
        n = 0
        try:
            while not self.stop.is_set():
                p = n % partitions
                value = f"s{self.seed}-{tag}{n}"
                n += 1
                self.ledger.attempt()
                with gate if gate is not None else contextlib.nullcontext():
                    incarnation = self.incarnation if gate is not None else 0
                    client.send(topic, p, value, self.recorder(source, time.monotonic() - self.t0,
                                                               incarnation))
                    if gate is not None:
                        client.flush(FLUSH_TIMEOUT)
                time.sleep(pause)  # a steady load the conformance judge can follow
            client.flush(FLUSH_TIMEOUT)  # the reports still outstanding: not sent again
        finally:
            client.close()

    def recorder(self, stream: str, t: float, incarnation: int) -> OnDelivery:
        """Where a send's delivery report goes: an acknowledgement into the ledger, or a
        failure (never sent again by the workload)."""
        def record(d: Delivery) -> None:
            if d.error is not None:
                self.ledger.fail()
            else:
                self.ledger.ack([Ack(d.partition, d.value, d.offset, d.leader_epoch, d.leader,
                                     self.acks, stream, t, d.topic, incarnation)])
        return record

    def consume_loop(self) -> None:
        """Read what is committed, until stopped; each (partition, offset) keeps the value
        last read there."""
        from impl.node.client import Consumer

        consumer = Consumer(self.bootstrap, timeout=3)
        try:
            while not self.stop.is_set():
                try:
                    if not consumer.positions:
                        consumer.assign(TOPIC)
                    batch = consumer.poll(max_wait_ms=200)
                except Exception:  # noqa: BLE001 - the cluster is in a fault: try again
                    time.sleep(0.2)
                    continue
                with self.ledger.lock:
                    for _t, p, o, v in batch:
                        self.ledger.consumed[(p, o)] = v.decode("utf-8", "replace")
        finally:
            consumer.close()

