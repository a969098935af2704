"""``epochal chaos --engine kafka``: a seeded fault schedule against real Apache Kafka brokers
(:mod:`impl.harness.kafka`), a real Kafka client writing through it, and a verdict on every
acknowledged write.

The command starts the cluster (``impl.harness.kafka.KafkaCluster``, a sibling of this layer:
the run takes it as an argument): three brokers, ``min.insync.replicas=2``, one topic
replicated three ways; a
confluent-kafka producer (idempotent, acks=all, :class:`ConfluentClient`) sends a numbered
value every few tens of milliseconds while the schedule, drawn from the seed, takes one fault
at a time: kill -9 of the partition's leader (restarted once a new leader is elected), kill -9
of the controller (restarted once another one is), or a pause of a follower longer than
``replica.lag.time.max.ms`` (resumed after it). Then every broker is back, the ISR whole, the
producer flushed, and the partition is read back from its start: an acknowledged value that
is not there is *lost*. With unclean election off none may be.

With unclean election on, the run opens with the model's unclean scenario
(``lag-then-kill-isr``, as the Epochal engine's schedule does): a follower falls out of the
ISR, the rest of the ISR commits writes without it and is killed, and the follower left is
elected outside the ISR. Each lost write is labelled with its cause as the Epochal engine's
verdict labels it (:func:`~impl.harness.chaos.verdict.explain_loss`), from the elections the
Kafka adapter reads in the brokers' logs (Kafka does not log an election as unclean: it is
inferred from the partition state writes, :func:`conformance.kafka.elections.elections`), and
with the model's label for that loss (``properties.safety.UNCLEAN_LABEL``).

Then the brokers' logs are judged against the model, by the configuration of the run's
profile (:mod:`impl.harness.chaos.kafka_judge`); a group the model refuses, or whose
judgement runs out of budget, fails the run as a lost write does.  With ``admin`` the
administrator's operations join the schedule (:mod:`impl.harness.chaos.kafka_admin`).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.kafka.elections import elections
from impl.harness.chaos.clients import ConfluentClient, Delivery, LogRecords
from impl.harness.chaos.kafka_admin import (
    ADMIN_KINDS,
    AdminWorkload,
    admin_fault,
    create_admin_topic,
)
from impl.harness.chaos.kafka_judge import BUDGET, configuration, conformance, write_placements
from impl.harness.chaos.schedule import ADMIN_TOPIC
from impl.harness.chaos.verdict import LOST, Election, Finding, Loss, explain_loss, loss_label
from impl.harness.chaos.workload import Ack

TOPIC = "chaos"
BROKERS = 3
MIN_INSYNC = 2
SEND_EVERY = 0.03  # seconds between two values
FAULT_KINDS = ("kill-leader", "kill-controller", "pause-follower")
UNCLEAN_KIND = "lag-then-kill-isr"  # the model's unclean scenario (impl.harness.chaos.schedule)
LAG_WRITES = 1.0  # seconds the rest of the ISR commits writes the out-of-sync follower never gets
LAG_ACKS = 3  # and at least this many of them acknowledged, however slow the client is to start
PAUSE_FOR = 6.0  # longer than the cluster's replica.lag.time.max.ms (4 s): the follower leaves the ISR
SETTLE = 60.0  # seconds a fault's recovery may take (a new leader, a restart, a whole ISR)
JUDGE_SECONDS = BUDGET.seconds  # the default budget of judging one partition's trace


@dataclass
class KafkaChaosReport:
    seed: int
    profile: str
    unclean: bool
    admin: bool = False  # ADMIN_TOPIC written, and the administrator's operations in the schedule
    faults: list[str] = field(default_factory=list)
    sent: int = 0
    acked: list[Delivery] = field(default_factory=list)
    failed: int = 0  # sends the client reported failed: never acknowledged, so never owed
    read: int = 0
    lost: list[str] = field(default_factory=list)  # acknowledged values not read back
    misplaced: list[str] = field(default_factory=list)  # read back at another offset than acknowledged
    problems: list[str] = field(default_factory=list)  # the read-back could not reach the high watermark
    causes: dict[str, int] = field(default_factory=dict)  # lost writes by cause (explain_loss)
    elections: list[Election] = field(default_factory=list)  # as the adapter read them in the logs
    conformance: dict[str, Any] = field(default_factory=lambda: {"skipped": True})  # kafka_judge.conformance
    label: str | None = None  # the model's label for the loss: every lost write's an unclean election

    def findings(self) -> list[Finding]:
        """What the run got wrong as the Epochal engine's verdict says it: the lost values, the
        values read back at another offset, the read-back's problems."""
        n = len(self.lost)
        lost = [Finding(f"lost {n} acknowledged write{'s' if n != 1 else ''}: " + ", ".join(self.lost[:10]),
                        LOST, self.label)] if self.lost else []
        return lost + [Finding(f"value {v} read back at another offset than acknowledged") for v in self.misplaced] \
            + [Finding(problem) for problem in self.problems]

    @property
    def safe(self) -> bool:
        """Every acknowledged write read back where it was acknowledged."""
        return not self.lost and not self.misplaced and not self.problems

    @property
    def passed(self) -> bool:
        """Safe, and every judged group of the run's trace conforms (none inconclusive)."""
        return self.safe and not self.conformance.get("problem")

    def as_dict(self) -> dict[str, Any]:
        return {"engine": "kafka", "seed": self.seed, "profile": self.profile, "unclean": self.unclean,
                "admin": self.admin,
                "faults": self.faults, "sent": self.sent, "acknowledged": len(self.acked), "failed": self.failed,
                "read": self.read, "lost": self.lost, "misplaced": self.misplaced, "problems": self.problems,
                "causes": self.causes, "label": self.label,
                "elections": [asdict(e) for e in self.elections], "conformance": self.conformance,
                "passed": self.passed}


