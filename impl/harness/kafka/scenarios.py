"""Recorded scenarios on real Kafka: a small acks=all produce workload around a fault, with
the logs the trace adapter (``conformance.kafka``) turns into a trace.

Three brokers, a topic with one partition replicated three ways, values written, one broker
killed with kill -9, more values written to the partition's leader then, the victim
restarted until it is back in the ISR.  Who leads is not left to Kafka: the topic is created
with an explicit replica assignment whose first replica -- the leader Kafka elects at
creation -- is chosen against the controller read from ``/controller``, so each scenario
kills the same role in every run (``ROLES``):

* ``leader-kill``: the victim leads the partition and is not the controller;
* ``controller-failover``: the victim is the controller and a follower of the partition;
* ``leader-controller-kill``: the victim is both the controller and the leader.

``reassign`` kills no one: the topic is replicated two ways, on the leader (not the
controller) and one more broker, and once values are written Kafka's own reassignment tool
moves the partition to the follower and the broker outside it (:data:`REASSIGN_FROM_TO`):
the leader is removed, so the controller elects the follower, and stops the removed replica.

Values are written by Kafka's own Java console producer (``kafka.tools.ConsoleProducer``,
acks=all), one process per batch of lines, so each value is acknowledged by the whole ISR.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from impl.harness.kafka.cluster import KafkaCluster, PartitionState
from impl.harness.kafka.fetch import KafkaJars, fetch
from impl.harness.kafka.reassign import ReassignError

TOPIC = "orders"
ROLES = {"leader-kill": (False, "leader"), "controller-failover": (False, "controller"),
         "leader-controller-kill": (True, "controller")}
"""scenario -> (whether the controller leads the partition, whom kill -9 hits)."""
REASSIGN = "reassign"
SCENARIOS = (*ROLES, REASSIGN)
WAIT_S = 90.0
QUIET_S = 1.0  # seconds between the last acknowledged write and a kill
PRODUCER_TIMEOUT_S = 120.0
PRODUCED = "produced.jsonl"
"""Each value the workload wrote, in order, once acknowledged (the adapter's record values)."""


class ScenarioError(RuntimeError):
    """A scenario that could not run to its end (one line)."""


def produce(cluster: KafkaCluster, jars: KafkaJars, values: list[str], acks: str = "all") -> None:
    """Write ``values`` in order with Kafka's console producer (acks=all, one in flight, no
    retries reordering them), to every live broker as bootstrap.  ``acks="1"``: each is
    acknowledged once the leader appended it (a driven step that must not wait for a
    follower the relay holds back)."""
    servers = ",".join(f"{b.settings.host}:{b.settings.port}" for b in cluster.brokers.values() if b.alive)
    argv = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", jars.classpath,
            "kafka.tools.ConsoleProducer", "--bootstrap-server", servers, "--topic", TOPIC,
            "--producer-property", f"acks={acks}",
            "--producer-property", "max.in.flight.requests.per.connection=1",
            "--producer-property", "linger.ms=0",
            "--producer-property", "enable.idempotence=false"]
    for value in values:  # one request per value: each is one model produce
        done = subprocess.run(argv, input=value + "\n", text=True, capture_output=True,
                              timeout=PRODUCER_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise ScenarioError(f"console producer exited with {done.returncode}: "
                                f"{done.stderr.strip().splitlines()[-1:]}")
        with open(cluster.data_dir / PRODUCED, "a") as out:
            out.write(json.dumps({"time": time.time(), "value": value}) + "\n")


def _full_isr(cluster: KafkaCluster, replicas: int) -> Callable[[], PartitionState | None]:
    def probe() -> PartitionState | None:
        s = cluster.partition_state(TOPIC)
        return s if s is not None and len(s.isr) == replicas else None
    return probe


def run_scenario(scenario: str, data_dir: Path, profile: str, values: int = 3,
                 jars: KafkaJars | None = None) -> Path:
    """Run ``scenario`` on a fresh 3-broker Kafka cluster in ``data_dir`` and stop it; the
    logs and ``faults.jsonl`` stay there.  Returns ``data_dir``."""
    if scenario not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    jars = jars or fetch()
    # behind relays: the adapter orders a produce before the fetch answer their log shows
    # carrying its record (conformance.kafka.ordering)
    cluster = KafkaCluster(data_dir, brokers=3, profile=profile, jars=jars, relay=True)
    cluster.start()
    try:
        ctrl = cluster.controller()
        assert ctrl is not None  # start() waited for one
        if scenario == REASSIGN:
            _reassign_scenario(cluster, jars, ctrl.broker, values)
            return cluster.data_dir
        controller_leads, role = ROLES[scenario]
        leader = ctrl.broker if controller_leads else min(b for b in cluster.brokers if b != ctrl.broker)
        replicas = [leader, *sorted(b for b in cluster.brokers if b != leader)]
        first = cluster.create_topic(TOPIC, assignment=[replicas])[0]
        now = cluster.controller()
        if first.leader != leader or now is None or now.broker != ctrl.broker:
            raise ScenarioError(f"{scenario}: wanted leader {leader} under controller {ctrl.broker}, "
                                f"got leader {first.leader} under controller {now and now.broker}")
        produce(cluster, jars, [f"v{i}" for i in range(values)])
        # the followers' fetches that moved the HW over the last value are long polls
        # (replica.fetch.wait.max.ms): let them be answered, and so logged, before the kill --
        # a request in flight at a kill -9 never reaches the request log
        time.sleep(QUIET_S)
        victim = leader if role == "leader" else ctrl.broker
        cluster.kill(victim)
        if scenario == "controller-failover":
            cluster.wait_until(lambda: (c := cluster.controller()) and c.broker != victim and c,
                               WAIT_S, "a new controller")
        cluster.wait_until(lambda: (s := cluster.partition_state(TOPIC)) and s.leader not in (victim, -1)
                           and victim not in s.isr and s, WAIT_S, "a leader without the victim")
        produce(cluster, jars, [f"v{i}" for i in range(values, 2 * values)])
        cluster.restart(victim, WAIT_S)
        cluster.wait_until(_full_isr(cluster, 3), WAIT_S, f"broker {victim} back in the ISR")
        time.sleep(1.0)  # the followers' next fetch carries the last high watermark
    finally:
        cluster.stop()
    return cluster.data_dir


def reassign_from_to(brokers: list[int], controller: int) -> tuple[list[int], list[int]]:
    """The ``reassign`` scenario's assignment at creation and its target: the leader (the
    lowest broker not the controller) and the next broker, moved to that next broker and the
    one outside -- the leader removed, a new replica added."""
    leader = min(b for b in brokers if b != controller)
    follower, outside = sorted(b for b in brokers if b != leader)[:2]
    return [leader, follower], [follower, outside]


def _reassign_scenario(cluster: KafkaCluster, jars: KafkaJars, controller: int, values: int) -> None:
    original, target = reassign_from_to(sorted(cluster.brokers), controller)
    first = cluster.create_topic(TOPIC, assignment=[original])[0]
    if first.leader != original[0]:
        raise ScenarioError(f"reassign: wanted leader {original[0]}, got {first.leader}")
    produce(cluster, jars, [f"v{i}" for i in range(values)])
    time.sleep(QUIET_S)
    try:
        cluster.reassign(TOPIC, 0, target, WAIT_S)
    except (ReassignError, TimeoutError) as exc:
        raise ScenarioError(f"reassign: {exc}") from None
    produce(cluster, jars, [f"v{i}" for i in range(values, 2 * values)])
    cluster.wait_until(_full_isr(cluster, len(target)), WAIT_S, f"{target} in the ISR")
    time.sleep(1.0)  # the followers' next fetch carries the last high watermark
