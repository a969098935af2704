"""Controller election (seed 002) and controller failover (seed 000 D).

Every broker watches ``/controller``; when it disappears, each campaigns.  Why the election
and the takeover are as they are:

* **Winning is one multi**: create the ephemeral ``/controller`` and bump
  ``/controller_epoch``.  The epoch is what every later write checks and every control
  request carries, so a deposed controller's writes fail and its requests are refused.
* **The watches of the controller's state machines** (brokers, topics, admin paths, ISR
  notices) belong to one term: when the controller resigns, the next notification finds the
  term moved and the watch removes itself, so a former controller reacts to nothing.
* **Resigning** clears the term's channels, reassignments and cached states: the next term
  starts from ZooKeeper, not from this one's memory.  A controller resigns when its session
  is SUSPENDED already (field notes), and when a fenced write fails.
* **Failover** (on_controller_failover, D 3-9) reads everything, sends LeaderAndISR with INIT
  to every live broker (some commands may have been lost with the previous controller),
  then runs broker change (A), init_leaders for partitions without a leaderAndISR (B),
  reassignments restarted at INIT (F), partitions added and removed (H) and pending
  deletions and preferred elections.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError

from impl.node import zk as zkl
from impl.node.controller.broker_failure import BrokerFailure
from impl.node.controller.context import INIT
from impl.node.controller.partitions import PartitionChanges
from impl.node.controller.preferred_election import PreferredElection
from impl.node.controller.reassignment import Reassignment
from traces import events

log = logging.getLogger(__name__)


def controller_holder(data: bytes) -> int | None:
    """The broker id ``/controller`` names (seed 002), or None if its data is abnormal."""
    try:
        holder = json.loads(data)["brokerid"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    return holder if isinstance(holder, int) and not isinstance(holder, bool) and holder >= 0 else None


def next_controller_epoch(raw: bytes, version: int) -> int:
    """The epoch a controller elected now takes: above every epoch any controller has held.

    Each election writes ``/controller_epoch`` once, conditionally, so the znode's version
    counts the elections: the first creates it as 1 at version 0, and the epoch it holds is
    at most ``version + 1`` -- any other write moves the version without raising the epoch.
    ``version + 2`` is therefore above every epoch ever used, whatever the data says: an
    unreadable value (which stopped elections for good) or a lowered one (which would make
    every broker refuse the new controller as stale) cannot stop the election.  With honest
    writes it equals the stored epoch + 1."""
    try:
        stored = int(raw.decode())
    except (ValueError, UnicodeDecodeError):
        stored = 0
    return max(stored + 1, version + 2)


class Failover(PreferredElection, BrokerFailure, PartitionChanges, Reassignment):
    """Seed 002 election, seed 000 D failover, and the admin-path scan D ends with."""

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
        """kazoo thread: ``/controller`` changed -- campaign if it is gone or abnormal (seed
        002), resign if another broker holds it (or if it no longer says who holds it)."""
        if self._stopped.is_set():
            return False
        holder = None if data is None else controller_holder(data)
        if holder is None:
            if data is not None and self.active:
                self.events.put(("resign", "controller_corrupt"))
            self._post("elect")
        elif self.active and holder != self.id:
            self.events.put(("resign", "controller_moved"))
        return True

    def _elect(self) -> None:
        """Seed 002: campaign for ``/controller``; on winning, take over (seed 000 D).

        "If there is no /controller node in Zookeeper, or the data of this node is abnormal,
        then it will try to create a /controller node": an abnormal znode is deleted -- on
        its version, so only the content read is removed -- and the campaign goes on; left
        in place it would stop every election for good.  An abnormal ``/controller_epoch``
        does not stop one either (:func:`next_controller_epoch`)."""
        if self.active or self._stopped.is_set():
            return
        if self.step_gate.on and self.zk.exists(zkl.CONTROLLER) is None and \
                not self.step_gate.wait_blocking("controller_elect"):
            return  # harness step mode: campaign when the harness says
        try:
            data, cstat = self.zk.get(zkl.CONTROLLER)
        except NoNodeError:
            pass
        else:
            holder = controller_holder(data)
            if holder is None:
                log.warning("broker %d: /controller is abnormal (%r): removing it, electing again",
                            self.id, data[:80])
                try:
                    self.zk.delete(zkl.CONTROLLER, version=cstat.version)
                except BadVersionError:
                    return  # rewritten meanwhile: the watch brings us back for the new content
                except NoNodeError:
                    pass
            else:
                if holder == self.id:
                    # our own znode from a session we no longer act for: clear it, re-run election
                    self.zk.delete(zkl.CONTROLLER)
                return
        me = zkl.encode({"version": 1, "brokerid": self.id,
                         "timestamp": str(int(time.time() * 1000))})
        txn = self.zk.transaction()
        txn.create(zkl.CONTROLLER, me, ephemeral=True)
        try:
            raw, stat = self.zk.get(zkl.CONTROLLER_EPOCH)
            new_epoch = next_controller_epoch(raw, stat.version)
            if not raw.strip().isdigit():  # corrupt: one line; the election writes a number
                log.warning("broker %d: /controller_epoch is corrupt (%r): campaigning with epoch "
                            "%d, above every epoch its version %d allows", self.id, raw[:80],
                            new_epoch, stat.version)
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
        self.broker.on_controller_elected(new_epoch, lambda: self.recorder.emit(
            events.controller_elect(zxid=zxid, controller_epoch=new_epoch, broker=self.id)))
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
        self.shutting_down.clear()  # a broker still stopping asks the next controller again
        self.states.clear()  # the next term starts from ZooKeeper, not from this one's memory
        if was and self.epoch >= 0:
            self.recorder.emit(events.controller_resign(controller_epoch=self.epoch, reason=str(reason)))
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

    def _scan_admin(self) -> None:
        """The admin paths, in seed 000 D's order: pending topic deletions (B), partitions
        added and removed (H), reassignments (F), then preferred-replica elections."""
        for t in self._children(zkl.DELETE_TOPICS):
            self._delete_topic(t)
        self._on_partitions_add()
        self._on_partitions_remove()
        self._on_partitions_reassigned()
        self._on_preferred()