def schedule(seed: int, duration: float, unclean: bool = False, admin: bool = False) -> list[tuple[float, str]]:
    """The faults of a run, from its seed: (seconds to wait before it, kind), one about every
    eight seconds of ``duration`` and at least one; with ``unclean`` the first is the unclean
    scenario (the rest as without it); with ``admin`` every second entry, until each has
    come once, one of the administrator's operations (``kafka_admin.ADMIN_KINDS``, in a
    seeded order; the faults as without it)."""
    rnd = random.Random(seed)
    faults = [(rnd.uniform(1.0, 3.0), rnd.choice(FAULT_KINDS)) for _ in range(max(1, int(duration // 8)))]
    if unclean:
        faults = [(faults[0][0], UNCLEAN_KIND), *faults[1:]]
    if not admin:
        return faults
    ops = random.Random(f"{seed}/admin").sample(ADMIN_KINDS, len(ADMIN_KINDS))
    mixed: list[tuple[float, str]] = []
    while faults or ops:
        for pool in (faults, ops):
            if pool:
                wait, kind = pool.pop(0) if pool is faults else (rnd.uniform(1.0, 3.0), pool.pop(0))
                mixed.append((wait, kind))
    return mixed


class _Workload:
    """A thread sending numbered values until stopped; the client's reports collected."""

    def __init__(self, client: ConfluentClient, seed: int) -> None:
        self.client, self.seed = client, seed
        self.deliveries: list[Delivery] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafka-chaos-workload", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.client.send(TOPIC, 0, f"s{self.seed}-{self.sent}", self.deliveries.append)
            self.sent += 1
            self._stop.wait(SEND_EVERY)

    def acked_from(self, first: int) -> int:
        """How many values numbered ``first`` or later have been acknowledged."""
        prefix = f"s{self.seed}-"
        return sum(1 for d in list(self.deliveries)
                   if d.error is None and d.value.startswith(prefix) and int(d.value[len(prefix):]) >= first)

    def start(self) -> None:
        self._thread.start()

    def stop(self, flush_timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join()
        self.client.flush(flush_timeout)
        self.client.close()


def _inject(kafka: Any, kind: str, log: Callable[[str], None], workload: _Workload,
            admin: AdminWorkload | None = None) -> str:
    """Take one fault and wait until the cluster has recovered from it; what was done."""
    state = kafka.partition_state(TOPIC)
    ctrl = kafka.controller()
    if state is None or ctrl is None:
        raise RuntimeError("no partition state or controller in ZooKeeper")
    if kind in ADMIN_KINDS:
        assert admin is not None
        done = admin_fault(kafka, kind, _bootstrap(kafka), admin, TOPIC)
    elif kind == UNCLEAN_KIND:
        done = _lag_then_kill_isr(kafka, state.leader, next(b for b in reversed(state.isr) if b != state.leader),
                                  workload)
    elif kind == "pause-follower":
        victim = next(b for b in state.isr if b != state.leader)
        kafka.pause(victim)
        time.sleep(PAUSE_FOR)
        kafka.resume(victim)
        done = f"paused follower {victim} for {PAUSE_FOR:g} s"
    else:
        victim = state.leader if kind == "kill-leader" else ctrl.broker
        kafka.kill(victim)
        if kind == "kill-leader":
            kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) is not None and s.leader not in (victim, -1),
                             SETTLE, "a new leader")
        else:
            kafka.wait_until(lambda: (c := kafka.controller()) is not None and c.broker != victim, SETTLE,
                             "a new controller")
        kafka.restart(victim, SETTLE)
        done = f"killed {'leader' if kind == 'kill-leader' else 'controller'} {victim} (kill -9), restarted it"
    kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) is not None and len(s.isr) == BROKERS, SETTLE,
                     "the whole ISR back")
    log(f"  {done}; the ISR is whole again")
    return done


def _lag_then_kill_isr(kafka: Any, leader: int, laggard: int, workload: _Workload) -> str:
    """The model's unclean scenario: ``laggard`` paused until it is out of the ISR (its
    ZooKeeper session expires first), writes committed by the rest of the ISR alone, the rest
    killed, the laggard resumed: the only live replica, elected although out of the ISR (with
    unclean election on; without it the partition stays leaderless until the rest is back).
    The rest is killed only once ``LAG_ACKS`` values sent after the laggard left the ISR are
    acknowledged: those the laggard cannot have, so the loss does not hang on how quickly the
    client got going (its producer id, its metadata) on a loaded machine."""
    rest = [b for b in kafka.partition_state(TOPIC).isr if b != laggard]
    kafka.pause(laggard)
    kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) is not None and laggard not in s.isr, SETTLE,
                     f"broker {laggard} out of the ISR")
    first = workload.sent
    time.sleep(LAG_WRITES)
    kafka.wait_until(lambda: workload.acked_from(first) >= LAG_ACKS, SETTLE,
                     f"{LAG_ACKS} writes acknowledged without broker {laggard}")
    for b in rest:
        kafka.kill(b)
    kafka.resume(laggard)
    elected = kafka.wait_until(lambda: (s := kafka.partition_state(TOPIC)) is not None and s.leader == laggard,
                               SETTLE, f"broker {laggard} elected") if kafka.settings.get("unclean_leader_election") \
        else False
    for b in rest:
        kafka.restart(b, SETTLE)
    return (f"paused follower {laggard} until out of the ISR, writes committed by {rest} (leader {leader}), "
            f"killed {rest}, resumed {laggard}{' (elected outside the ISR)' if elected else ''}, restarted {rest}")


