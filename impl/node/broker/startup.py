"""Seed 000 E: broker startup -- and registration, which seed 003 makes the broker's epoch.

On startup the broker opens its logs, deletes the partitions no longer assigned to it
(E.4), registers ``/brokers/ids/N``, reads the leader and ISR of every partition assigned to
it (E.1-2) and becomes leader or follower as ZooKeeper says (E.3).  Why it is done so:

* **Registering and reading the states are one step.**  The model takes them as one action
  (``broker_restart``).  Were they two, the controller could react to the registration in
  between -- elect this broker, say -- and the startup would silently adopt a decision its
  trace never shows arriving.  So the create is one ZooKeeper transaction that checks the
  version of every state read: if any moved, nothing is created and the states are read
  again.
* **The registration's czxid is the broker epoch** (seed 003): a later incarnation always
  has a larger one, which is what lets a broker refuse requests meant for an earlier one.
* **A partition still assigned here may hold a deleted incarnation's log.**  Question 5
  argues that none can, since replicas are only assigned to live brokers; but a topic
  deleted while this broker was down and re-created with it in the assignment proves
  otherwise.  The topic znode's czxid names the incarnation (:mod:`impl.node.topic_identity`);
  E.3 deletes a log of an older one before it takes the state.
* **A lost session re-registers without a startup** (``broker_reregister``): the process and
  its replicas are the same, only the ephemeral znode is new; control requests are held
  while it is being re-created (in harness step mode, the re-registration waits for its
  permit, ``impl.node.step_gate``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import traceback

from kazoo.client import KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError

from impl.node import faults
from impl.node import zk as zkl
from impl.node.broker.replication_follower import ReplicationFollower
from impl.node.layout import PartitionDir
from impl.node.replica import PartitionState, Replica
from traces import events


class Startup(ReplicationFollower):
    """Seed 000 E and the ZooKeeper session: register, recover from ZooKeeper, re-register."""

    def _on_zk_state(self, state: str) -> None:
        """kazoo thread: never block here."""
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.controller.on_session_trouble(state)
            if state == KazooState.LOST:
                self._session_lost = True
        elif state == KazooState.CONNECTED:
            lost, self._session_lost = self._session_lost, False
            threading.Thread(target=self._after_reconnect, args=(lost,), daemon=True).start()

    def _after_reconnect(self, session_was_lost: bool) -> None:
        if self.stopping:
            return
        if session_was_lost:
            # harness step mode: the model's broker_reregister is a step of its own, which a
            # broker running with its session gone (broker_expire) takes when the harness says;
            # until then it acts on what it has, control requests included
            if not self.step_gate.wait_blocking("broker_reregister") or self.stopping:
                return
            self._set_control_ready(False)
            try:
                self.register(reregister=True)
            except Exception:  # noqa: BLE001 - next reconnect retries
                traceback.print_exc()
            finally:
                self._set_control_ready(True)
        self.controller.on_reconnected()

    def _set_control_ready(self, ready: bool) -> None:
        """From a thread: open or close control-request processing, and wait until done."""
        if self.loop is None or self.loop.is_closed():
            return

        async def flip() -> None:
            (self._control_ready.set if ready else self._control_ready.clear)()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(flip(), self.loop).result(5)

    ATOMIC_STARTUP_LIMIT = 2000
    """Partitions whose state a registration checks in its transaction (see ``register``);
    beyond it the registration is a plain create followed by the read."""

    def register(self, reregister: bool = False) -> list[PartitionState]:
        """Create ``/brokers/ids/N`` (ephemeral); its czxid is the broker epoch (seed 003).
        Returns the leader and ISR of each partition assigned here as of the registration.

        Seed 000 E reads those states at startup, and the model takes registering and that
        read as one step (``broker_restart``).  Were they two, the controller could react to
        the registration in between -- elect this broker, say -- and the startup would
        silently adopt a decision its trace never shows arriving.  So the create is one
        ZooKeeper transaction with a version check of every state read first: if any moved
        meanwhile, nothing is created and the states are read again."""
        path = zkl.broker_path(self.id)
        port = self.config.advertised_port or self.config.port  # where peers connect
        registration = {"host": self.config.host, "port": port, "version": 1}
        if self.config.kafka_port:  # the Kafka listener, for Kafka's Metadata answers
            registration["kafka_port"] = self.config.kafka_port
        value = zkl.encode(registration)
        deadline = time.monotonic() + 4 * self.config.zk_session_timeout_s + 10
        while True:
            states = [] if reregister else self._assigned_states()  # a session renewed: no startup
            tx = self.zk.transaction()
            tx.create(path, value, ephemeral=True)
            if len(states) <= self.ATOMIC_STARTUP_LIMIT:
                for st in states:
                    tx.check(zkl.leader_and_isr_path(st.topic, st.partition), st.zk_version)
            results = tx.commit()
            if not any(isinstance(r, Exception) for r in results):
                break
            if time.monotonic() > deadline:
                why = ", ".join(type(r).__name__ for r in results if isinstance(r, Exception))
                raise RuntimeError(f"could not register in ZooKeeper before the deadline ({why})")
            if isinstance(results[0], NodeExistsError):
                time.sleep(0.2)  # a previous incarnation's session has not expired yet
            # else a partition state moved between the read and the create: read again
        if len(states) > self.ATOMIC_STARTUP_LIMIT:
            states = self._assigned_states()  # too many to check: the state after the create
        stat = self.zk.exists(path)
        assert stat is not None
        self.broker_epoch = stat.czxid
        faults.publish_session(self.config.data_dir, self.id, self.zk.client_id)
        make = events.broker_reregister if reregister else events.broker_restart
        self.recorder.emit(make(zxid=stat.czxid, broker=self.id, broker_epoch=stat.czxid))
        return states

    def load_local_replicas(self) -> None:
        """Open every local log; delete partitions no longer assigned here (E.4, question 5)."""
        assigned: set[tuple[str, int]] = set()
        for topic in self.zk.get_children(zkl.TOPICS):
            data, _ = self.zk.get(zkl.topic_path(topic))
            parts = (zkl.decode(data) or {}).get("partitions", {})
            for p, reps in parts.items():
                if self.id in reps:
                    assigned.add((topic, int(p)))
        self.config.log_dir.mkdir(parents=True, exist_ok=True)
        for d in sorted(self.config.log_dir.iterdir()):
            key = PartitionDir.parse(d.name)
            if not d.is_dir() or key is None:
                continue
            topic, p = key
            log = self.open_log(d)
            if key not in assigned:
                log.delete()
                self.recorder.emit(events.stop_replica(topic=topic, partition=p, delete=True,
                                                       reason="not_assigned_at_startup"))
                continue
            self.replicas[key] = Replica(topic, p, self.id, log, self.recorder,
                                         on_change=self._data_changed)

    def _assigned_states(self) -> list[PartitionState]:
        """Seed 000 E 1-2: the assignment of every topic and the leader and ISR of each
        partition assigned to this broker, as ZooKeeper has them now."""
        out = []
        for topic in self.zk.get_children(zkl.TOPICS):
            try:
                data, tstat = self.zk.get(zkl.topic_path(topic))
                parts = (zkl.decode(data) or {}).get("partitions", {})
            except NoNodeError:
                continue
            for p, reps in parts.items():
                if self.id not in reps:
                    continue
                try:
                    raw, stat = self.zk.get(zkl.leader_and_isr_path(topic, int(p)))
                except NoNodeError:
                    continue
                st = zkl.LeaderAndIsr.from_json(raw)
                out.append(PartitionState(topic, int(p), st.leader, st.leader_epoch,
                                          list(st.isr), [int(b) for b in reps], stat.version,
                                          st.controller_epoch, tstat.czxid))
        return out

    def _startup_transitions(self, states: list[PartitionState]) -> None:
        """Seed 000 E 3: start each assigned replica and become leader ("shouldn't happen in
        general") or follower as ZooKeeper says -- recorded as part of ``broker_restart``,
        like the model's action.  A LeaderAndISR that already arrived wins (higher epoch).
        The topic znode's czxid names the current incarnation: a local log left by a topic
        deleted while this broker was down is deleted here (question 5)."""
        for st in states:
            r, current = self.replica_of_incarnation(st.topic, st.partition, st.topic_id)
            if not current or st.leader_epoch <= r.leader_epoch:
                continue
            if st.leader == self.id:
                r.become_leader(st, record=False)
            else:
                r.become_follower(st, self.rule, record=False)
                if st.leader >= 0:
                    self._ensure_fetcher(st.leader)
