"""A partition reassignment on real Kafka, through Kafka's own tool.

``kafka-reassign-partitions.sh --execute`` is ``org.apache.kafka.tools.reassign.
ReassignPartitionsCommand`` (the ``kafka-tools`` jar that ``epochal kafka fetch`` brings):
it sends an AlterPartitionReassignments request (KIP-455), which the ZooKeeper-mode
controller serves by writing the partition's assignment -- ``/brokers/topics/<t>``, its
``partitions`` the original replicas and the target together while ``adding_replicas`` /
``removing_replicas`` name the difference -- and moving the partition through it.  The move
is done when the topic znode's assignment is the target and names no replica being added or
removed (:func:`wait_reassigned`).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from impl.harness.kafka.cluster import KafkaCluster

TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TOOL_TIMEOUT_S = 120.0


class ReassignError(RuntimeError):
    """Kafka's tool refused the reassignment or did not answer (one line)."""


@dataclass(frozen=True)
class Assignment:
    """One partition's entry of ``/brokers/topics/<t>`` as Kafka writes it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def assignment(cluster: KafkaCluster, topic: str) -> dict[int, Assignment] | None:
    """Every partition's assignment of ``topic`` (its ``/brokers/topics/<t>`` znode), or None."""
    found = cluster.zk_read(f"/brokers/topics/{topic}")
    if found is None:
        return None
    d = json.loads(found[0])
    return {int(p): Assignment(tuple(r), tuple(d.get("adding_replicas", {}).get(p, ())),
                               tuple(d.get("removing_replicas", {}).get(p, ())))
            for p, r in d["partitions"].items()}


def start_reassignment(cluster: KafkaCluster, topic: str, partition: int, replicas: list[int]) -> str:
    """Ask for ``topic``-``partition``'s replicas to become ``replicas`` (the first the
    preferred leader) with Kafka's tool, over the bootstrap of every live broker; its output."""
    assert cluster.jars is not None
    servers = ",".join(f"{b.settings.host}:{b.settings.port}" for b in cluster.brokers.values() if b.alive)
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": partition, "replicas": replicas}]}
    path = cluster.data_dir / f"reassignment-{topic}-{partition}.json"  # kept: what was asked
    path.write_text(json.dumps(plan) + "\n")
    argv = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cluster.jars.classpath,
            TOOL, "--bootstrap-server", servers, "--reassignment-json-file", str(path), "--execute"]
    try:
        done = subprocess.run(argv, text=True, capture_output=True, timeout=TOOL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ReassignError(f"{TOOL} did not answer within {TOOL_TIMEOUT_S:.0f}s") from None
    out = done.stdout + done.stderr
    if done.returncode != 0 or "Successfully started" not in out:
        raise ReassignError(f"{TOOL} exited with {done.returncode}: {(out.strip().splitlines() or [''])[-1]}")
    return out


def wait_reassigned(cluster: KafkaCluster, topic: str, partition: int, replicas: list[int],
                    timeout: float) -> Assignment:
    """Wait until the controller finished the move: the assignment is ``replicas``, with no
    replica being added or removed, and the partition's state znode leads from one of them."""
    def done() -> Assignment | None:
        a = (assignment(cluster, topic) or {}).get(partition)
        state = cluster.partition_state(topic, partition)
        if a is None or state is None or a.replicas != tuple(replicas) or a.adding or a.removing:
            return None
        return a if state.leader in replicas and set(state.isr) <= set(replicas) else None
    return cluster.wait_until(done, timeout, f"{topic}-{partition} reassigned to {replicas}", every=0.2)


def reassign(cluster: KafkaCluster, topic: str, partition: int, replicas: list[int],
             timeout: float = 60.0) -> Assignment:
    """Move ``topic``-``partition`` to ``replicas`` and wait until the move is complete."""
    start_reassignment(cluster, topic, partition, replicas)
    return wait_reassigned(cluster, topic, partition, replicas, timeout)
