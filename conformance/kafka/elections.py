"""Every leader election of a real Kafka run, from the partition state writes alone.

What ``conformance.kafka.adapter.adapt`` derives of the elections, without replaying the
replicas' logs: the chaos run's report names each election, and those made outside the ISR
(``adapter.outside_isr``) -- the cause of the writes an unclean election loses.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from conformance.kafka.adapter import ALTER_CHANNEL, ordered_lines, outside_isr
from conformance.kafka.patterns import ints, topic_partition


class Elected(NamedTuple):
    """A leader the controller wrote to a partition's state znode."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    unclean: bool  # outside_isr: elected outside the ISR last written


def elections(run_dir: str | Path) -> list[Elected]:
    """Every leader election of a run, unclean or not, from the partition state writes alone
    (the controller's elections and ISR removals, an IBP 2.6 leader's own ISR writes, the
    controller's AlterPartition answers): what ``adapt`` derives, without replaying the
    replicas' logs -- a chaos run's producer batches many values in one request."""
    run_dir = Path(run_dir)
    isr: dict[tuple[str, int], list[int]] = {}
    names: dict[str, str] = {}  # topic id -> name (AlterPartition from v2 names topics by id)
    found: list[Elected] = []
    for _, line in ordered_lines(run_dir):
        f = line.fields
        if line.name == "became_leader":
            names[f["topic_id"].removeprefix("Some(").removesuffix(")")] = topic_partition(f["tp"])[0]
        elif line.name in ("leader_elected", "replica_offline", "isr_updated"):
            if line.name == "isr_updated" and ALTER_CHANNEL in line.thread:
                continue  # the leader applying the controller's write, counted at the controller
            key = topic_partition(f["tp"])
            written = f["isr"] if line.name == "leader_elected" else ints(f["isr"])
            if line.name == "leader_elected":
                leader = int(f["leader"])
                found.append(Elected(*key, leader, int(f["epoch"]), outside_isr(leader, isr.get(key))))
            isr[key] = written
        elif line.name == "request" and f["request"]["requestHeader"]["requestApiKeyName"] == "ALTER_PARTITION":
            for t in f["request"]["response"].get("topics", ()):
                topic = t.get("topicName") or names.get(t.get("topicId", ""), "")
                for pd in t["partitions"]:
                    if pd["errorCode"] == 0:
                        isr[(topic, pd["partitionIndex"])] = list(pd["isr"])
    return found
