"""Kafka 3.9's log lines, one named pattern each, and what each says.

Every pattern is tested on real lines captured from a run (tests/conformance/kafka/
fixtures).  A line is ``[yyyy-mm-dd hh:mm:ss,mmm] LEVEL [thread] message (logger)``; the
log4j layout of ``impl.harness.kafka.config`` writes it so in every file.  The patterns
hold for Kafka 3.x in ZooKeeper mode (``VERSIONS``); a version whose wording differs gets
its own table here rather than looser patterns.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

VERSIONS = re.compile(r"3\.[0-9]+\.[0-9]+")
"""Kafka versions whose log wording these patterns follow."""

LINE = re.compile(r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>[A-Z]+) "
                  r"\[(?P<thread>[^\]]*)\] (?P<message>.*)$")

_ISR_STATES = r"List\((?P<states>(?:BrokerState\(brokerId=\d+, brokerEpoch=-?\d+\)(?:, )?)*)\)"

PATTERNS: dict[str, re.Pattern[str]] = {
    # server.log: the broker's registration, /brokers/ids/N created with this czxid
    "registered": re.compile(r"Registered broker (?P<broker>\d+) at path /brokers/ids/\d+ with addresses: "
                             r".*czxid \(broker epoch\): (?P<czxid>-?\d+)"),
    # controller.log: /controller created and /controller_epoch bumped
    "controller_elected": re.compile(r"\[Controller id=(?P<broker>\d+)\] \d+ successfully elected as the "
                                     r"controller\. Epoch incremented to (?P<epoch>\d+)"),
    # state-change.log, the controller's partition state machine: a leader (and ISR) written
    "leader_elected": re.compile(
        r"\[Controller id=(?P<controller>\d+) epoch=(?P<cepoch>\d+)\] Changed partition (?P<tp>\S+) from "
        r"(?P<from>\w+)Partition to OnlinePartition with state LeaderAndIsr\(leader=(?P<leader>-?\d+), "
        r"leaderEpoch=(?P<epoch>\d+), isrWithBrokerEpoch=" + _ISR_STATES + r", "
        r"leaderRecoveryState=\w+, partitionEpoch=(?P<version>\d+)\)"),
    # controller.log: what the controller's event thread is handling, which says why the
    # partition state writes after it were made -- a preferred-replica election of the
    # partitions named, a controlled shutdown of a broker, a broker failure
    "election_trigger": re.compile(
        r"\[Controller id=(?P<controller>\d+)\] (?:Starting replica leader election \((?P<election>\w+)\) for "
        r"partitions (?P<tps>\S*) triggered by|Shutting down broker (?P<stopping>\d+) \(|Broker failure callback for "
        r"(?P<failed>[\d,]+) \()"),
    # the replica state machine taking a dead replica out of the ISR (and its leadership)
    "replica_offline": re.compile(
        r"\[Controller id=(?P<controller>\d+) epoch=(?P<cepoch>\d+)\] Partition (?P<tp>\S+) state changed to "
        r"\(Leader:(?P<leader>-?\d+),ISR:(?P<isr>[\d,]*),LeaderRecoveryState:\w+,LeaderEpoch:(?P<epoch>\d+),"
        r"ZkVersion:(?P<version>\d+),ControllerEpoch:\d+\) after removing replica (?P<replica>\d+) from the ISR"),
    # controller.log: a partition's assignment written to /brokers/topics/<t> -- a
    # reassignment's start (AR = target + original, the replicas being added and removed)
    # and its end (AR = target, none being added or removed)
    "assignment_updated": re.compile(
        r"\[Controller id=(?P<controller>\d+)\] Successfully updated assignment of partition (?P<tp>\S+) to "
        r"ReplicaAssignment\(replicas=(?P<replicas>[\d,]*), addingReplicas=(?P<adding>[\d,]*), "
        r"removingReplicas=(?P<removing>[\d,]*)\)"),
    # controller.log: a reassignment's target replicas all in the ISR -- the partition state
    # write that follows is the move's completion (a new leader, or the leader's new epoch)
    "reassign_caught_up": re.compile(
        r"\[Controller id=(?P<controller>\d+)\] Target replicas \w*\((?P<target>[\d, ]*)\) have all caught up "
        r"with the leader for reassigning partition (?P<tp>\S+)"),
    # state-change.log, the controller: a reassigned partition's leader epoch bumped for the
    # same leader and ISR (Kafka's updateLeaderEpochAndSendRequest), written and sent
    "reassign_epoch": re.compile(
        r"\[Controller id=(?P<controller>\d+) epoch=(?P<cepoch>\d+)\] Sent LeaderAndIsr request \(Leader:"
        r"(?P<leader>-?\d+),ISR:(?P<isr>[\d,]*),LeaderRecoveryState:\w+,LeaderEpoch:(?P<epoch>\d+),"
        r"ZkVersion:(?P<version>\d+),ControllerEpoch:\d+\) with new replica assignment ReplicaAssignment\("
        r"replicas=(?P<replicas>[\d,]*), addingReplicas=(?P<adding>[\d,]*), removingReplicas=(?P<removing>[\d,]*)\)"
        r" to leader \d+ for partition being reassigned (?P<tp>\S+)"),
    # state-change.log, a broker's receipt of a StopReplica
    "stop_replica_received": re.compile(
        r"\[Broker id=(?P<broker>\d+)\] Received StopReplica request StopReplicaPartitionState\("
        r"partitionIndex=\d+, leaderEpoch=(?P<epoch>-?\d+), deletePartition=(?P<delete>true|false)\) "
        r"correlation id \d+ from controller (?P<controller>\d+) epoch (?P<cepoch>\d+) for partition (?P<tp>\S+)"),
    # state-change.log, a broker's receipt of a LeaderAndIsr partition state
    "leader_and_isr_received": re.compile(
        r"\[Broker id=(?P<broker>\d+)\] Received LeaderAndIsr request LeaderAndIsrPartitionState\("
        r"topicName='(?P<topic>[^']+)', partitionIndex=(?P<partition>\d+), controllerEpoch=(?P<cepoch>\d+), "
        r"leader=(?P<leader>-?\d+), leaderEpoch=(?P<epoch>\d+), isr=\[(?P<isr>[\d, ]*)\], "
        r"partitionEpoch=(?P<version>\d+), replicas=\[(?P<replicas>[\d, ]*)\]"),
    # ... applied: the broker leads from its log end offset ...
    "became_leader": re.compile(
        r"\[Broker id=(?P<broker>\d+)\] Leader (?P<tp>\S+) with topic id (?P<topic_id>\S+) starts at leader epoch "
        r"(?P<epoch>\d+) from offset (?P<leo>\d+) with partition epoch (?P<version>\d+), high watermark "
        r"(?P<hw>\d+), ISR \[(?P<isr>[\d,]*)\]"),
    # ... or follows
    "became_follower": re.compile(
        r"\[Broker id=(?P<broker>\d+)\] Follower (?P<tp>\S+) starts at leader epoch (?P<epoch>\d+) from "
        r"offset (?P<leo>\d+) with partition epoch (?P<version>\d+) and high watermark (?P<hw>\d+)\. "
        r"Current leader is (?P<leader>-?\d+)\."),
    # partition.log: a partition's log loaded at the broker's first LeaderAndIsr naming it, with
    # the HW its replication-offset checkpoint held (conformance.kafka.checkpoints)
    "log_loaded": re.compile(r"\[Partition (?P<tp>\S+) broker=(?P<broker>\d+)\] Log loaded for partition \S+ with "
                             r"initial high watermark (?P<hw>\d+)"),
    # server.log, a broker's LeaderAndIsr handling: a partition taken off its replica fetcher
    # (to be added again at its new epoch: conformance.kafka.fetchers)
    "fetcher_removed": re.compile(r"\[ReplicaFetcherManager on broker (?P<broker>\d+)\] Removed fetcher for "
                                  r"partitions \w*\((?P<tps>[^)]*)\)"),
    # server.log, the replica fetcher: the truncation an epoch lookup decided
    "truncated": re.compile(
        r"\[ReplicaFetcher replicaId=(?P<broker>\d+), leaderId=(?P<leader>\d+), fetcherId=\d+\] Truncating "
        r"partition (?P<tp>\S+) with TruncationState\(offset=(?P<offset>\d+), completed=true\) due to "
        r"(?P<why>leader epoch and offset|local high watermark)"),
    # partition.log, the leader: its ISR written (by itself under IBP 2.6)
    "isr_updated": re.compile(r"\[Partition (?P<tp>\S+) broker=(?P<broker>\d+)\] ISR updated to "
                              r"(?P<isr>[\d,]+)\s+and version updated to (?P<version>\d+)"),
    "hw_updated": re.compile(r"\[Partition (?P<tp>\S+) broker=(?P<broker>\d+)\] High watermark updated from "
                             r"\(offset=(?P<old>\d+), .*\) to \(offset=(?P<hw>\d+),"),
    # kafka-request.log: every request completed, as JSON
    "request": re.compile(r"Completed request:(?P<json>\{.*\}) \(kafka\.request\.logger\)$"),
}


class Line(NamedTuple):
    ts: float  # seconds since the epoch, local time as Kafka wrote it
    level: str
    thread: str
    name: str  # which pattern matched
    fields: dict[str, Any]


def timestamp(text: str) -> float:
    """Kafka's log time (local time, millisecond precision) as seconds since the epoch."""
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def ints(text: str) -> list[int]:
    """``"3, 1, 2"`` or ``"3,1,2"`` as ``[3, 1, 2]``."""
    return [int(x) for x in re.split(r"[,\s]+", text.strip()) if x]


def parse(text: str) -> Line | None:
    """The line's time and the named pattern it matches with its fields, or None."""
    m = LINE.match(text)
    if m is None:
        return None
    message = m["message"]
    for name, pattern in PATTERNS.items():
        found = pattern.search(message)
        if found is None:
            continue
        fields: dict[str, Any] = dict(found.groupdict())
        if name == "request":
            try:
                fields = {"request": json.loads(fields["json"])}
            except ValueError:
                return None
        elif name == "leader_elected":
            fields["isr"] = [int(b) for b in re.findall(r"brokerId=(\d+)", fields.pop("states"))]
        return Line(timestamp(m["time"]), m["level"], m["thread"], name, fields)
    return None


def parse_file(lines: Iterator[str]) -> Iterator[Line]:
    for text in lines:
        line = parse(text.rstrip("\n"))
        if line is not None:
            yield line


def topic_partition(tp: str) -> tuple[str, int]:
    """``orders-0`` as ``("orders", 0)`` (topic names may hold dashes: the last one splits)."""
    topic, _, partition = tp.rpartition("-")
    return topic, int(partition)
