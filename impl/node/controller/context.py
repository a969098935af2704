"""The controller's context: what it knows of the cluster, and how it reads and writes ZooKeeper.

Seed 000 makes ZooKeeper the source of truth and the controller its only writer of leaders.
The context caches what the controller last read or wrote -- live brokers with their epochs,
each topic's assignment (AR), each partition's leaderAndISR and zk_version -- so that a
broker failure costs the partitions it affects, not a read of every topic.  Why that is safe:

* **Every write is conditional** on the cached zk_version (seed 000 A 3.3), so a stale entry
  costs one failed write and a re-read, never a wrong state in ZooKeeper.
* **Every write is fenced by the controller epoch**: each multi first checks
  ``/controller_epoch``'s version, so a controller that has been replaced (a zombie -- seed
  000 question 3 applied to the controller) cannot change anything; the failed check raises
  :class:`ControllerMoved` and the controller resigns.
* **Reads are pipelined** (asynchronous gets collected in order): one round trip per topic
  or partition in sequence made every change O(partitions) round trips.

The sections of the design are mixins over :class:`ControllerContext`; see
:mod:`impl.node.controller`.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kazoo.exceptions import BadVersionError, NoNodeError, NotEmptyError

from impl.node import zk as zkl
from impl.node.config import BrokerConfig
from impl.node.step_gate import StepGate
from impl.node.wire import ApiKey, EncodedBody
from traces import events
from traces.recorder import TraceRecorder

Key = tuple[str, int]
INIT, IN_PROGRESS = "INIT", "IN_PROGRESS"  # a reassignment's states (seed 000 F)
# events that re-read state: at most one of each waits in the queue (see _post)
COALESCED = frozenset({"elect", "broker_change", "topic_change", "admin", "tick", "isr_change"})


class ControllerHost(Protocol):
    """What the controller needs of the broker it runs in: its id, its ZooKeeper session,
    its configuration and its trace recorder.  The controller reaches brokers -- its own
    included -- only over TCP, so it needs nothing else of its host."""

    id: int
    zk: Any
    config: BrokerConfig
    recorder: TraceRecorder

    def on_controller_elected(self, controller_epoch: int,
                              announce: Callable[[], None] = lambda: None) -> None:
        """The controller won the election at ``controller_epoch``: its broker fences the
        deposed controller's requests from now on, and ``announce`` (the election's event)
        runs in the same step, so no control request the broker applies falls between."""


class Channel(Protocol):
    """The sending end towards one broker (:class:`impl.node.controller.requests.ControllerChannel`
    over TCP; tests and benchmarks record instead)."""

    broker: int
    host: str
    port: int
    epoch: int  # the broker epoch the channel talks to

    def send(self, api: ApiKey, body: dict[str, Any] | EncodedBody,
             epoch: int | None = None) -> None: ...

    def close(self) -> None: ...


class ControllerMoved(Exception):
    """The ``/controller_epoch`` check failed: another controller has been elected."""



class ControllerContext:
    """The controller's state, its event queue and its ZooKeeper reads and fenced writes."""

    def __init__(self, broker: ControllerHost) -> None:
        self.broker = broker
        self.zk = broker.zk
        self.id = broker.id
        self.config = broker.config
        self.recorder = broker.recorder
        self.events: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self.active = False
        self.epoch = -1
        self.epoch_version = -1
        self.live: dict[int, tuple[str, int, int]] = {}  # id -> (host, port, broker epoch)
        self.channels: dict[int, Channel] = {}  # opened by ControlRequestSender._sync_channels
        self.assignments: dict[str, dict[int, list[int]]] = {}
        # each topic's id: the czxid of its znode, which names its incarnation (question 5,
        # impl.node.topic_identity); read with the assignment, sent in every control request
        self.topic_ids: dict[str, int] = {}
        self.known_topics: set[str] = set()  # topics whose creation has been handled (B)
        self.reassigning: dict[Key, dict[str, Any]] = {}
        self.shutting_down: set[int] = set()
        # the controller's context: each partition's leaderAndISR and zk_version as last read
        # or written by this controller (see _known_states)
        self.states: dict[Key, tuple[zkl.LeaderAndIsr, int]] = {}
        self.generation = 0  # one per term as controller; watches of older terms remove themselves
        self.watches = 0  # controller-path watches currently registered
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        # harness step mode (impl.node.step_gate): campaigns and elections wait for a permit
        self.step_gate: StepGate = getattr(broker, "step_gate", None) or \
            StepGate(self.config.data_dir, self.id, on=False)

    def _post(self, name: str, arg: Any = None) -> None:
        """Enqueue an event; the state-rereading ones are coalesced (at most one waiting), so
        a burst of ISR changes cannot delay a broker failure behind hundreds of refreshes."""
        if name in COALESCED:
            with self._pending_lock:
                if name in self._pending:
                    return
                self._pending.add(name)
        self.events.put((name, arg))

    def _read_live(self) -> dict[int, tuple[str, int, int]]:
        """The registered brokers: id -> (host, port, broker epoch = czxid, seed 003)."""
        live = {}
        for child in self.zk.get_children(zkl.BROKER_IDS):
            try:
                data, stat = self.zk.get(zkl.broker_path(int(child)))
            except NoNodeError:
                continue
            d = zkl.decode(data)
            live[int(child)] = (str(d["host"]), int(d["port"]), stat.czxid)
        return live

    def _read_assignments(self, only: Iterable[str] | None = None) -> None:
        """Read topic assignments: all of them, or ``only`` those topics (merged into what
        is known).  Pipelined reads (as _read_states): one round trip per topic in sequence
        made every topic change O(topics) round trips, enough for a creation load at the
        seed 001 quota's 5 mutations/s to keep the controller busy (bench/bench_quota.py)."""
        topics = self.zk.get_children(zkl.TOPICS) if only is None else sorted(only)
        asyncs = [self.zk.get_async(zkl.topic_path(t)) for t in topics]
        out: dict[str, dict[int, list[int]]] = {} if only is None else dict(self.assignments)
        for topic, a in zip(topics, asyncs, strict=True):
            try:
                data, stat = a.get(timeout=10)
            except NoNodeError:
                out.pop(topic, None)
                continue
            out[topic] = {int(p): [int(b) for b in reps]
                          for p, reps in zkl.decode(data)["partitions"].items()}
            self.topic_ids[topic] = stat.czxid
        self.assignments = out
        self._prune_states()

    def _prune_states(self) -> None:
        """Deleted topics and removed partitions leave the context."""
        for key in [k for k in self.states if k[1] not in self.assignments.get(k[0], {})]:
            del self.states[key]
        for topic in [t for t in self.topic_ids if t not in self.assignments]:
            del self.topic_ids[topic]

    def _electable(self) -> set[int]:
        """The brokers an election may choose: the live ones, less those shutting down
        (Kafka's ``liveBrokerIds``, which excludes ``shuttingDownBrokerIds``).  A broker that
        asked to stop is about to leave every ISR; electing it would undo its shutdown."""
        return set(self.live) - self.shutting_down

    def _all_keys(self) -> list[Key]:
        return [(t, p) for t, parts in self.assignments.items() for p in parts]

    def _replicas(self, key: Key) -> list[int]:
        ar = self.assignments.get(key[0], {}).get(key[1], [])
        info = self.reassigning.get(key)
        if info:
            ar = ar + [b for b in info["rar"] if b not in ar]
        return ar

    def _read_states(self, keys: Iterable[Key]) -> dict[Key, tuple[zkl.LeaderAndIsr, int] | None]:
        """Read partition states from ZooKeeper (pipelined), refreshing the context."""
        keys = list(keys)
        asyncs = [self.zk.get_async(zkl.leader_and_isr_path(t, p)) for t, p in keys]
        out: dict[Key, tuple[zkl.LeaderAndIsr, int] | None] = {}
        for key, a in zip(keys, asyncs, strict=True):
            try:
                data, stat = a.get(timeout=10)
                out[key] = (zkl.LeaderAndIsr.from_json(data), stat.version)
                self.states[key] = out[key]  # type: ignore[assignment]
            except NoNodeError:
                out[key] = None
                self.states.pop(key, None)
        return out

    def _known_states(self, keys: Iterable[Key]) -> dict[Key, tuple[zkl.LeaderAndIsr, int] | None]:
        """Partition states from the controller's context, reading only the ones it lacks.

        Kafka's controller decides from memory too.  It is the only writer of leaders, so a
        cached leader is exact for its term; an ISR a leader has changed since may be stale,
        but every write the controller makes is conditional on the cached zk_version, so a
        stale entry costs one failed write and a re-read (seed 000 A 3.3), never a wrong
        state in ZooKeeper.  Failover reads everything, ISR-change notices re-read."""
        keys = list(keys)
        missing = [k for k in keys if k not in self.states]
        if missing:
            self._read_states(missing)
        return {k: self.states.get(k) for k in keys}

    def _txn(self) -> Any:
        txn = self.zk.transaction()
        txn.check(zkl.CONTROLLER_EPOCH, self.epoch_version)
        return txn

    def _commit(self, txn: Any) -> list[Any]:
        results = txn.commit()
        if results and isinstance(results[0], BadVersionError | NoNodeError):
            raise ControllerMoved()
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise zkl.TransactionFailed(errors)
        return results

    def _emit_elect(self, t: str, p: int, new: zkl.LeaderAndIsr, version: int, zxid: int,
                    reason: str, unclean: bool = False) -> None:
        """Record a leaderAndISR the controller wrote (the model's ``elect_leader``)."""
        self.recorder.emit(events.elect_leader(
            topic=t, partition=p, zxid=zxid, leader=new.leader, leader_epoch=new.leader_epoch,
            isr=sorted(new.isr), zk_version=version, controller_epoch=self.epoch, reason=reason,
            unclean=unclean, replicas=self._replicas((t, p))))

    def _children(self, path: str) -> list[str]:
        """The children of an admin path, sorted; none if it is gone."""
        try:
            return sorted(self.zk.get_children(path))
        except NoNodeError:
            return []

    def _drop_admin(self, root: str, t: str, p: str | None = None) -> None:
        """Delete an admin request (and its topic's node, once empty)."""
        with contextlib.suppress(NoNodeError, NotEmptyError):
            if p is not None:
                self.zk.delete(f"{root}/{t}/{p}")
            self.zk.delete(f"{root}/{t}")
