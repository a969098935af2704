"""Injecting a chaos run's faults into a live cluster, and healing them.

Each :class:`~impl.harness.chaos.schedule.Fault` is resolved to brokers when it fires
(:class:`~impl.harness.chaos.roles.Roles`), injected -- ``kill -9``, SIGSTOP, a ZooKeeper
session expired, a link cut or slowed in the RPC transport's fault layer
(:mod:`impl.node.faults`), a controlled shutdown, or a targeted scenario -- held, then
healed; its admin operation, if any, runs meanwhile on a thread of its own.  What it did
is kept as a :class:`~impl.harness.chaos.schedule.FaultRecord`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from impl.harness.chaos.roles import Roles
from impl.harness.chaos.schedule import (
    ADMIN_TOPIC,
    BURST,
    REPLICATION,
    TOPIC,
    Fault,
    FaultRecord,
    admin_assignment,
)
from impl.harness.chaos.workload import Workload
from traces import events


class FaultInjector:
    """Fires faults at ``cluster`` (a :class:`~impl.harness.cluster.LocalCluster`) and heals
    them.  ``plan`` is the transport's fault plan (links cut or delayed), written to the
    cluster's data directory whenever it changes; ``paused`` the brokers SIGSTOPped now."""

    def __init__(self, cluster: Any, roles: Roles, workload: Workload, faults: int,
                 say: Callable[[str], None], t0: float, stop: threading.Event) -> None:
        from impl.node.faults import FaultPlan

        self.cluster, self.roles, self.workload = cluster, roles, workload
        self.faults = faults  # how many the schedule holds (for the log)
        self.say, self.t0, self.stop = say, t0, stop
        self.plan = FaultPlan({b: cluster.endpoint(b) for b in cluster.configs})
        self.paused: set[int] = set()
        self.records: list[FaultRecord] = []
        self.churn_threads: list[threading.Thread] = []
        self._write_plan()

    # -- fault primitives -----------------------------------------------------------------------
    def _observe_all(self) -> None:
        """Before a SIGCONT: take every node's clock, so that the woken broker (which takes
        the harness's clock when it wakes) orders its next steps after everything recorded
        before the resume -- not only after its own last step.  (Fault events themselves
        keep the victim's clock only, as LocalCluster records them: a fault's clock above
        the reactions to it would let their successors that carry no zxid order first.)"""
        from impl.node.tracing import observe_node

        rec = self.cluster.harness()
        for b in self.cluster.configs:
            observe_node(rec, self.cluster.data_dir, b)

    def _write_plan(self) -> None:
        from impl.node.faults import write_plan

        write_plan(self.cluster.data_dir, self.plan)

    def _kill(self, b: int, rec: FaultRecord) -> None:
        self.cluster.kill(b)
        self.paused.discard(b)
        rec.victims.append(b)

    def _bring_back(self, b: int, rec: FaultRecord | None = None) -> None:
        proc = self.cluster.procs[b]
        if proc.poll() is None:
            if b in self.paused:
                self._observe_all()
                self.cluster.resume(b)
                self.paused.discard(b)
            return
        self.cluster.restart(b)
        try:
            self.cluster.wait_ready(timeout=30, brokers=[b])
        except (TimeoutError, RuntimeError) as exc:
            if rec is not None:
                rec.notes.append(f"broker {b} not ready after restart: {exc}")


    def _wait_isr_without(self, p: int, b: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b not in self.roles.leader_and_isr(p)[1]:
                return True
            time.sleep(0.1)
        return False

    def _expire(self, b: int) -> None:
        """Freeze, expire the session through ZooKeeper, record it as the model's pause (a
        broker whose session ended while it did not run), and let it run on."""
        from impl.harness.cluster import session_end_zxid
        from impl.node.faults import expire_session

        rec = self.cluster.sigstop(b)
        self.paused.add(b)
        expire_session(self.cluster.zookeeper, self.cluster.data_dir, b)
        zxid = session_end_zxid(self.cluster.zookeeper, b, 10.0, self.cluster.zk_acl)
        rec.emit(events.broker_pause(zxid=zxid, broker=b))

    # -- one fault ------------------------------------------------------------------------------
    def execute(self, f: Fault) -> FaultRecord:
        """Inject ``f``, start its admin operation halfway through its hold, and heal it at
        the end of the hold.  A fault that cannot be injected or healed is a note on its
        record, not the end of the run (the final heal tries again)."""
        rec = FaultRecord(f.index, f.kind, time.monotonic() - self.t0)
        self.records.append(rec)
        healers: list[Callable[[], None]] = []
        try:
            self._inject(f, rec, healers)
            self._churn(f, rec, f.hold / 2)
            time.sleep(f.hold / 2)
        except Exception as exc:  # noqa: BLE001 - a fault that could not be injected is a note
            rec.notes.append(f"injection failed: {type(exc).__name__}: {exc}")
        finally:
            for heal in reversed(healers):
                try:
                    heal()
                except Exception as exc:  # noqa: BLE001 - the final heal tries again
                    rec.notes.append(f"heal failed: {type(exc).__name__}: {exc}")
            rec.ended = time.monotonic() - self.t0
        return rec

    def _inject(self, f: Fault, rec: FaultRecord, healers: list[Callable[[], None]]) -> None:
        if f.kind in ("kill", "kill-controller"):
            b = self.roles.resolve(f)
            rec.detail = f"kill -9 broker {b}"
            self._kill(b, rec)
            healers.append(lambda: self._bring_back(b, rec))
        elif f.kind == "pause-leader":
            b = self.roles.resolve(f)
            rec.detail = f"SIGSTOP broker {b} (leader of {TOPIC}-{f.partition})"
            self.paused.add(b)
            rec.victims.append(b)
            healers.append(lambda: self._bring_back(b, rec))
            self.cluster.pause(b)
        elif f.kind == "expire-session":
            b = self.roles.resolve(f)
            rec.detail = f"expire the ZooKeeper session of broker {b}"
            rec.victims.append(b)
            healers.append(lambda: self._bring_back(b, rec))
            self._expire(b)
            self._bring_back(b, rec)  # it runs on without a session, then re-registers
        elif f.kind == "restart":
            b = self.roles.resolve(f)
            rec.detail = f"controlled shutdown of broker {b}"
            rec.victims.append(b)
            healers.append(lambda: self._bring_back(b, rec))
            self.cluster.stop_broker(b)
        elif f.kind in ("partition", "slow-follower"):
            follower = self.roles.resolve(f)
            leader = self.roles.leader(f.partition)
            if f.kind == "partition":
                rec.detail = f"link {leader}<->{follower} cut"
                self.plan = self.plan.with_partition(leader, follower)

                def heal_link() -> None:
                    self.plan = self.plan.without_partition(leader, follower)
                    self._write_plan()
            else:
                rec.detail = f"link {follower}->{leader} delayed {f.delay:.1f} s"
                self.plan = self.plan.with_delay(follower, leader, f.delay)

                def heal_link() -> None:
                    self.plan = self.plan.without_delay(follower, leader)
                    self._write_plan()
            self._write_plan()
            healers.append(heal_link)
        elif f.kind == "isolate-leader":
            self._isolate_leader(f, rec, healers)
        elif f.kind == "lag-then-kill-isr":
            self._lag_then_kill_isr(f, rec, healers)
        elif f.kind == "preferred-election":
            self._preferred_election(rec)
        elif f.kind == "recreate-topic":
            self._recreate_topic(rec)
        self.say(f"fault {f.index}/{self.faults} {f.kind}: {rec.detail}")

    def _cut(self, a: int, b: int) -> Callable[[], None]:
        self.plan = self.plan.with_partition(a, b)
        self._write_plan()

        def heal() -> None:
            self.plan = self.plan.without_partition(a, b)
            self._write_plan()
        return heal

    def _isolate_leader(self, f: Fault, rec: FaultRecord, healers: list[Callable[[], None]]) -> None:
        """Followers cut off, a burst only the leader takes, the leader killed before its
        ISR shrinks: the controller elects a follower (clean: it was in the ISR)."""
        leader = self.roles.leader(f.partition)
        cuts = [self._cut(leader, x) for x in self.roles.followers(f.partition)]
        time.sleep(0.4)  # fetches already in flight (long polls of 100 ms) come back first
        acked = self.workload.burst(f.partition, leader, f"f{f.index}")
        self.cluster.kill(leader)
        rec.victims.append(leader)
        for heal in cuts:
            heal()
        rec.detail = (f"followers of broker {leader} cut off, burst of {BURST} to "
                      f"{TOPIC}-{f.partition} ({acked} acknowledged), broker {leader} killed")
        healers.append(lambda: self._bring_back(leader, rec))

    def _lag_then_kill_isr(self, f: Fault, rec: FaultRecord,
                           healers: list[Callable[[], None]]) -> None:
        """One follower falls out of the ISR; the rest commits a burst and is killed; only the
        out-of-sync follower is left, electable only by an unclean election."""
        p = f.partition
        leader = self.roles.leader(p)
        followers = self.roles.followers(p)
        laggard, other = followers[-1], followers[0]
        heal_cut = self._cut(leader, laggard)
        left = self._wait_isr_without(p, laggard, 10.0)
        acked = self.workload.burst(p, leader, f"f{f.index}")
        victims = [other, leader]
        for b in victims:
            self._kill(b, rec)
        heal_cut()
        rec.detail = (f"broker {laggard} cut off from leader {leader} "
                      f"({'left' if left else 'did not leave'} the ISR), burst of {BURST} to "
                      f"{TOPIC}-{p} ({acked} acknowledged), brokers {other} and {leader} killed")
        def bring_back_all() -> None:
            for b in victims:
                self._bring_back(b, rec)
        healers.append(bring_back_all)

    def _preferred_election(self, rec: FaultRecord) -> None:
        """Ask for a preferred-replica election of every partition whose preferred (first
        assigned) replica is in the ISR but does not lead.  Only partitions whose first
        assigned replica is also the lowest id of the assignment are asked: the model's
        preferred replica is the lowest broker id of its (sorted) AR, the implementation's
        Kafka's first assigned, and a reassignment may leave them apart."""
        from impl.node.client import Admin

        asked, skipped = [], []
        with Admin(self.cluster.bootstrap, timeout=3) as admin:
            for topic in (TOPIC, ADMIN_TOPIC):
                try:
                    assignment = self.roles.assignment(topic)
                except Exception:  # noqa: BLE001 - ADMIN_TOPIC between deletion and creation
                    continue
                for p, replicas in sorted(assignment.items()):
                    leader, isr = self.roles.leader_and_isr(p, topic)
                    if leader == replicas[0] or replicas[0] not in isr:
                        continue
                    if replicas[0] != min(replicas):
                        skipped.append(f"{topic}-{p}")
                        continue
                    admin.elect_preferred(topic, p)
                    asked.append(f"{topic}-{p} -> {replicas[0]}")
        rec.detail = (f"preferred election of {', '.join(asked)}" if asked
                      else "preferred election: every preferred replica leads or is out of the ISR")
        if skipped:
            rec.notes.append(f"not asked (first assigned is not the lowest id): {', '.join(skipped)}")

    def _recreate_topic(self, rec: FaultRecord, patience: float = 30.0) -> None:
        """Delete ADMIN_TOPIC and create it again under the same name and assignment, its
        writes held meanwhile (:attr:`Workload.admin_gate`): writes acknowledged before the
        deletion belong to the old incarnation, every later one to the new.  The creation is
        retried while the deletion is not complete on every replica (Kafka 2.7 refuses to
        re-create a topic until then)."""
        from impl.node.client import Admin
        from impl.node.wire import ErrorCode, RpcError

        deadline = time.monotonic() + patience
        with self.workload.admin_gate:
            deleted = created = False
            tries = 0
            while not created and time.monotonic() < deadline:
                tries += 1
                try:
                    with Admin(self.cluster.bootstrap, timeout=3) as admin:
                        if not deleted:
                            try:
                                admin.delete_topic(ADMIN_TOPIC, wait=10)
                            except RpcError as exc:
                                if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                                    raise
                            deleted = True
                            self.workload.incarnation += 1
                        admin.create_topic(ADMIN_TOPIC, assignment=admin_assignment(len(self.cluster.configs)),
                                           wait=10)
                        created = True
                except Exception as exc:  # noqa: BLE001 - deletion pending, controller moving
                    rec.notes.append(f"try {tries}: {type(exc).__name__}: {str(exc)[:100]}")
                    time.sleep(0.5)
        rec.detail = (f"topic {ADMIN_TOPIC} deleted and created again (incarnation "
                      f"{self.workload.incarnation})" if created else
                      f"topic {ADMIN_TOPIC} {'deleted but not' if deleted else 'not'} created again "
                      f"within {patience:g} s")

    def _churn(self, f: Fault, rec: FaultRecord, after: float) -> None:
        """Start the fault's admin operation ``after`` seconds into it, on a thread of its
        own: during a fault it may wait long for a controller, and the fault must still be
        healed on time.  The run joins these threads before it judges."""
        time.sleep(after)
        if f.churn is not None:
            th = threading.Thread(target=self._admin_op, args=(f, rec), daemon=True,
                                  name=f"chaos-churn-{f.index}")
            th.start()
            self.churn_threads.append(th)

    def _admin_op(self, f: Fault, rec: FaultRecord, patience: float = 20.0) -> None:
        """The fault's admin operation, retried while the fault makes it impossible (a
        replica set naming a dead broker, a controller moving) -- it starts during the fault
        and may complete after the heal, as an operator's retry would."""
        from impl.node.client import Admin
        from impl.node.wire import ErrorCode, RpcError

        what = f"{f.churn} {f.churn_topic or list(f.churn_replicas)}"
        deadline = time.monotonic() + patience
        tries = 0
        while True:
            tries += 1
            try:
                with Admin(self.cluster.bootstrap, timeout=3) as admin:
                    if f.churn == "create-topic":
                        assert f.churn_topic is not None
                        admin.create_topic(f.churn_topic, partitions=2,
                                           replication_factor=REPLICATION, wait=5)
                    elif f.churn == "delete-topic":
                        assert f.churn_topic is not None
                        admin.delete_topic(f.churn_topic, wait=5)
                    else:
                        admin.reassign(TOPIC, f.churn_partition, list(f.churn_replicas), wait=0)
                rec.notes.append(f"{what}: done" + (f" (try {tries})" if tries > 1 else ""))
                return
            except Exception as exc:  # noqa: BLE001 - refused or slow during a fault
                final = isinstance(exc, RpcError) and exc.code in (
                    ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    ErrorCode.INVALID_REQUEST)
                if final or time.monotonic() > deadline or self.stop.is_set():
                    rec.notes.append(f"{what}: {type(exc).__name__}: {str(exc)[:120]}"
                                     + (f" (try {tries})" if tries > 1 else ""))
                    return
                time.sleep(0.5)

    # -- the end --------------------------------------------------------------------------------
    def heal_all(self) -> None:
        """Heal whatever is still broken: every link, every paused or stopped broker."""
        self.plan = self.plan.healed()
        self._write_plan()
        for b in sorted(self.cluster.procs):
            self._bring_back(b)
        self.paused.clear()
