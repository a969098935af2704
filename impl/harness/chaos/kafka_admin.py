"""``epochal chaos --engine kafka --admin``: the administrator's operations on real Kafka,
through a real admin client (confluent-kafka's ``AdminClient``) and real signals, named as
the Epochal engine's schedule names them (:mod:`impl.harness.chaos.schedule`):

* ``restart`` -- a controlled shutdown (SIGTERM: Kafka moves the broker's leaderships away
  before it exits), then the broker started again;
* ``preferred-election`` -- ``elect_leaders(PREFERRED)`` on every partition of both topics
  (Kafka answers ELECTION_NOT_NEEDED where the preferred replica already leads);
* ``recreate-topic`` -- :data:`ADMIN_TOPIC` deleted (``delete_topics``) and created again
  under the same name (``create_topics``), its writes held meanwhile;
* ``add-partitions`` -- one partition added to :data:`ADMIN_TOPIC` (``create_partitions``);
* ``reassign`` -- partition 0 of :data:`ADMIN_TOPIC` moved off its leader onto its other two
  replicas, then back to all three (the removed one last, from an empty log), each move by
  Kafka's own ReassignPartitionsCommand (``KafkaCluster.reassign``).

A second workload writes to :data:`ADMIN_TOPIC`, round-robin over its partitions, each value
sent and reported within one incarnation of the topic (:attr:`AdminWorkload.gate`): writes
acknowledged before a deletion went with the deleted topic and are not owed, as the Epochal
engine's verdict owes only the last incarnation's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from impl.harness.chaos.clients import ConfluentClient, Delivery
from impl.harness.chaos.schedule import ADMIN_TOPIC

ADMIN_KINDS = ("restart", "preferred-election", "recreate-topic", "add-partitions", "reassign")
"""Each comes once in every ``--admin`` run (every second fault until all have)."""
ADMIN_PARTITIONS = 1  # ADMIN_TOPIC's partitions at creation (add-partitions adds one each time)
SEND_EVERY = 0.05  # seconds between two values to ADMIN_TOPIC
PATIENCE = 60.0  # seconds a deletion and re-creation may take
RESTART_AFTER = 1.0  # seconds a broker stays down after its controlled shutdown


class AdminWorkload:
    """A thread sending numbered values to ADMIN_TOPIC until stopped, one at a time and
    flushed under :attr:`gate`, so that each report names the incarnation it was sent in."""

    def __init__(self, client: ConfluentClient, seed: int) -> None:
        self.client, self.seed = client, seed
        self.partitions = ADMIN_PARTITIONS
        self.incarnation = 0  # ADMIN_TOPIC's deletions so far (changed under gate)
        self.deliveries: list[tuple[int, Delivery]] = []  # (incarnation, report)
        self.sent = 0
        self.gate = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafka-chaos-admin-workload", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self.gate:
                incarnation = self.incarnation
                self.client.send(ADMIN_TOPIC, self.sent % self.partitions, f"s{self.seed}-a{self.sent}",
                                 lambda d, i=incarnation: self.deliveries.append((i, d)))
                self.sent += 1
                self.client.flush(10.0)
            self._stop.wait(SEND_EVERY)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.client.flush(30.0)
        self.client.close()

    def owed(self) -> list[Delivery]:
        """The acknowledged writes of the topic as it is now: its last incarnation's."""
        return [d for i, d in self.deliveries if i == self.incarnation and d.error is None]


def _admin(bootstrap: str, call: Callable[[Any], Any], timeout: float = 30.0) -> Any:
    """``call`` on a new admin client, and the result of the one future it returns (a
    dict of futures: its only value); Kafka's refusal as a RuntimeError."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})  # held until the answer is in
    try:
        answer = call(client)
        future = next(iter(answer.values())) if isinstance(answer, dict) else answer
        return future.result(timeout)
    except KafkaException as exc:
        raise RuntimeError(f"Kafka's admin client: {exc.args[0].str() if exc.args else exc}") from None
    finally:
        del client


def create_admin_topic(bootstrap: str, partitions: int = ADMIN_PARTITIONS, patience: float = PATIENCE) -> int:
    """Create ADMIN_TOPIC, replicated three ways, retrying while a deletion of it is still
    under way on some replica (Kafka refuses the name until then); the tries it took."""
    from confluent_kafka.admin import NewTopic

    deadline, tries = time.monotonic() + patience, 0
    while True:
        tries += 1
        try:
            _admin(bootstrap, lambda a: a.create_topics([NewTopic(ADMIN_TOPIC, partitions, 3)]), 15)
            return tries
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def admin_fault(kafka: Any, kind: str, bootstrap: str, workload: AdminWorkload, topic: str) -> str:
    """Perform one administrator's operation and wait until it took; what was done."""
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import NewPartitions

    if kind == "restart":
        state = kafka.partition_state(topic)
        victim = state.leader if state is not None else 1
        code = kafka.stop_broker(victim)
        time.sleep(RESTART_AFTER)
        kafka.restart(victim, PATIENCE)
        return f"controlled shutdown of broker {victim} (SIGTERM, exit {code}), restarted it"
    if kind == "preferred-election":
        partitions = [TopicPartition(topic, 0)] + [TopicPartition(ADMIN_TOPIC, p) for p in range(workload.partitions)]
        answers = _admin(bootstrap, lambda a: a.elect_leaders(ElectionType.PREFERRED, partitions))
        moved = sorted(f"{tp.topic}-{tp.partition}" for tp, err in answers.items() if err is None)
        return f"preferred-replica election: {', '.join(moved) or 'none needed'}"
    if kind == "recreate-topic":
        with workload.gate:
            workload.client.flush(10.0)
            _admin(bootstrap, lambda a: a.delete_topics([ADMIN_TOPIC]))
            workload.incarnation += 1
            workload.partitions = ADMIN_PARTITIONS
            tries = create_admin_topic(bootstrap)
        return f"topic {ADMIN_TOPIC} deleted and created again (incarnation {workload.incarnation}, {tries} tries)"
    if kind == "add-partitions":
        with workload.gate:
            count = workload.partitions + 1
            _admin(bootstrap, lambda a: a.create_partitions([NewPartitions(ADMIN_TOPIC, count)]))
            workload.partitions = count
        return f"topic {ADMIN_TOPIC} grown to {count} partitions"
    if kind == "reassign":
        return shrink_and_grow(kafka, ADMIN_TOPIC)
    raise ValueError(f"unknown admin operation {kind!r}")


def shrink_and_grow(kafka: Any, topic: str, partition: int = 0) -> str:
    """Two reassignments of ``topic``-``partition``: off its leader (a target the ISR holds:
    Kafka elects from it and stops the removed replica at once), then back to every replica
    it had, the removed one last (a new replica that must catch up first)."""
    before = (kafka.assignment(topic) or {}).get(partition)
    state = kafka.partition_state(topic, partition)
    if before is None or state is None:
        raise RuntimeError(f"no assignment or partition state of {topic}-{partition} in ZooKeeper")
    shrunk = [b for b in before.replicas if b != state.leader]
    kafka.reassign(topic, partition, shrunk, PATIENCE)
    kafka.reassign(topic, partition, [*shrunk, state.leader], PATIENCE)
    return f"{topic}-{partition} reassigned from {list(before.replicas)} to {shrunk} and back to {[*shrunk, state.leader]}"
