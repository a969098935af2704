"""The controller: elected through ``/controller`` (seed 002), one event queue, one thread.

Seed 000 sections implemented here, one method each:

* D ``on_controller_failover`` -- :meth:`Controller._elect` then :meth:`Controller._failover`
* A ``on_broker_change`` -- :meth:`Controller._on_broker_change`
* B ``on_topic_change`` / ``init_leaders`` -- :meth:`Controller._on_topic_change`,
  :meth:`Controller._init_leaders`; deletion via ``/admin/delete_topics``
* F reassignment agent (INIT / IN_PROGRESS) -- :meth:`Controller._reassignment_wakeup`
* H ``on_partitions_add`` / ``on_partitions_remove``
* preferred-replica election and controlled shutdown (later Kafka, same mechanism)

Every ZooKeeper write the controller makes is a kazoo transaction whose first item checks
``/controller_epoch``'s version: a controller that has been replaced (a zombie, seed 000
question 3 applied to the controller) cannot change anything, and resigns when it learns so.
It also resigns as soon as its session is SUSPENDED (field notes) and relies on epochs.
Leader changes are written conditionally on the leaderAndISR zk_version (A 3.3) and retried
from a fresh read when the version moved.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NoNodeError,
    NotEmptyError,
)

from impl.node import zk as zkl
from impl.node.wire import ApiKey, BlockingConnection, EncodedBody, ErrorCode, encode_value

if TYPE_CHECKING:
    from impl.node.broker import Broker

Key = tuple[str, int]
INIT, IN_PROGRESS = "INIT", "IN_PROGRESS"
COALESCED = frozenset({"elect", "broker_change", "topic_change", "admin", "tick", "isr_change"})


class ControllerMoved(Exception):
    """The ``/controller_epoch`` check failed: another controller has been elected."""


@dataclass(frozen=True)
class Decision:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def choose_leader(assigned: list[int], current: zkl.LeaderAndIsr, live: set[int],
                  unclean_allowed: bool, exclude: frozenset[int] = frozenset()) -> Decision:
    """Seed 000 A 3.2: keep a live ISR leader, else the first live ISR member (AR order);
    else, only if unclean election is allowed, a live AR member alone in the ISR; else no
    leader (-1) with the ISR left as it was so a returning member can be elected."""
    order = list(assigned) + sorted(set(current.isr) - set(assigned))
    eligible = live - exclude
    live_isr = [b for b in order if b in current.isr and b in eligible]
    if live_isr:
        leader = current.leader if current.leader in live_isr else live_isr[0]
        return Decision(leader, tuple(sorted(live_isr)))
    live_ar = [b for b in assigned if b in eligible]
    if unclean_allowed and live_ar:
        return Decision(live_ar[0], (live_ar[0],), unclean=True)
    return Decision(-1, tuple(sorted(current.isr)))


class ControllerChannel:
    """One sender thread per broker, so a slow or paused broker never blocks the queue."""

    def __init__(self, controller: Controller, broker: int, host: str, port: int,
                 epoch: int) -> None:
        self.controller, self.broker, self.host, self.port = controller, broker, host, port
        self.epoch = epoch  # the broker epoch this channel talks to
        self.queue: queue.Queue[tuple[ApiKey, dict[str, Any] | EncodedBody, int] | None] = queue.Queue()
        self.closed = False
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"controller-channel-{broker}")
        self.thread.start()

    def send(self, api: ApiKey, body: dict[str, Any] | EncodedBody, epoch: int | None = None) -> None:
        """Queue one request; ``body`` may be pre-encoded (the cached UpdateMetadata payload,
        shared by every channel) -- then ``epoch`` says which controller epoch sent it."""
        if epoch is None:
            assert isinstance(body, dict)
            epoch = int(body.get("controller_epoch", -1))
        self.queue.put((api, body, epoch))

    def close(self) -> None:
        self.closed = True
        self.queue.put(None)

    def _run(self) -> None:
        conn: BlockingConnection | None = None
        rec = self.controller.recorder
        timeout = self.controller.config.controller_request_timeout_s
        while True:
            item = self.queue.get()
            if item is None:
                break
            api, body, epoch = item
            deadline = time.monotonic() + 4 * timeout
            while not self.closed and self.controller.active and self.controller.epoch == epoch:
                try:
                    if conn is None:
                        conn = BlockingConnection(self.host, self.port, timeout=timeout)
                    error, clock, _ = conn.send(api, body, clock=rec.tick())
                    rec.observe(clock)
                    break
                except (OSError, ConnectionError, ValueError):
                    if conn is not None:
                        conn.close()
                        conn = None
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
        if conn is not None:
            conn.close()


class Controller:
    def __init__(self, broker: Broker) -> None:
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
        self.channels: dict[int, ControllerChannel] = {}
        self.assignments: dict[str, dict[int, list[int]]] = {}
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

    # -- plumbing ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="controller")
        self._thread.start()
        self.zk.DataWatch(zkl.CONTROLLER, self._controller_watch)
        threading.Thread(target=self._ticker, daemon=True, name="controller-tick").start()

    # the paths only the active controller watches (seed 000 A, B, F, H and the ISR notices)
    CONTROLLER_WATCHES = [(zkl.BROKER_IDS, "broker_change"), (zkl.TOPICS, "topic_change"),
                          (zkl.DELETE_TOPICS, "admin"), (zkl.PARTITIONS_ADD, "admin"),
                          (zkl.PARTITIONS_REMOVE, "admin"), (zkl.REASSIGN, "admin"),
                          (zkl.PREFERRED, "admin"), (zkl.ISR_CHANGE, "isr_change")]

    def _watch_controller_paths(self) -> None:
        """Seed 002: on becoming controller, register the watches of its state machines.
        They belong to this term (``generation``): when the broker resigns, the next
        notification finds the generation moved and the watch removes itself (kazoo drops
        a watch whose function returns False), so a former controller reacts to nothing."""
        for path, event in self.CONTROLLER_WATCHES:
            self.zk.ChildrenWatch(path, self._enqueuer(event, self.generation), send_event=False)
            with self._pending_lock:
                self.watches += 1

    def _post(self, name: str, arg: Any = None) -> None:
        """Enqueue an event; the state-rereading ones are coalesced (at most one waiting), so
        a burst of ISR changes cannot delay a broker failure behind hundreds of refreshes."""
        if name in COALESCED:
            with self._pending_lock:
                if name in self._pending:
                    return
                self._pending.add(name)
        self.events.put((name, arg))

    def _enqueuer(self, name: str, generation: int) -> Callable[[list[str]], bool]:
        first = [True]  # kazoo calls at registration too; the failover reads everything anyway

        def fire(_children: list[str]) -> bool:
            if self._stopped.is_set() or generation != self.generation:
                with self._pending_lock:
                    self.watches -= 1
                return False
            if first[0]:
                first[0] = False
            else:
                self._post(name)
            return True
        return fire

    def _controller_watch(self, data: bytes | None, _stat: Any) -> bool:
        if self._stopped.is_set():
            return False
        if data is None:
            self._post("elect")
        else:
            with contextlib.suppress(Exception):
                if self.active and int(json.loads(data)["brokerid"]) != self.id:
                    self.events.put(("resign", "controller_moved"))
        return True

    def _ticker(self) -> None:
        while not self._stopped.wait(self.config.reassign_interval_s):
            if self.active:
                self._post("tick")

    def stop(self) -> None:
        self._stopped.set()
        if self.active:
            self.events.put(("resign", "shutdown"))
        self.events.put(None)
        if self._thread is not None:
            self._thread.join(5)
        for ch in self.channels.values():
            ch.close()

    def on_session_trouble(self, state: str) -> None:
        """kazoo thread: stop acting at SUSPENDED already; epochs fence anything in flight."""
        if self.active:
            self.active = False
            self.events.put(("resign", f"session_{str(state).lower()}"))

    def on_reconnected(self) -> None:
        self._post("elect")

    def request_controlled_shutdown(self, broker: int, broker_epoch: int) -> Future[dict[str, Any]]:
        fut: Future[dict[str, Any]] = Future()
        self.events.put(("controlled_shutdown", (broker, broker_epoch, fut)))
        return fut

    def _run(self) -> None:
        handlers: dict[str, Callable[[Any], None]] = {
            "elect": lambda _: self._elect(),
            "resign": self._resign,
            "broker_change": lambda _: self._on_broker_change(),
            "topic_change": lambda _: self._on_topic_change(),
            "admin": lambda _: self._scan_admin(),
            "tick": lambda _: self._scan_admin(),
            "isr_change": lambda _: self._on_isr_change(),
            "controlled_shutdown": self._on_controlled_shutdown,
        }
        while True:
            event = self.events.get()
            if event is None:
                return
            name, arg = event
            if name in COALESCED:
                with self._pending_lock:
                    self._pending.discard(name)
            if name == "controlled_shutdown" and not self.active:
                if not arg[2].done():
                    arg[2].set_result({"error": int(ErrorCode.NOT_CONTROLLER)})
                continue
            if name not in ("elect", "resign") and not self.active:
                continue
            try:
                handlers[name](arg)
            except ControllerMoved:
                self._resign("epoch_fenced")
            except KazooException:
                traceback.print_exc()
                if name == "controlled_shutdown" and not arg[2].done():
                    arg[2].set_result({"error": int(ErrorCode.REQUEST_TIMED_OUT)})
            except Exception:  # noqa: BLE001 - one bad event must not kill the controller
                traceback.print_exc()
                if name == "controlled_shutdown" and not arg[2].done():
                    arg[2].set_result({"error": int(ErrorCode.UNKNOWN_SERVER_ERROR)})

    # -- seed 002 / 000 D: election and failover -------------------------------------------------
    def _elect(self) -> None:
        if self.active or self._stopped.is_set():
            return
        try:
            data, _ = self.zk.get(zkl.CONTROLLER)
            if int(json.loads(data)["brokerid"]) == self.id:
                # our own znode from a session we no longer act for: clear it, re-run election
                self.zk.delete(zkl.CONTROLLER)
            return
        except NoNodeError:
            pass
        except (ValueError, KeyError, TypeError):
            return
        me = zkl.encode({"version": 1, "brokerid": self.id,
                         "timestamp": str(int(time.time() * 1000))})
        txn = self.zk.transaction()
        txn.create(zkl.CONTROLLER, me, ephemeral=True)
        try:
            raw, stat = self.zk.get(zkl.CONTROLLER_EPOCH)
            new_epoch = int(raw.decode()) + 1
            txn.set_data(zkl.CONTROLLER_EPOCH, str(new_epoch).encode(), version=stat.version)
        except NoNodeError:
            new_epoch = 1
            txn.create(zkl.CONTROLLER_EPOCH, b"1")
        try:
            results = zkl.commit_checked(txn)
        except zkl.TransactionFailed:
            return  # another broker won
        estat = self.zk.exists(zkl.CONTROLLER_EPOCH)
        assert estat is not None
        self.epoch, self.epoch_version = new_epoch, estat.version
        zxid = results[1].mzxid if hasattr(results[1], "mzxid") else estat.mzxid
        self.active = True
        self.generation += 1
        self.recorder.emit("controller_elect", zxid=zxid,
                           params={"controller_epoch": new_epoch, "broker": self.id})
        self._watch_controller_paths()
        self._failover()

    def _resign(self, reason: str) -> None:
        """Seed 002: back off -- stop the state machines (channels, reassignments, the live
        view) and retire this term's watches."""
        was = self.active or self.epoch >= 0
        self.active = False
        self.generation += 1
        for ch in self.channels.values():
            ch.close()
        self.channels.clear()
        self.reassigning.clear()
        self.live.clear()
        self.states.clear()  # the next term starts from ZooKeeper, not from this one's memory
        if was and self.epoch >= 0:
            self.recorder.emit("controller_resign",
                               params={"controller_epoch": self.epoch, "reason": str(reason)})
            self.epoch = -1
        if reason not in ("shutdown",):
            # if we still hold /controller (same session), let the election run again
            self._post("elect")

    def _failover(self) -> None:
        """Seed 000 D steps 3-9."""
        self.live = self._read_live()
        self._sync_channels()
        self._read_assignments()
        self.known_topics = set(self.assignments)
        states = self._read_states(self._all_keys())
        # 4. LeaderAndISR with INIT to every live broker, for every partition it replicates
        for b in self.live:
            keys = [k for k in states if states[k] is not None and b in self._replicas(k)]
            self._send_leader_and_isr(b, keys, states, init=True)
        self._send_update_metadata(states)
        self._on_broker_change()  # 5
        missing = [k for k, v in states.items() if v is None]  # 6
        if missing:
            self._init_leaders(missing)
        for key, rar in self._reassign_requests().items():  # 7: pending ones restart at INIT
            self.reassigning.setdefault(key, {"state": INIT, "rar": rar})
        self._scan_admin()  # 7-9 and pending deletions

    # -- reading ZooKeeper --------------------------------------------------------------------
    def _read_live(self) -> dict[int, tuple[str, int, int]]:
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
                data, _ = a.get(timeout=10)
            except NoNodeError:
                out.pop(topic, None)
                continue
            out[topic] = {int(p): [int(b) for b in reps]
                          for p, reps in zkl.decode(data)["partitions"].items()}
        self.assignments = out
        self._prune_states()

    def _prune_states(self) -> None:
        """Deleted topics and removed partitions leave the context."""
        for key in [k for k in self.states if k[1] not in self.assignments.get(k[0], {})]:
            del self.states[key]

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

    # -- writing ZooKeeper: always fenced by the controller epoch ------------------------
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

    def _elect_partitions(self, keys: Iterable[Key],
                          decide: Callable[[Key, zkl.LeaderAndIsr], Decision | None],
                          reason: str, extra_targets: Iterable[int] = (), fresh: bool = False) -> list[Key]:
        """Seed 000 A 3.1-4: read, decide, write conditionally (re-read and retry the
        partitions whose zk_version moved meanwhile, A 3.3), then send LeaderAndISR.

        The first decision is made from the context (``_known_states``): a stale entry makes
        its write fail and is re-read.  ``fresh`` reads ZooKeeper first instead -- for a
        caller to whom "nothing to do" matters, since no conditional write checks that."""
        pending = list(keys)
        done: list[Key] = []
        states: dict[Key, Any] = {}
        for attempt in range(20):
            if not pending:
                break
            # first from the context; partitions whose write conflicted, from ZooKeeper
            current = (self._known_states(pending) if attempt == 0 and not fresh
                       else self._read_states(pending))
            plans = []
            for key in pending:
                cur = current.get(key)
                if cur is None:
                    continue
                st, version = cur
                d = decide(key, st)
                if d is None or (d.leader == st.leader and tuple(sorted(d.isr)) == st.isr):
                    continue
                new = zkl.LeaderAndIsr(d.leader, st.leader_epoch + 1, tuple(sorted(d.isr)), self.epoch)
                plans.append((key, new, version, d.unclean))
            written, conflicted = self._write_states(plans, reason)
            for k, new, ver in written:
                states[k] = (new, ver)
                done.append(k)
            pending = conflicted
        if pending:
            raise RuntimeError(f"could not elect leaders for {pending} after retries")
        targets: dict[int, list[Key]] = {}
        for k in done:
            for b in set(self._replicas(k)) | set(extra_targets):
                targets.setdefault(b, []).append(k)
        for b, ks in targets.items():
            self._send_leader_and_isr(b, ks, states)
        return done

    def _write_states(self, plans: list[tuple[Key, zkl.LeaderAndIsr, int, bool]], reason: str
                      ) -> tuple[list[tuple[Key, zkl.LeaderAndIsr, int]], list[Key]]:
        """Batched conditional writes (seed 000 question 1: ZK multi), each multi fenced by
        the controller epoch.  A multi is all-or-nothing, so the items whose version moved are
        taken out and the rest committed again; returns (written, conflicted keys)."""
        written: list[tuple[Key, zkl.LeaderAndIsr, int]] = []
        conflicted: list[Key] = []
        size = 500 if self.config.controller_batch_zk_writes else 1  # 1: the unbatched baseline
        for i in range(0, len(plans), size):
            chunk = plans[i:i + size]
            while chunk:
                txn = self._txn()
                for (t, p), new, version, _ in chunk:
                    txn.set_data(zkl.leader_and_isr_path(t, p), new.to_json(), version=version)
                results = txn.commit()
                if results and isinstance(results[0], BadVersionError | NoNodeError):
                    raise ControllerMoved()
                failed = {j for j, r in enumerate(results[1:])
                          if isinstance(r, BadVersionError | NoNodeError)}
                if failed:
                    # ZooKeeper reports only the first failing item: find every moved version
                    now = self._read_states([c[0] for c in chunk])
                    failed |= {j for j, c in enumerate(chunk)
                               if now.get(c[0]) is None or now[c[0]][1] != c[2]}
                    conflicted += [chunk[j][0] for j in sorted(failed)]
                    chunk = [c for j, c in enumerate(chunk) if j not in failed]
                    continue
                if any(isinstance(r, BaseException) for r in results):
                    raise zkl.TransactionFailed([r for r in results if isinstance(r, BaseException)])
                for ((t, p), new, _v, unclean), stat in zip(chunk, results[1:], strict=True):
                    written.append(((t, p), new, stat.version))
                    self.states[(t, p)] = (new, stat.version)
                    self._emit_elect(t, p, new, stat.version, stat.mzxid, reason, unclean)
                break
        return written, conflicted

    def _emit_elect(self, t: str, p: int, new: zkl.LeaderAndIsr, version: int, zxid: int,
                    reason: str, unclean: bool = False) -> None:
        self.recorder.emit("elect_leader", topic=t, partition=p, zxid=zxid, params={
            "leader": new.leader, "leader_epoch": new.leader_epoch, "isr": sorted(new.isr),
            "zk_version": version, "controller_epoch": self.epoch, "reason": reason,
            "unclean": unclean, "replicas": self._replicas((t, p))})

    # -- sending ------------------------------------------------------------------------------
    def _sync_channels(self) -> None:
        for b in list(self.channels):
            ch = self.channels[b]
            if b not in self.live or (ch.host, ch.port) != self.live[b][:2] or \
                    ch.epoch != self.live[b][2]:
                ch.close()
                del self.channels[b]
        for b, (host, port, epoch) in self.live.items():
            if b not in self.channels:
                self.channels[b] = ControllerChannel(self, b, host, port, epoch)

    # -- seed 003: what fences a control request ---------------------------------------------
    def max_broker_epoch(self) -> int:
        """Seed 003: the largest broker epoch (czxid of ``/brokers/ids/N``) among the live
        brokers this controller has read.  Every zxid the controller has seen is at most this
        value (e0 <= e1), and any later registration gets a larger zxid (e1 < e2), so a broker
        whose own epoch exceeds it knows the request was computed before it registered."""
        return max((epoch for _, _, epoch in self.live.values()), default=-1)

    def _control_fields(self, broker: int | None) -> dict[str, Any]:
        """The fencing fields of every control request.  With ``cache_update_metadata`` (the
        seed 003 format) they are the same for every broker -- controller id, controller
        epoch and the max broker epoch -- which is what lets one UpdateMetadata payload be
        built once and sent to all; otherwise (the KIP-380 format) each request carries its
        recipient's own broker epoch."""
        fields: dict[str, Any] = {"controller_id": self.id, "controller_epoch": self.epoch}
        if self.config.cache_update_metadata:
            fields["max_broker_epoch"] = self.max_broker_epoch()
        else:
            assert broker is not None, "the per-broker format names its recipient"
            fields["broker_epoch"] = self.live[broker][2]
        return fields

    def _send(self, broker: int, api: ApiKey, body: dict[str, Any]) -> None:
        ch = self.channels.get(broker)
        if ch is not None and broker in self.live:
            ch.send(api, dict(body, **self._control_fields(broker)))

    def _send_leader_and_isr(self, broker: int, keys: list[Key],
                             states: dict[Key, Any], init: bool = False) -> None:
        entries, leaders = [], {}
        for t, p in keys:
            cur = states.get((t, p))
            if cur is None:
                continue
            st, version = cur
            entries.append({"topic": t, "partition": p, "leader": st.leader,
                            "leader_epoch": st.leader_epoch, "isr": list(st.isr),
                            "replicas": self._replicas((t, p)), "zk_version": version})
            if st.leader in self.live:
                leaders[str(st.leader)] = list(self.live[st.leader][:2])
        if entries or init:
            self._send(broker, ApiKey.LEADER_AND_ISR,
                       {"init": init, "partitions": entries, "leaders": leaders})

    def _send_update_metadata(self, states: dict[Key, Any] | None = None,
                              partial: bool = False) -> None:
        """UpdateMetadata to every live broker: every partition (a full refresh, the default),
        or with ``partial`` only ``states``' partitions, which brokers merge into what they
        have -- a topic creation then costs the size of the topic, not of the cluster."""
        if states is None:
            states = self._known_states(self._all_keys())
        topics: dict[str, dict[str, Any]] = {}
        for (t, p), cur in sorted(states.items()):
            st = cur[0] if cur else None
            topics.setdefault(t, {})[str(p)] = {
                "leader": st.leader if st else -1, "leader_epoch": st.leader_epoch if st else -1,
                "isr": list(st.isr) if st else [], "replicas": self._replicas((t, p))}
        brokers = {str(b): [h, port] for b, (h, port, _) in self.live.items()}
        body: dict[str, Any] = {"brokers": brokers, "topics": topics}
        if partial:
            body["partial"] = True
        if not self.config.cache_update_metadata:
            for b in self.live:  # KIP-380: one request object and one buffer per broker
                self._send(b, ApiKey.UPDATE_METADATA, body)
            return
        # seed 003: one payload per metadata change, encoded once, the same bytes to all
        payload = EncodedBody(encode_value(dict(body, **self._control_fields(None))))
        for b in self.live:
            ch = self.channels.get(b)
            if ch is not None:
                ch.send(ApiKey.UPDATE_METADATA, payload, self.epoch)

    def _stop_replicas(self, per_broker: dict[int, list[Key]], delete: bool) -> None:
        for b, keys in per_broker.items():
            self._send(b, ApiKey.STOP_REPLICA,
                       {"delete": delete, "partitions": [[t, p] for t, p in keys]})

    # -- seed 000 A: broker failure (and return) ------------------------------------------------
    def _on_broker_change(self) -> None:
        new_live = self._read_live()
        old = self.live
        born = {b for b, v in new_live.items() if b not in old or old[b][2] != v[2]}
        self.live = new_live
        self.shutting_down &= set(new_live) - born
        self._sync_channels()
        # no re-read of the assignments: only topic, partition and reassignment events change
        # them, and those handlers keep self.assignments current -- a broker failure costs
        # the partitions it affects, not a read of every topic (seed 001's motivation)
        live = set(new_live)

        def decide(key: Key, st: zkl.LeaderAndIsr) -> Decision | None:
            if st.leader in live and set(st.isr) <= live:
                return None
            return choose_leader(self._replicas(key), st, live,
                                 self.config.unclean_leader_election)

        changed = self._elect_partitions(self._all_keys(), decide, "broker_change")
        if born:  # new or bounced brokers learn every partition they replicate
            states = self._known_states(self._all_keys())
            for b in born:
                keys = [k for k in states if b in self._replicas(k) and k not in changed]
                self._send_leader_and_isr(b, keys, states)
        if changed or born or set(old) != live:
            self._send_update_metadata()

    # -- seed 000 B: topics --------------------------------------------------------------------
    def _on_topic_change(self) -> None:
        """Seed 000 B: read the assignment of the new topics only (the others' are known)."""
        before = self.known_topics
        now = set(self.zk.get_children(zkl.TOPICS))
        self._read_assignments(now - before)
        for t in before - now:
            self.assignments.pop(t, None)
        self._prune_states()
        self.known_topics = set(self.assignments)
        new = self.known_topics - before
        gone = before - self.known_topics
        if gone:
            self._send_update_metadata()
        if new:
            states = self._read_states([(t, p) for t in new for p in self.assignments[t]])
            missing = [k for k, v in states.items() if v is None]
            if missing:
                self._init_leaders(missing)
            for t in sorted(new):
                self.recorder.emit("topic_created", params={
                    "topic": t, "partitions": {str(p): r for p, r in self.assignments[t].items()}})

    def _init_decision(self, replicas: list[int]) -> Decision:
        """Seed 000 B init_leaders 1.1: a live AR member leads, all live AR in the ISR."""
        live_ar = [b for b in replicas if b in self.live and b not in self.shutting_down]
        if not live_ar:
            return Decision(-1, tuple(sorted(replicas)))
        return Decision(live_ar[0], tuple(sorted(live_ar)))

    def _init_leaders(self, keys: list[Key], txn_extra: Callable[[Any], None] | None = None,
                      reason: str = "init") -> dict[Key, Any]:
        """Create the leaderAndISR znodes of new partitions in one fenced multi, then send."""
        txn = self._txn()
        if txn_extra:
            txn_extra(txn)
        plans = {}
        for t, p in keys:
            d = self._init_decision(self._replicas((t, p)))
            new = zkl.LeaderAndIsr(d.leader, 0, d.isr, self.epoch)
            if not self.zk.exists(zkl.partition_path(t, p)):
                txn.create(zkl.partition_path(t, p), b"")
            txn.create(zkl.leader_and_isr_path(t, p), new.to_json())
            plans[(t, p)] = new
        self._commit(txn)
        states: dict[Key, Any] = {}
        for (t, p), new in plans.items():
            stat = self.zk.exists(zkl.leader_and_isr_path(t, p))
            if stat is None:
                continue
            states[(t, p)] = self.states[(t, p)] = (new, stat.version)
            self._emit_elect(t, p, new, stat.version, stat.czxid, reason)
        targets: dict[int, list[Key]] = {}
        for k in states:
            for b in self._replicas(k):
                targets.setdefault(b, []).append(k)
        for b, ks in targets.items():
            self._send_leader_and_isr(b, ks, states)
        self._send_update_metadata(states, partial=True)
        return states

    def _delete_topic(self, topic: str) -> None:
        admin = f"{zkl.DELETE_TOPICS}/{topic}"
        parts = self.assignments.get(topic)
        if parts is None:
            with contextlib.suppress(NoNodeError):
                self.zk.delete(admin)
            return
        per_broker: dict[int, list[Key]] = {}
        for p in parts:
            for b in self._replicas((topic, p)):
                per_broker.setdefault(b, []).append((topic, p))
        self._stop_replicas(per_broker, delete=True)  # seed 000 B 2
        txn = self._txn()
        for child in self.zk.get_children(zkl.topic_path(topic)):
            for grandchild in self.zk.get_children(f"{zkl.topic_path(topic)}/{child}"):
                txn.delete(f"{zkl.topic_path(topic)}/{child}/{grandchild}")
            txn.delete(f"{zkl.topic_path(topic)}/{child}")
        txn.delete(zkl.topic_path(topic))
        txn.delete(admin)
        self._commit(txn)
        del self.assignments[topic]
        self.known_topics.discard(topic)
        for key in [k for k in self.reassigning if k[0] == topic]:
            del self.reassigning[key]
        self.recorder.emit("topic_deleted", params={"topic": topic,
                                                    "partitions": sorted(parts)})
        self._send_update_metadata()

    # -- admin paths: deletions, H (add/remove), F (reassignment), preferred election ------------
    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self.zk.get_children(path))
        except NoNodeError:
            return []

    def _reassign_requests(self) -> dict[Key, list[int]]:
        out = {}
        for t in self._children(zkl.REASSIGN):
            for p in self._children(f"{zkl.REASSIGN}/{t}"):
                with contextlib.suppress(NoNodeError, ValueError):
                    data, _ = self.zk.get(f"{zkl.REASSIGN}/{t}/{p}")
                    out[(t, int(p))] = [int(b) for b in zkl.decode(data)]
        return out

    def _scan_admin(self) -> None:
        for t in self._children(zkl.DELETE_TOPICS):
            self._delete_topic(t)
        self._on_partitions_add()
        self._on_partitions_remove()
        for key, rar in self._reassign_requests().items():
            if key not in self.reassigning:
                self.reassigning[key] = {"state": INIT, "rar": rar}
                self.recorder.emit("reassignment", topic=key[0], partition=key[1],
                                   params={"state": INIT, "rar": rar,
                                           "ar": self.assignments.get(key[0], {}).get(key[1])})
        self._reassignment_wakeup()
        self._on_preferred()

    def _drop_admin(self, root: str, t: str, p: str | None = None) -> None:
        with contextlib.suppress(NoNodeError, NotEmptyError):
            if p is not None:
                self.zk.delete(f"{root}/{t}/{p}")
            self.zk.delete(f"{root}/{t}")

    def _on_partitions_add(self) -> None:
        """Seed 000 H: init_leaders, delete the PartitionAdd path and update the topic path --
        here all in one fenced multi, so a crash cannot leave half of it done."""
        for t in self._children(zkl.PARTITIONS_ADD):
            data, stat = (None, None)
            with contextlib.suppress(NoNodeError):
                data, stat = self.zk.get(zkl.topic_path(t))
            requested = {}
            for p in self._children(f"{zkl.PARTITIONS_ADD}/{t}"):
                with contextlib.suppress(NoNodeError, ValueError):
                    raw, _ = self.zk.get(f"{zkl.PARTITIONS_ADD}/{t}/{p}")
                    requested[int(p)] = [int(b) for b in zkl.decode(raw)]
            if data is None or stat is None or t not in self.assignments:
                for p in requested:
                    self._drop_admin(zkl.PARTITIONS_ADD, t, str(p))
                self._drop_admin(zkl.PARTITIONS_ADD, t)
                continue
            new = {p: r for p, r in requested.items() if p not in self.assignments[t]}
            if not new:
                for p in requested:
                    self._drop_admin(zkl.PARTITIONS_ADD, t, str(p))
                continue
            merged = {**self.assignments[t], **new}
            self.assignments[t] = merged

            def extra(txn: Any, t: str = t, merged: dict[int, list[int]] = merged,
                      version: int = stat.version, requested: dict[int, Any] = requested) -> None:
                txn.set_data(zkl.topic_path(t), zkl.encode(
                    {"partitions": {str(p): r for p, r in sorted(merged.items())}}), version=version)
                for p in requested:
                    txn.delete(f"{zkl.PARTITIONS_ADD}/{t}/{p}")

            try:
                self._init_leaders([(t, p) for p in sorted(new)], extra)
            except zkl.TransactionFailed:
                self._read_assignments()
                continue
            self._drop_admin(zkl.PARTITIONS_ADD, t)
            self.recorder.emit("partitions_added", params={
                "topic": t, "partitions": {str(p): r for p, r in new.items()}})

    def _on_partitions_remove(self) -> None:
        for t in self._children(zkl.PARTITIONS_REMOVE):
            parts = [int(p) for p in self._children(f"{zkl.PARTITIONS_REMOVE}/{t}") if p.isdigit()]
            current = self.assignments.get(t)
            if not current:
                for p in parts:
                    self._drop_admin(zkl.PARTITIONS_REMOVE, t, str(p))
                self._drop_admin(zkl.PARTITIONS_REMOVE, t)
                continue
            parts = [p for p in parts if p in current]
            per_broker: dict[int, list[Key]] = {}
            for p in parts:
                for b in self._replicas((t, p)):
                    per_broker.setdefault(b, []).append((t, p))
            self._stop_replicas(per_broker, delete=True)  # H remove 2
            remaining = {p: r for p, r in current.items() if p not in parts}
            _, stat = self.zk.get(zkl.topic_path(t))
            txn = self._txn()
            for p in parts:
                with contextlib.suppress(NoNodeError):
                    if self.zk.exists(zkl.leader_and_isr_path(t, p)):
                        txn.delete(zkl.leader_and_isr_path(t, p))
                    txn.delete(zkl.partition_path(t, p))
            txn.set_data(zkl.topic_path(t), zkl.encode(
                {"partitions": {str(p): r for p, r in sorted(remaining.items())}}),
                version=stat.version)
            for p in self._children(f"{zkl.PARTITIONS_REMOVE}/{t}"):
                txn.delete(f"{zkl.PARTITIONS_REMOVE}/{t}/{p}")
            try:
                self._commit(txn)
            except zkl.TransactionFailed:
                self._read_assignments()
                continue
            self.assignments[t] = remaining
            for p in parts:
                self.reassigning.pop((t, p), None)
            self._drop_admin(zkl.PARTITIONS_REMOVE, t)
            self.recorder.emit("partitions_removed", params={"topic": t, "partitions": parts})
            self._send_update_metadata()

    def _reassignment_wakeup(self) -> None:
        """Seed 000 F, the Reassignment Agent's on_wakeup()."""
        for key, info in list(self.reassigning.items()):
            t, p = key
            rar: list[int] = info["rar"]
            ar = self.assignments.get(t, {}).get(p)
            if ar is None:
                del self.reassigning[key]
                self._drop_admin(zkl.REASSIGN, t, str(p))
                continue
            if info["state"] == INIT:
                # 2.1: start bootstrapping the new replicas (AR+RAR is recorded as the
                # topic's assignment meanwhile, so a restarting RAR broker keeps its copy)
                union = ar + [b for b in rar if b not in ar]
                if union != ar:
                    self._set_assignment(t, p, union)
                states = self._read_states([key])
                for b in union:
                    self._send_leader_and_isr(b, [key], states)
                info["state"] = IN_PROGRESS
                self.recorder.emit("reassignment", topic=t, partition=p,
                                   params={"state": IN_PROGRESS, "rar": rar, "ar": ar})
                continue
            cur = self._read_states([key])[key]  # 3.1
            if cur is None:
                continue
            st, version = cur
            if not set(rar) <= set(st.isr):  # 3.2: not caught up yet
                continue
            live_rar_isr = [b for b in rar if b in st.isr and b in self.live]
            if not live_rar_isr:
                continue
            leader = st.leader if st.leader in live_rar_isr else live_rar_isr[0]
            new = zkl.LeaderAndIsr(leader, st.leader_epoch + 1,
                                   tuple(sorted(b for b in st.isr if b in rar)), self.epoch)
            old_replicas = self._replicas(key)
            _, tstat = self.zk.get(zkl.topic_path(t))
            parts = dict(self.assignments[t])
            parts[p] = list(rar)
            txn = self._txn()  # 3.2.2, 3.2.5, 3.2.6 in one fenced multi
            txn.set_data(zkl.leader_and_isr_path(t, p), new.to_json(), version=version)
            txn.set_data(zkl.topic_path(t), zkl.encode(
                {"partitions": {str(q): r for q, r in sorted(parts.items())}}), version=tstat.version)
            txn.delete(f"{zkl.REASSIGN}/{t}/{p}")
            try:
                results = self._commit(txn)
            except zkl.TransactionFailed:
                self._read_assignments()
                continue
            self.assignments[t] = parts
            del self.reassigning[key]
            stat = results[1]
            self._emit_elect(t, p, new, stat.version, stat.mzxid, "reassign")
            states = {key: (new, stat.version)}
            self.states[key] = (new, stat.version)
            for b in rar:  # 3.2.3
                self._send_leader_and_isr(b, [key], states)
            gone = [b for b in old_replicas if b not in rar]
            self._stop_replicas({b: [key] for b in gone}, delete=True)  # 3.2.4
            self._drop_admin(zkl.REASSIGN, t)
            self.recorder.emit("reassignment", topic=t, partition=p,
                               params={"state": "DONE", "rar": rar, "removed": gone,
                                       "leader": leader, "leader_epoch": new.leader_epoch})
            self._send_update_metadata()

    def _set_assignment(self, t: str, p: int, replicas: list[int]) -> None:
        _, stat = self.zk.get(zkl.topic_path(t))
        parts = dict(self.assignments[t])
        parts[p] = list(replicas)
        txn = self._txn()
        txn.set_data(zkl.topic_path(t), zkl.encode(
            {"partitions": {str(q): r for q, r in sorted(parts.items())}}), version=stat.version)
        self._commit(txn)
        self.assignments[t] = parts

    def _on_preferred(self) -> None:
        requests = [(t, int(p)) for t in self._children(zkl.PREFERRED)
                    for p in self._children(f"{zkl.PREFERRED}/{t}") if p.isdigit()]
        if not requests:
            return
        live = set(self.live) - self.shutting_down

        def decide(key: Key, st: zkl.LeaderAndIsr) -> Decision | None:
            ar = self.assignments.get(key[0], {}).get(key[1], [])
            if ar and ar[0] != st.leader and ar[0] in st.isr and ar[0] in live:
                return Decision(ar[0], st.isr)
            return None

        keys = [k for k in requests if k[1] in self.assignments.get(k[0], {})]
        # the same ISR with a new leader still needs a write: force it past the no-op filter
        for key in keys:
            cur = self._read_states([key])[key]
            if cur is None:
                continue
            st, version = cur
            d = decide(key, st)
            if d is None:
                continue
            new = zkl.LeaderAndIsr(d.leader, st.leader_epoch + 1, st.isr, self.epoch)
            with contextlib.suppress(zkl.TransactionFailed):
                written, _ = self._write_states([(key, new, version, False)], "preferred")
                states = {k: (n, v) for k, n, v in written}
                for b in self._replicas(key):
                    self._send_leader_and_isr(b, [key], states)
        for t, p in requests:
            self._drop_admin(zkl.PREFERRED, t, str(p))
        self._send_update_metadata()

    def _on_isr_change(self) -> None:
        """Leaders changed ISRs in ZooKeeper behind the context's back: re-read the partitions
        their notices name and send every broker an UpdateMetadata for those alone."""
        children = self._children(zkl.ISR_CHANGE)
        # each notice names the partitions whose ISR its leader changed (seed 000 G): read
        # those again (they moved behind the context's back), not every partition
        changed: set[Key] = set()
        notices = [self.zk.get_async(f"{zkl.ISR_CHANGE}/{c}") for c in children]
        for a in notices:
            with contextlib.suppress(NoNodeError, ValueError, TypeError):
                data, _ = a.get(timeout=10)
                changed |= {(str(t), int(p)) for t, p in zkl.decode(data)}
        # one delete each (pipelined): a batch would fail whole on one notice already gone
        deletes = [self.zk.delete_async(f"{zkl.ISR_CHANGE}/{c}") for c in children]
        for d in deletes:
            with contextlib.suppress(NoNodeError):
                d.get(timeout=10)
        known = [k for k in sorted(changed) if k[1] in self.assignments.get(k[0], {})]
        if known:
            self._send_update_metadata(self._read_states(known), partial=True)

    def _on_controlled_shutdown(self, arg: tuple[int, int, Future[dict[str, Any]]]) -> None:
        """Move leadership off a broker that is shutting down and take it out of every ISR."""
        broker, broker_epoch, fut = arg
        if broker not in self.live or (broker_epoch >= 0 and self.live[broker][2] != broker_epoch):
            if not fut.done():
                fut.set_result({"error": int(ErrorCode.STALE_BROKER_EPOCH)})
            return
        self.shutting_down.add(broker)
        live = set(self.live)
        excluded = frozenset({broker})

        def decide(key: Key, st: zkl.LeaderAndIsr) -> Decision | None:
            if broker not in st.isr or len(st.isr) <= 1:
                return None
            d = choose_leader(self._replicas(key), st, live, False, exclude=excluded)
            return d if d.leader >= 0 else None

        # from ZooKeeper, not the context: "nothing to do" is a decision no conditional
        # write checks, and a leader may have put the broker back into an ISR meanwhile
        self._elect_partitions(self._all_keys(), decide, "controlled_shutdown", fresh=True)
        states = self._read_states(self._all_keys())
        remaining = [[t, p] for (t, p), cur in states.items() if cur and cur[0].leader == broker]
        # "remaining_isr": partitions whose ISR it is still in with others -- there was no
        # other live ISR member to take over, so it could not leave; for them its stop
        # will be as abrupt as a crash (the broker exits 3, the harness records a crash)
        stuck = [[t, p] for (t, p), cur in states.items()
                 if cur and broker in cur[0].isr and len(cur[0].isr) > 1]
        self._send_update_metadata(states)
        if not fut.done():
            fut.set_result({"remaining_leaderships": remaining, "remaining_isr": stuck})