def cluster_settings(unclean: bool) -> dict[str, Any]:
    """What the cluster of a run is started with (``KafkaCluster``'s keyword arguments)."""
    return {"brokers": BROKERS, "min_insync_replicas": MIN_INSYNC, "unclean_leader_election": unclean}


def _bootstrap(kafka: Any) -> str:
    return ",".join(f"{b.settings.host}:{b.settings.port}" for b in kafka.brokers.values())


def run(seed: int, duration: float, cluster: Any, profile: str, unclean: bool,
        log: Callable[[str], None] = print, judge_seconds: float = 60.0, admin: bool = False) -> KafkaChaosReport:
    """One run on ``cluster``, a ``KafkaCluster`` built with ``cluster_settings`` and not yet
    started: started here, and stopped at the end whatever happens; then its logs judged
    against the model (:mod:`impl.harness.chaos.kafka_judge`), each partition's trace within
    ``judge_seconds`` (0: not judged)."""
    report = KafkaChaosReport(seed, profile, unclean, admin=admin)
    with cluster as kafka:
        kafka.create_topic(TOPIC, partitions=1, replication_factor=BROKERS)
        properties = {"bootstrap.servers": _bootstrap(kafka)}
        # one record per produce request: the trace adapter replays a log record by record
        producer = {**properties, "batch.num.messages": "1"}
        workload = _Workload(ConfluentClient(producer), seed)
        admin_load = None
        if admin:
            create_admin_topic(properties["bootstrap.servers"])
            admin_load = AdminWorkload(ConfluentClient(producer), seed)
            admin_load.start()
        workload.start()
        try:
            # Faults start once the producer writes: its producer id comes from the controller
            # (AllocateProducerIds), and a request in flight to a broker a fault then pauses
            # waits out the client's 60 s socket timeout, so the run would measure the client.
            kafka.wait_until(lambda: workload.acked_from(0) >= 1, SETTLE, "the first write acknowledged")
            for wait, kind in schedule(seed, duration, unclean, admin):
                time.sleep(wait)
                report.faults.append(_inject(kafka, kind, log, workload, admin_load))
            time.sleep(1.0)
        finally:
            workload.stop()
            if admin_load is not None:
                admin_load.stop()
        deliveries = workload.deliveries + ([d for _, d in admin_load.deliveries] if admin_load else [])
        report.sent = workload.sent + (admin_load.sent if admin_load else 0)
        report.acked = [d for d in workload.deliveries if d.error is None] + (admin_load.owed() if admin_load else [])
        report.failed = sum(1 for d in deliveries if d.error is not None)
        reader = ConfluentClient(properties)
        main, report.problems = reader.read_all(TOPIC, 1)
        records = {(TOPIC, 0): main[0]}
        if admin_load is not None:
            read, problems = reader.read_all(ADMIN_TOPIC, admin_load.partitions)
            records.update({(ADMIN_TOPIC, p): r for p, r in read.items()})
            report.problems += problems
        reader.close()
    account(report, records, cluster.data_dir)
    write_placements(cluster.data_dir, report.acked, records)
    if judge_seconds > 0:
        log(f"judging the brokers' logs against the model ({configuration(profile, unclean)}) ...")
        report.conformance = conformance(cluster.data_dir, profile, unclean, BUDGET._replace(seconds=judge_seconds))
    return report


