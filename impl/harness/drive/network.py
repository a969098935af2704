"""A cluster a model run can steer: real ZooKeeper, real broker processes, every broker
behind the harness's relay, every broker in step mode.

Set up so that it stands where the model's initial state (``model.state.initial``) stands:
broker 0 is the controller at controller epoch 1, one topic ``t`` with one partition whose
replicas are every broker, broker 0 its leader, every follower has taken the LeaderAndISR and
none has fetched yet.  From then on the relay holds the model's messages
(``relay.MODEL_MESSAGES``) and nothing the brokers would do on their own happens without a
permit (``impl.node.step_gate``).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from impl.harness.cluster import LocalCluster, cluster_keyring
from impl.harness.relay import MODEL_MESSAGES, Relay
from impl.node import limits, step_gate
from impl.node import zk as zkl
from impl.node.auth.credentials import ClusterSecret, broker_principal
from impl.node.auth.credentials import register as register_keyring
from impl.node.client import Admin
from impl.node.config import BrokerConfig
from impl.node.layout import DataDir
from impl.node.log import read_segments
from impl.node.tracing import trace_path
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode, RpcError
from impl.node.zk import EmbeddedZooKeeper, free_port
from traces.reader import read_traces

TOPIC = "t"
PARTITION = 0  # the partition the cluster is set up with, as the model's initial state has it

STEP_SETTINGS: dict[str, Any] = {
    "harness_step_mode": True,
    # a held request is a message in flight for as long as the run says: no sender gives up
    "controller_request_timeout_s": 600.0,
    # a killed broker's session ends within seconds (the model's crash includes it)
    "zk_session_timeout_s": 2.0,
}
# Authenticated as every cluster is (SCRAM, docs/security.md): the relay passes the sign-in
# exchange through untouched and reads the frames after it, which SCRAM leaves in the clear.
# Not TLS: the relay must read each frame to hold the model's messages.


def record_value(produced: int) -> str:
    """The value the driver writes for the model's ``produced``-th record."""
    return f"v{produced}"


def answer_bytes(fetch_max_records: int, records: int) -> int:
    """The per-partition fetch limit (``fetch_partition_max_bytes``) under which a leader's
    answer carries at most ``fetch_max_records`` of a run's ``records`` records: every value
    the run writes is as long as the last (``model.config.validate`` keeps ``records`` to
    one digit), and the first record of an answer comes whole (KIP-74)."""
    return fetch_max_records * limits.record_size(record_value(records).encode())


class SetupError(RuntimeError):
    """The cluster did not reach the model's initial state."""


