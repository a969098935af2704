"""One chaos run from start to verdict: start the cluster, run the workload while the
schedule's faults fire, heal everything, wait for the cluster to recover, read what it
holds, judge every acknowledged write, and judge the traces against the model."""

from __future__ import annotations

import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from impl.harness.chaos.clients import CLIENTS, ChaosClient, client_factory, client_missing
from impl.harness.chaos.evidence import read_commit_isr, read_disk_log, read_elections
from impl.harness.chaos.inject import FaultInjector
from impl.harness.chaos.roles import Roles
from impl.harness.chaos.schedule import (
    ADMIN_PARTITIONS,
    ADMIN_TOPIC,
    MIN_INSYNC,
    PARTITIONS,
    REPLICATION,
    TOPIC,
    FaultRecord,
    admin_assignment,
    make_schedule,
)
from impl.harness.chaos.verdict import Finding, LogRecords, Verdict, judge, merge
from impl.harness.chaos.workload import FLUSH_TIMEOUT, Ledger, Workload
from impl.node.layout import DataDir

if TYPE_CHECKING:
    from impl.harness.cluster import BrokerCommand

MAX_BROKERS = 5
MAX_DURATION = 3600.0  # seconds
RECOVERY_TIMEOUT = 60.0  # seconds the healed cluster has to make every ISR whole again

# Broker settings: failures detected in ~2 s (as the integration tests' FAST settings), so a
# short run still sees every kind of fault complete its failover.
CHAOS_SETTINGS: dict[str, Any] = {
    "zk_session_timeout_s": 2.0,
    "replica_lag_time_ms": 1500,
    "fetch_max_wait_ms": 100,
    "reassign_interval_s": 0.3,
    "controller_request_timeout_s": 2.0,
    "min_insync_replicas": MIN_INSYNC,
}


class ChaosError(ValueError):
    """A run that cannot be made as asked (its size, its length, its directory)."""


@dataclass
class ChaosReport:
    seed: int
    duration: float
    brokers: int
    acks: int
    unclean: bool
    schedule: list[str]
    faults: list[FaultRecord]
    verdict: Verdict
    conformance: dict[str, Any]
    recovered: bool
    data_dir: str
    seconds: float
    admin: bool = False
    client: str = "epochal"  # the client the workload wrote and read back through (--client)

    @property
    def passed(self) -> bool:
        """Safe (nothing lost, duplicated, moved or diverged) and the traces conform."""
        return self.verdict.passed and not self.conformance.get("problem")

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict.as_dict()
        d["passed"] = self.passed
        d["exit_code"] = self.exit_code
        return d