def account(report: KafkaChaosReport, records: dict[tuple[str, int], LogRecords], run_dir: Path) -> None:
    """The verdict on the acknowledged writes against the partitions read back (``records``,
    by topic and partition): each one not there lost, labelled with its cause from the
    elections in ``run_dir``'s logs."""
    log_values = {(topic, p, value): offset for (topic, p), log in records.items() for offset, _epoch, value in log}
    report.read = len(log_values)
    report.elections = [Election(*e) for e in elections(run_dir)]
    causes: Counter[Loss] = Counter()
    for d in report.acked:
        at = log_values.get((d.topic, d.partition, d.value))
        if at is None:
            report.lost.append(f"{d.value} (acknowledged at offset {d.offset})")
            causes[explain_loss(_ack(d), report.elections, [])] += 1
        elif d.offset >= 0 and at != d.offset:  # -1: a retry answered as a duplicate
            report.misplaced.append(f"{d.value}: acknowledged at offset {d.offset}, read at {at}")
    report.causes = {loss.cause: n for loss, n in causes.most_common()}
    report.label = loss_label(list(causes))


def _ack(d: Delivery) -> Ack:
    """A client's acknowledgement as the Epochal engine's verdict reads it (acks=all)."""
    return Ack(partition=d.partition, value=d.value, offset=d.offset, leader_epoch=d.leader_epoch, leader=d.leader,
               acks=-1, stream="producer", t=0.0, topic=d.topic)


def render(report: KafkaChaosReport) -> str:
    """The report as the command prints it."""
    lines = [f"faults: {len(report.faults)}", *(f"  {f}" for f in report.faults),
             f"sent {report.sent}, acknowledged {len(report.acked)}, failed {report.failed}, read back {report.read}",
             f"lost: {len(report.lost)}" + (f" [{report.label}]" if report.label else "")
             + "".join(f"\n  lost {n}: {cause}" for cause, n in report.causes.items())
             + "".join(f"\n  {x}" for x in report.lost[:20]),
             *(f"misplaced: {x}" for x in report.misplaced[:20]), *(f"problem: {x}" for x in report.problems),
             *_render_conformance(report.conformance),
             "PASS: every acknowledged write was read back, every group conforming" if report.passed else "FAIL"]
    return "\n".join(lines)


def _render_conformance(c: dict[str, Any]) -> list[str]:
    """The judged trace's lines of the report."""
    if c.get("skipped"):
        return ["conformance: not judged"]
    head = [f"conformance ({c['config']}): {c['conforming']} of {c['groups']} groups conforming"
            + (f", {c['inconclusive']} inconclusive" if c.get("inconclusive") else "")] if "groups" in c else []
    return head + [f"  {line}" for line in c.get("summary", ())] + ([f"  - {c['problem']}"] if c.get("problem") else [])