class SteerableCluster:
    """ZooKeeper, ``n`` brokers in step mode, and the relay in front of them."""

    def __init__(self, data_dir: Path, brokers: int, truncation: str, min_insync: int = 1,
                 unclean: bool = False, log: Any = None, fetch_partition_max_bytes: int = 0) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.n = brokers
        self.log = log or (lambda m: None)
        self.cluster = LocalCluster(self.data_dir, brokers=brokers)
        self.settings = dict(STEP_SETTINGS, truncation=truncation, min_insync_replicas=min_insync,
                             unclean_leader_election=unclean)
        if fetch_partition_max_bytes:  # the model's fetch_max_records (answer_bytes)
            self.settings["fetch_partition_max_bytes"] = fetch_partition_max_bytes
        self.relay: Relay | None = None
        self._produced: list[threading.Thread] = []

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> SteerableCluster:
        c = self.cluster
        self.data_dir.mkdir(parents=True, exist_ok=True)
        c.keyring, c.zk_acl = cluster_keyring(self.data_dir, create=True)
        c.zk_server = EmbeddedZooKeeper(data_dir=DataDir(self.data_dir).zookeeper.path,
                                        tick_time_ms=c.tick_time_ms,
                                        secret=ClusterSecret.load(self.data_dir)).start()
        ports = {b: free_port() for b in range(self.n)}
        self.relay = Relay({b: ("127.0.0.1", p) for b, p in ports.items()}).start()
        # a client told the brokers' advertised (relay) ports signs in as the operator there too
        register_keyring([("127.0.0.1", p) for p in self.relay.ports.values()], c.keyring)
        for b in range(self.n):
            c.configs[b] = BrokerConfig(broker_id=b, port=ports[b], zookeeper=c.zookeeper,
                                        data_dir=self.data_dir, run_id=c.run_id,
                                        advertised_port=self.relay.ports[b], **self.settings)
        # broker 0 first, and only it may campaign: the model's controller is broker 0
        c.start_broker(0)
        self.grant(0, "controller_elect")
        self._wait(lambda: self.controller() == 0, timeout, "broker 0 to become controller")
        for b in range(1, self.n):
            c.start_broker(b)
        c.wait_ready(timeout)
        with Admin(c.bootstrap) as admin:
            admin.create_topic(TOPIC, assignment={PARTITION: list(range(self.n))}, wait=timeout)
        roles = {0: "become_leader", **{b: "become_follower" for b in range(1, self.n)}}
        self._wait(lambda: all(self.has_event(roles[b], b) for b in roles), timeout,
                   "every replica to take the first LeaderAndISR")
        self.relay.set_hold(MODEL_MESSAGES)
        return self

    def stop(self) -> None:
        """End the run's processes by SIGKILL: every step was judged as it was taken (the
        traces are flushed event by event), and a SIGTERM's controlled shutdown in step mode
        can wait on a permit or a held request until the 20 s bound."""
        try:
            self.cluster.stop(graceful=False)
        finally:
            if self.relay is not None:
                register_keyring([("127.0.0.1", p) for p in self.relay.ports.values()], None)
                self.relay.stop()

    def _wait(self, ok: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():
                return
            time.sleep(0.05)
        raise SetupError(f"timed out waiting for {what}")

    # -- what the harness commands -------------------------------------------------------------
    def pid(self, broker: int) -> int:
        return self.cluster.procs[broker].pid

    def alive(self, broker: int) -> bool:
        p = self.cluster.procs.get(broker)
        return p is not None and p.poll() is None

    def grant(self, broker: int, gate: str, target: int | None = None) -> None:
        step_gate.grant(self.data_dir, broker, self.pid(broker), gate, target=target)

    def produce(self, broker: int, value: str, partition: int = PARTITION) -> None:
        """An acks=all write to ``partition`` straight to ``broker``'s own port, sent once and never retried
        (a retry would be a second write the model never made); its answer comes when the
        HW passes it, so it is awaited on a thread of its own."""
        host, port = self.cluster.endpoint(broker)

        def send() -> None:
            try:
                conn = BlockingConnection(host, port, timeout=600)
                conn.send(ApiKey.PRODUCE, {"topic": TOPIC, "partition": partition, "acks": -1,
                                           "values": [value.encode()], "timeout_ms": 600_000})
                conn.close()
            except OSError:
                pass  # the leader died first: the model's write is in its log or nowhere

        t = threading.Thread(target=send, daemon=True, name=f"produce-{value}")
        t.start()
        self._produced.append(t)

    def serves_as_leader(self, broker: int, hw: int, partition: int = PARTITION) -> bool:
        """Whether ``broker`` still serves ``partition`` as its leader: a consumer's fetch
        at the HW, to its own port, answered (empty) or refused NOT_LEADER (any other
        answer is an RpcError).  It changes nothing: a consumer's offset is no follower's
        LEO, and an empty answer is not recorded."""
        conn = BlockingConnection(*self.cluster.endpoint(broker), timeout=15)
        try:
            error, _, _ = conn.send(ApiKey.FETCH, {"topic": TOPIC, "partition": partition,
                                                   "fetch_offset": hw, "max_wait_ms": 0})
        finally:
            conn.close()
        if error and error != ErrorCode.NOT_LEADER:
            raise RpcError(error, f"a consumer's fetch from broker {broker} at offset {hw}")
        return not error

    def admin_request(self, controller: int, what: str, partition: int, replicas: list[int] | None = None,
                      count: int = 0) -> dict[str, Any]:
        """One administrator's request to the controller, through the admin client:
        ``elect_preferred``, ``delete_topic``, ``create_topic``, ``reassign``,
        ``add_partitions`` (the topic grown to ``count`` partitions, the new one's replicas
        ``replicas``) or ``remove_partitions`` (``replicas`` the partition's assignment, or
        its RAR).  Sent to the model's controller directly: a broker learns a new
        controller from its UpdateMetadata, which waits in the controller's channel behind
        the LeaderAndISR the relay holds, so no broker could name it yet.  Nothing is awaited
        but the answer: the controller's LeaderAndISR and StopReplica wait in the relay."""
        host, port = self.cluster.endpoint(controller)
        with Admin(f"{host}:{port}", api_timeout_s=20) as admin:
            admin.controller_id, admin.brokers = controller, {controller: (host, port)}
            if what == "elect_preferred":
                admin.elect_preferred(TOPIC, partition)
            elif what == "delete_topic":
                admin.delete_topic(TOPIC, wait=0)
            elif what == "reassign":
                admin.reassign(TOPIC, partition, list(replicas or []), wait=0)
            elif what == "create_topic":
                admin.create_topic(TOPIC, replication_factor=len(replicas or []),
                                   assignment={partition: list(replicas or [])}, wait=0)
            elif what == "add_partitions":
                return admin.add_partitions(TOPIC, count, wait=0, assignments=[list(replicas or [])])
            elif what == "remove_partitions":
                admin.remove_partitions(TOPIC, [partition], wait=0)
            else:
                raise ValueError(f"unknown admin request {what!r}")
        return {}

    def request_controlled_shutdown(self, controller: int, broker: int) -> dict[str, Any]:
        """Broker ``broker``'s ControlledShutdown request, sent by the harness in its name (its
        id and broker epoch, the czxid of its registration) to the controller: the model's
        ``controlled_shutdown`` is the controller's step, and its ``broker_stop`` a later one;
        a SIGTERM would take both at once.  The broker keeps running until ``broker_stop``
        (whose SIGTERM asks again: nothing is left to move by then)."""
        zk = self.cluster.zk_client()
        try:
            _, stat = zk.get(f"{zkl.BROKER_IDS}/{broker}")
        finally:
            zk.stop()
            zk.close()
        # signed in as the broker: the controller takes a ControlledShutdown only from the
        # principal it names (impl.node.auth.rules); the harness holds the cluster's secret
        conn = BlockingConnection(*self.cluster.endpoint(controller), timeout=15,
                                  user=broker_principal(broker))
        try:
            error, _, resp = conn.send(ApiKey.CONTROLLED_SHUTDOWN,
                                       {"broker_id": broker, "broker_epoch": stat.czxid})
        finally:
            conn.close()
        if error:
            raise RpcError(error, f"ControlledShutdown of broker {broker} refused")
        return resp

    # -- what the harness reads ----------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        return read_traces([DataDir(self.data_dir).traces]).events

    def has_event(self, kind: str, node: int) -> bool:
        path = trace_path(self.data_dir, node)
        if not path.exists():
            return False
        return any(json.loads(line).get("kind") == kind
                   for line in path.read_text().splitlines() if line.strip())

    def preferred_request_taken(self, partition: int, timeout: float) -> bool:
        """Whether the controller took the preferred-replica election request for
        ``partition`` within ``timeout`` seconds: it deletes the request's znode once it has
        decided, whether it elected or declined -- the only sign a declined one leaves."""
        zk = self.cluster.zk_client()
        try:
            deadline = time.monotonic() + timeout
            while zk.exists(f"{zkl.PREFERRED}/{TOPIC}/{partition}") is not None:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)
            return True
        finally:
            zk.stop()
            zk.close()

    def zk_state(self) -> dict[str, Any]:
        """What ZooKeeper holds of the model's state: the controller, the controller epoch,
        the live brokers, and of every partition of the topic (``partitions``, by id) its
        leader, leader epoch, ISR, version and assigned replicas (AR); partition 0's are
        repeated at the top level, the cluster's first partition."""
        zk = self.cluster.zk_client()
        try:
            out: dict[str, Any] = {"controller": self._controller(zk)}
            try:
                raw, _ = zk.get(zkl.CONTROLLER_EPOCH)
                out["controller_epoch"] = int(raw.decode())
            except Exception:  # noqa: BLE001 - not written yet
                out["controller_epoch"] = -1
            out["live"] = sorted(int(b) for b in zk.get_children(zkl.BROKER_IDS))
            try:
                raw, _ = zk.get(zkl.topic_path(TOPIC))
                assigned = {int(p): list(r) for p, r in zkl.decode(raw)["partitions"].items()}
            except Exception:  # noqa: BLE001 - the topic is not created yet, or deleted
                assigned = {}
            out["partitions"] = {}
            for p in sorted(assigned):
                try:
                    raw, stat = zk.get(zkl.leader_and_isr_path(TOPIC, p))
                except Exception:  # noqa: BLE001 - assigned, its leader not written yet
                    continue
                st = zkl.LeaderAndIsr.from_json(raw)
                out["partitions"][p] = {"leader": st.leader, "leader_epoch": st.leader_epoch, "isr": list(st.isr),
                                        "zk_version": stat.version, "ar": assigned[p]}
            out.update(out["partitions"].get(PARTITION, {}))
            return out
        finally:
            zk.stop()
            zk.close()

    def replica_on_disk(self, broker: int, partition: int = PARTITION) -> tuple[list[tuple[int, int, str]], int]:
        """A broker's replica of ``partition`` as its disk holds it: the records
        (offset, leader epoch, value) and the HW checkpoint (rewritten at every change).
        Read-only: the broker may be running."""
        d = self.cluster.configs[broker].files.partition(TOPIC, partition)
        if not d.path.exists():
            return [], 0
        records = [(r.offset, r.leader_epoch, r.value.decode("utf-8", "replace")) for r in read_segments(d.path)]
        try:
            hw = int(d.hw_checkpoint.read_text().strip() or 0)
        except (OSError, ValueError):
            hw = 0
        return records, min(hw, len(records))

    def controller(self) -> int:
        zk = self.cluster.zk_client()
        try:
            return self._controller(zk)
        finally:
            zk.stop()
            zk.close()

    @staticmethod
    def _controller(zk: Any) -> int:
        try:
            data, _ = zk.get(zkl.CONTROLLER)
        except Exception:  # noqa: BLE001 - no controller
            return -1
        return int(json.loads(data)["brokerid"])