class ChaosRun:
    """One run: cluster, workload threads, the fault injector, and the final inspection.

    Raises :class:`ChaosError` for a run that cannot be made: fewer brokers than the
    topic's replication or more than ``MAX_BROKERS``, a duration outside (0,
    ``MAX_DURATION``], acks other than -1 (all) or 1, a ``data_dir`` that holds anything
    (a previous run's traces would be judged with this one's), or a ``client`` not in
    :data:`~impl.harness.chaos.clients.CLIENTS`, not installed, or one of Kafka's with
    acks=1 (their idempotent producers need acks=all) or a port's brokers (no Kafka
    listener)."""

    def __init__(self, seed: int, duration: float, brokers: int = 3, acks: int = -1,
                 unclean: bool = False, data_dir: Path | None = None,
                 zookeeper: str | None = None, log: Callable[[str], None] = print,
                 spark: Any = None, conform: bool = True, admin: bool = False,
                 broker_cmd: BrokerCommand | None = None, insecure: bool = False,
                 tls: bool = False, client: str = "epochal") -> None:
        if client not in CLIENTS:
            raise ChaosError(f"--client must be one of {', '.join(CLIENTS)}, got {client!r}")
        if client != "epochal" and acks != -1:
            raise ChaosError(f"--client {client} runs the idempotent producer: acks must be all")
        if client != "epochal" and broker_cmd is not None:
            raise ChaosError(f"--client {client} needs the brokers' Kafka listeners: a port's "
                             f"brokers (--broker-cmd) serve only the broker protocol")
        if (missing := client_missing(client)) is not None:
            raise ChaosError(missing)
        if not REPLICATION <= brokers <= MAX_BROKERS:
            raise ChaosError(f"a run takes {REPLICATION} to {MAX_BROKERS} brokers, got {brokers}")
        if not 0 < duration <= MAX_DURATION:  # also refuses nan
            raise ChaosError(f"the duration must be in (0, {MAX_DURATION:g}] seconds, got {duration:g}")
        if acks not in (-1, 1):
            raise ChaosError(f"acks must be -1 (all) or 1, got {acks}")
        self.seed, self.duration, self.n, self.acks, self.unclean = seed, duration, brokers, acks, unclean
        self.data_dir = _run_directory(data_dir, seed)
        self.files = DataDir(self.data_dir)
        self.zookeeper = zookeeper
        self._log = log
        self.spark, self.do_conform = spark, conform
        self.admin = admin  # ADMIN_TOPIC written, and admin operations in the schedule
        self.broker_cmd = broker_cmd  # a port's brokers in place of Python ones (docs/ports.md)
        self.insecure = insecure  # no authentication, no ZooKeeper ACLs (docs/security.md)
        self.tls = tls  # TLS on every broker connection
        self.client = client  # the workload's producer and the read-back (clients.py)
        self.new_client: Any = None  # a new client of that kind, once the cluster is up
        self.schedule = make_schedule(seed, duration, brokers, acks, unclean, admin)
        self.ledger = Ledger()
        self.stop_workload = threading.Event()
        self.read_problems: list[str] = []
        self.t0 = time.monotonic()
        self.cluster: Any = None
        self.roles: Roles | None = None
        self.injector: FaultInjector | None = None

    @property
    def records(self) -> list[FaultRecord]:
        """What each fault fired so far did."""
        return [] if self.injector is None else self.injector.records

    def say(self, msg: str) -> None:
        self._log(f"[{time.monotonic() - self.t0:6.1f}s] {msg}")

    def run(self) -> ChaosReport:
        from impl.harness.cluster import LocalCluster
        from impl.node.client import Admin

        self.t0 = time.monotonic()
        settings = dict(CHAOS_SETTINGS, unclean_leader_election=self.unclean, insecure=self.insecure,
                        tls=self.tls)
        self.cluster = LocalCluster(self.data_dir, brokers=self.n, zookeeper=self.zookeeper,
                                    run_id=f"chaos-{self.seed}-{int(time.time())}",
                                    broker_cmd=self.broker_cmd, **settings)
        self.cluster.start()
        threads: list[threading.Thread] = []
        recovered, why = False, "not reached"
        final: dict[int, LogRecords] = {}
        isr: dict[int, list[int]] = {}
        admin_final: dict[int, LogRecords] = {}
        admin_isr: dict[int, list[int]] = {}
        zk = None
        try:
            zk = self.cluster.zk_client(session_timeout=10)
            self.roles = roles = Roles(zk)
            self.new_client = client_factory(self.client, self.cluster, self.acks)
            workload = Workload(self.cluster.bootstrap, self.ledger, self.seed, self.acks, self.t0,
                                self.stop_workload, self.new_client)
            self.injector = injector = FaultInjector(self.cluster, roles, workload, len(self.schedule),
                                                     self.say, self.t0, self.stop_workload)
            with Admin(self.cluster.bootstrap) as admin:
                admin.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=REPLICATION,
                                   wait=30)
                if self.admin:
                    admin.create_topic(ADMIN_TOPIC, assignment=admin_assignment(self.n), wait=30)
            topics = f"topics {TOPIC} and {ADMIN_TOPIC}" if self.admin else f"topic {TOPIC}"
            self.say(f"cluster of {self.n} brokers up, {topics} created (data in {self.data_dir})")
            threads = [threading.Thread(target=workload.produce_loop, daemon=True, name="chaos-producer"),
                       threading.Thread(target=workload.consume_loop, daemon=True, name="chaos-consumer")]
            if self.admin:
                threads.append(threading.Thread(target=workload.admin_produce_loop, daemon=True,
                                                name="chaos-admin-producer"))
            for th in threads:
                th.start()
            start = time.monotonic()
            for f in self.schedule:
                wait = start + f.at - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                rec = injector.execute(f)
                notes = f" ({'; '.join(rec.notes)})" if rec.notes else ""
                with self.ledger.lock:
                    counts = f"{self.ledger.attempted} writes, {len(self.ledger.acked)} acknowledged"
                self.say(f"fault {f.index} healed after {rec.ended - rec.started:.1f} s; "
                         f"{counts}{notes}")
            rest = start + self.duration - time.monotonic()
            if rest > 0:
                time.sleep(rest)
            self.stop_workload.set()
            for th in threads:
                th.join(FLUSH_TIMEOUT + 15)  # a producer loop waits for its reports first
            self.say("workload stopped; healing every fault")
            injector.heal_all()
            for th in injector.churn_threads:
                th.join(30)
            recovered, why = self.wait_recovered(RECOVERY_TIMEOUT)
            self.say("every ISR whole again" if recovered else f"NOT recovered: {why}")
            final = self.read_final()
            isr = {p: roles.leader_and_isr(p)[1] for p in final}
            if self.admin:
                admin_final = self.read_final(ADMIN_TOPIC, ADMIN_PARTITIONS)
                admin_isr = {p: roles.leader_and_isr(p, ADMIN_TOPIC)[1] for p in admin_final}
        finally:
            self.stop_workload.set()
            if zk is not None:
                zk.stop()
                zk.close()
            self._stop_recorded()
            self.cluster.stop()
        elections = read_elections(self.files.traces)
        main = Ledger(self.ledger.attempted, self.ledger.failed,
                      [a for a in self.ledger.acked if a.topic == TOPIC], self.ledger.consumed)
        verdict = judge(main, final, self._replica_logs(TOPIC, final), isr, elections,
                        self.records, read_commit_isr(self.files.traces))
        verdict.acknowledged = len({a.value for a in self.ledger.acked})
        if self.admin:
            assert self.injector is not None
            current = Ledger(acked=[a for a in self.ledger.acked if a.topic == ADMIN_TOPIC
                                    and a.incarnation == self.injector.workload.incarnation])
            verdict = merge(verdict, judge(
                current, admin_final, self._replica_logs(ADMIN_TOPIC, admin_final), admin_isr,
                elections, self.records, read_commit_isr(self.files.traces, ADMIN_TOPIC),
                topic=ADMIN_TOPIC))
        if not recovered:
            verdict.found.append(Finding(f"the cluster did not recover within {RECOVERY_TIMEOUT:g} s: {why}"))
        verdict.found.extend(Finding(problem) for problem in self.read_problems)
        conformance = self.conform() if self.do_conform else {"skipped": True}
        return ChaosReport(self.seed, self.duration, self.n, self.acks, self.unclean,
                           [f.describe() for f in self.schedule], self.records, verdict,
                           conformance, recovered, str(self.data_dir),
                           round(time.monotonic() - self.t0, 1), self.admin, self.client)

    def _replica_logs(self, topic: str, final: dict[int, LogRecords]) -> dict[int, dict[int, LogRecords]]:
        """Each replica's on-disk log of ``topic``'s partitions (partition -> broker -> records)."""
        out: dict[int, dict[int, LogRecords]] = defaultdict(dict)
        for b in self.cluster.configs:
            for p in final:
                d = self.cluster.configs[b].files.partition(topic, p).path
                if d.is_dir():
                    out[p][b] = read_disk_log(d)
        return out

    # -- the end ------------------------------------------------------------------------------
    def _stop_recorded(self) -> None:
        """Stop the brokers one by one, each a recorded ``broker_stop`` (controlled shutdown,
        then exit): the traces end as the model can follow them -- a broker stopped without
        the event would still hold /controller in the model when the next one is elected."""
        for b in sorted(self.cluster.procs):
            if self.cluster.procs[b].poll() is None:
                try:
                    self.cluster.stop_broker(b)
                except Exception:  # noqa: BLE001 - cluster.stop() below ends it anyway
                    pass

    def wait_recovered(self, timeout: float) -> tuple[bool, str]:
        """Every partition of TOPIC (and with ``--admin`` of ADMIN_TOPIC) led, its ISR the
        whole assignment, no reassignment pending, and its leader's HW at its LEO (nothing
        uncommitted left behind)."""
        from impl.node import zk as zkl
        from impl.node.client import Client
        from impl.node.wire import ApiKey

        deadline = time.monotonic() + timeout
        why = ""
        while time.monotonic() < deadline:
            try:
                assert self.roles is not None
                bad = []
                assignments = {t: self.roles.assignment(t)
                               for t in ((TOPIC, ADMIN_TOPIC) if self.admin else (TOPIC,))}
                for topic, assignment in assignments.items():
                    pending = self.roles.zk.exists(f"{zkl.REASSIGN}/{topic}") and \
                        self.roles.zk.get_children(f"{zkl.REASSIGN}/{topic}")
                    for p, replicas in sorted(assignment.items()):
                        leader, isr = self.roles.leader_and_isr(p, topic)
                        if leader < 0 or sorted(isr) != sorted(replicas):
                            bad.append(f"{topic}-{p} leader {leader} isr {isr} replicas {replicas}")
                    if pending:
                        bad.append(f"reassignment of {topic} pending for partitions {sorted(pending)}")
                if not bad:
                    with Client(self.cluster.bootstrap, timeout=3) as c:
                        c.refresh()
                        for topic, assignment in assignments.items():
                            for p in sorted(assignment):
                                resp = c.call(c.leader_addr(topic, p), ApiKey.FETCH, {
                                    "replica_id": -1, "topic": topic, "partition": p,
                                    "fetch_offset": 0, "max_records": 0, "max_wait_ms": 0})
                                if int(resp["hw"]) != int(resp["leo"]):
                                    bad.append(f"{topic}-{p} hw {resp['hw']} < leo {resp['leo']}")
                if not bad:
                    return True, ""
                why = "; ".join(bad)
            except Exception as exc:  # noqa: BLE001 - metadata not there yet
                why = f"{type(exc).__name__}: {exc}"
            time.sleep(0.3)
        return False, why

    def read_final(self, topic: str = TOPIC, partitions: int = PARTITIONS) -> dict[int, LogRecords]:
        """Each partition's committed log of ``topic``, read back through the run's client
        by assignment from the earliest offset to the high watermark."""
        client: ChaosClient = self.new_client()
        try:
            out, problems = client.read_all(topic, partitions)
        finally:
            client.close()
        self.read_problems.extend(problems)
        return out

    def conform(self) -> dict[str, Any]:
        """Judge the run's traces against the model (``unclean`` config when it is on)."""
        from conformance.spark.job import conform, render

        config = "unclean" if self.unclean else "kip320"
        self.say(f"judging the traces against the model (config {config}) with Spark ...")
        try:
            outcome = conform([str(self.files.traces)], out=str(self.files.verdicts),
                              spark=self.spark, config=config, log=lambda m: None)
        except Exception as exc:  # noqa: BLE001 - no Spark / Java: the run cannot be judged
            return {"problem": f"conformance could not run: {type(exc).__name__}: {exc}"}
        result: dict[str, Any] = {"config": config, "groups": outcome.groups,
                                  "conforming": outcome.conforming, "violating": outcome.violating,
                                  "errors": outcome.errors, "exit_code": outcome.exit_code}
        if outcome.exit_code != 0 or outcome.conforming != outcome.groups or not outcome.groups:
            result["problem"] = (f"traces do not conform to the model ({config}): "
                                 f"{outcome.conforming} of {outcome.groups} groups conform")
            result["render"] = render(outcome, max_rows=10)
        return result


def _run_directory(data_dir: Path | None, seed: int) -> Path:
    """The run's directory: ``data_dir`` (created; it must be new or empty) or a new
    temporary one."""
    if data_dir is None:
        return Path(tempfile.mkdtemp(prefix=f"epochal-chaos-{seed}-"))
    path = Path(data_dir)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ChaosError(f"the run directory {path} must be a new or empty directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ChaosError(f"cannot create the run directory {path}: {exc}") from None
    return path
