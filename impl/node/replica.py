"""One partition's replica on one broker: roles, high watermark, ISR bookkeeping (seed 000 C, G).

This is seed 000's ``Replica``/``Partition`` pair seen from the broker that holds the replica:
its log, its role (``leader``, ``follower`` or ``none`` -- stopped, or stepped down after a
failed ISR update), the leader epoch and ISR it was last told about, and, when leader, the
LEO it knows for each follower.  Every state change is recorded as a trace event named after
the model action.  The broker's event loop owns instances; nothing here blocks on the network.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from impl.node.log import PartitionLog, Record
from impl.node.producer_state import NO_PRODUCER
from impl.node.tracing import value_digest
from impl.node.truncation import hw_truncation_point
from traces import events
from traces.events import Event
from traces.recorder import TraceRecorder

LEADER, FOLLOWER, NONE = "leader", "follower", "none"


@dataclass
class PartitionState:
    """A LeaderAndISR entry as the controller sends it (seed 000 ``LeaderAndISR``)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int]
    zk_version: int
    controller_epoch: int
    topic_id: int = 0  # the topic znode's czxid (impl.node.topic_identity); 0: not sent

    @staticmethod
    def from_wire(d: dict[str, Any], controller_epoch: int) -> PartitionState:
        return PartitionState(str(d["topic"]), int(d["partition"]), int(d["leader"]),
                              int(d["leader_epoch"]), sorted(int(b) for b in d["isr"]),
                              [int(b) for b in d["replicas"]], int(d["zk_version"]),
                              controller_epoch, int(d.get("topic_id", 0)))


@dataclass
class Replica:
    topic: str
    partition: int
    broker_id: int
    log: PartitionLog
    recorder: TraceRecorder
    role: str = NONE
    leader: int = -1
    leader_epoch: int = -1
    isr: set[int] = field(default_factory=set)
    replicas: list[int] = field(default_factory=list)
    zk_version: int = -1
    controller_epoch: int = -1
    # leader-side view of followers (seed 000 G): LEO from their last fetch, caught-up times
    follower_leo: dict[int, int] = field(default_factory=dict)
    last_caught_up: dict[int, float] = field(default_factory=dict)
    last_fetch: dict[int, tuple[float, int]] = field(default_factory=dict)  # (time, leader LEO)
    isr_update_in_flight: bool = False
    # set while an ISR change is being written to ZooKeeper; fetches and produces wait for
    # it (``isr_settled``), see ``begin_isr_write``
    isr_write: asyncio.Event | None = None
    # follower side
    needs_epoch_lookup: bool = False
    last_sent_fetch: tuple[int, int] | None = None  # (offset, hw) of the last send_fetch event
    on_change: Callable[[], None] | None = None  # the broker's "some partition changed" signal
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    # -- observation ----------------------------------------------------------------------
    @property
    def hw(self) -> int:
        return self.log.hw

    @property
    def leo(self) -> int:
        return self.log.leo

    def post(self) -> dict[str, Any]:
        return {"role": self.role, "leader": self.leader, "leader_epoch": self.leader_epoch,
                "hw": self.hw, "leo": self.leo, "log_end_epoch": self.log_end_epoch()}

    def log_end_epoch(self) -> int | None:
        """Epoch of the last record, None for an empty log (trace schema)."""
        return self.log.log_end_epoch() if self.log.leo > self.log.log_start_offset else None

    def emit(self, make: Callable[..., Event], post: dict[str, Any] | None = None, **fields: Any) -> None:
        """Record a step of this replica: ``make`` is the kind's constructor
        (:mod:`traces.events`), ``fields`` its parameters; ``post`` defaults to :meth:`post`."""
        self.recorder.emit(make(topic=self.topic, partition=self.partition,
                                post=self.post() if post is None else post, **fields))

    def changed(self) -> asyncio.Event:
        """The event set at the next append, HW change or role change."""
        return self._changed

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
        if self.on_change is not None:
            self.on_change()

    # -- seed 000 C: becomeLeader / becomeFollower ----------------------------------------
    def stop_fetcher(self) -> None:
        """Seed 000 C "stop the ReplicaFetcherThread to the old leader": the broker's fetcher
        for a leader only serves replicas whose role/leader/epoch still match, and discards a
        response for a replica whose epoch changed while the request was in flight."""
        self.last_sent_fetch = None

    def _take(self, st: PartitionState) -> None:
        self.leader, self.leader_epoch = st.leader, st.leader_epoch
        self.isr = set(st.isr)
        self.replicas = list(st.replicas)
        self.zk_version, self.controller_epoch = st.zk_version, st.controller_epoch

    def _control_params(self, st: PartitionState) -> dict[str, Any]:
        return {"leader": st.leader, "leader_epoch": st.leader_epoch, "isr": sorted(st.isr),
                "zk_version": st.zk_version, "controller_epoch": st.controller_epoch}

    def become_leader(self, st: PartitionState, record: bool = True) -> None:
        self.stop_fetcher()  # no more messages from the old leader can be appended
        self._take(st)
        self.role = LEADER
        self.log.assign_epoch(st.leader_epoch)  # KIP-101: where this epoch starts
        now = time.monotonic()
        self.follower_leo = {}
        self.last_fetch = {}
        self.last_caught_up = {r: now for r in self.isr if r != self.broker_id}
        self.isr_update_in_flight = False
        self.needs_epoch_lookup = False
        self.maybe_advance_hw()  # part of the step: a leader alone in its ISR commits at once
        if record:  # at startup (seed 000 E) the step is part of broker_restart
            self.emit(events.become_leader, **self._control_params(st))
        self.notify()

    def become_follower(self, st: PartitionState, rule: str, record: bool = True) -> None:
        self.stop_fetcher()
        self._take(st)
        self.role = FOLLOWER
        self.follower_leo, self.last_caught_up, self.last_fetch = {}, {}, {}
        params = self._control_params(st)
        if rule == "hw":
            truncated_to = hw_truncation_point(self.hw, self.leo)
            self.log.truncate_to(truncated_to)
            params["truncated_to"] = truncated_to
            self.needs_epoch_lookup = False
        else:
            params["truncated_to"] = None  # decided by the epoch lookup at the leader
            self.needs_epoch_lookup = True
        if record:  # at startup (seed 000 E) the step is part of broker_restart
            self.emit(events.become_follower, **params)
        self.notify()

    def step_down(self) -> None:
        """A failed conditional ISR update: this broker is no longer the leader (seed 000 Q3)."""
        self.role = NONE
        self.notify()

    def stop(self) -> None:
        self.stop_fetcher()
        self.role = NONE
        self.notify()

    # -- seed 000 G: the leader ---------------------------------------------------------------
    def append(self, value: bytes) -> Record:
        return self.append_batch([value])[0]

    def append_batch(self, values: list[bytes], producer_id: int = NO_PRODUCER,
                     base_sequence: int = -1) -> list[Record]:
        """Append ``values`` in one write -- all of them, or none and
        :class:`impl.node.log.LogDirFailure` -- recording one ``produce`` per record (the
        model's produce appends one).  The trace names a value by its digest
        (:func:`impl.node.tracing.value_digest`), never by its bytes.

        Advancing the HW is part of each record's step, as in the model's ``produce``: a
        leader alone in its ISR commits the record at once, so the HW each event records is
        the one after that record (recording the HW from before the batch and advancing it
        afterwards was a produce the model does not allow -- found by guided fuzzing)."""
        recs = self.log.append_batch(self.leader_epoch, values, producer_id, base_sequence)
        hws = []
        hw = self.hw
        for rec in recs:
            if self.role == LEADER:
                hw = advance_high_watermark(self.broker_id, rec.offset + 1, hw, self.isr, self.follower_leo)
            hws.append(hw)
        self.maybe_advance_hw()
        for rec, hw in zip(recs, hws, strict=True):
            self.emit(events.produce, offset=rec.offset, value=value_digest(rec.value),
                      leader_epoch=self.leader_epoch, post={"hw": hw, "leo": rec.offset + 1})
        return recs

    def begin_isr_write(self) -> asyncio.Event:
        """An ISR change is about to be written to ZooKeeper.  Until ``end_isr_write`` the
        partition takes no produce and no follower fetch (``isr_settled``): Kafka's leader
        holds the partition's ISR lock across the conditional write, which makes "check the
        follower, write ZK, adopt the new ISR" one step -- the model's ``expand_isr`` /
        ``shrink_isr``.  Were the HW to move meanwhile, it could pass the LEO of a follower
        ZooKeeper already lists in the ISR (found by ``epochal chaos``, seed 5), or, if the
        joiner were counted early, differ from the model's HW = min LEO of the ISR."""
        self.isr_update_in_flight = True
        self.isr_write = asyncio.Event()
        return self.isr_write

    def end_isr_write(self, write: asyncio.Event) -> None:
        """The write ``begin_isr_write`` returned is done (written, refused or failed)."""
        write.set()
        if self.isr_write is write:
            self.isr_write = None
            self.isr_update_in_flight = False

    async def isr_settled(self) -> None:
        """Wait until no ISR write of this partition is in flight."""
        while self.isr_write is not None:
            await self.isr_write.wait()  # a later write may have begun meanwhile: loop

    def maybe_advance_hw(self) -> bool:
        """Leader HW = min LEO over the ISR, never decreasing (:func:`advance_high_watermark`)."""
        if self.role != LEADER:
            return False
        new_hw = advance_high_watermark(self.broker_id, self.leo, self.hw, self.isr, self.follower_leo)
        if new_hw > self.hw:
            self.log.set_hw(new_hw)
            return True
        return False

    def record_follower_fetch(self, follower: int, fetch_offset: int, now: float) -> bool:
        """The follower's LEO is its fetch offset; returns whether it changed."""
        previous = self.follower_leo.get(follower)
        self.follower_leo[follower] = fetch_offset
        last = self.last_fetch.get(follower)
        if fetch_offset >= self.leo:
            self.last_caught_up[follower] = now
        elif last is not None and fetch_offset >= last[1]:
            self.last_caught_up[follower] = last[0]
        self.last_fetch[follower] = (now, self.leo)
        return previous != fetch_offset

    def out_of_sync_followers(self, now: float, lag_time_s: float, lag_messages: int) -> set[int]:
        """Seed 000 G maybe_change_ISR, shrink half: too far behind, or not caught up for
        longer than the lag time.

        A follower whose LEO equals the leader's is never out of sync, however long since it
        last fetched (Kafka's ``isFollowerOutOfSync``: ``logEndOffset != leaderEndOffset &&
        now - lastCaughtUpTime > maxLag``).  Dropping it would shrink the ISR of an idle
        partition for nothing, and the model's ``shrink_isr`` never does.  A follower that has
        not fetched in this term has no known LEO and is not caught up."""
        return {r for r in self.isr if r != self.broker_id
                and follower_out_of_sync(self.follower_leo.get(r), self.leo,
                                         now - self.last_caught_up.get(r, 0.0), lag_time_s, lag_messages)}

    def can_join_isr(self, follower: int, kip320: bool) -> bool:
        """Seed 000 G, expand half: caught up to the HW (and, under KIP-320, to this epoch)."""
        return may_join_isr(self.follower_leo.get(follower), self.hw,
                            self.log.epochs.start_offset(self.leader_epoch),
                            follower in self.isr, follower in self.replicas, kip320)


# -- the leader's decisions, pure (held to the model by the rule-level vectors) ---------------

def advance_high_watermark(leader: int, leo: int, hw: int, isr: Iterable[int],
                           follower_leo: Mapping[int, int]) -> int:
    """Seed 000 G: the leader's HW is the minimum LEO over the ISR, and never moves backwards.
    A follower in the ISR with no LEO known in this term (not in ``follower_leo``: it has not
    fetched from this leader yet) holds the HW where it is."""
    leos = [leo]
    for r in isr:
        if r != leader:
            if r not in follower_leo:
                return hw
            leos.append(follower_leo[r])
    return max(hw, min(leos))


def follower_out_of_sync(follower_leo: int | None, leader_leo: int, since_caught_up_s: float,
                         lag_time_s: float, lag_messages: int) -> bool:
    """Seed 000 G, the shrink half of maybe_change_ISR: a follower not at the leader's LEO
    (``None``: not fetched in this term) is out of sync once it has not caught up for longer
    than the lag time, or is more than ``lag_messages`` behind.  One at the LEO never is."""
    if follower_leo is not None and follower_leo >= leader_leo:
        return False
    behind = leader_leo - (leader_leo if follower_leo is None else follower_leo)
    return since_caught_up_s > lag_time_s or behind > lag_messages


def may_join_isr(follower_leo: int | None, hw: int, epoch_start: int | None, in_isr: bool,
                 assigned: bool, kip320: bool) -> bool:
    """Seed 000 G, the expand half: an assigned replica not in the ISR whose LEO has reached
    the HW and, with KIP-320, the start of the leader's epoch (``epoch_start``; ``None``: the
    epoch cache does not know it).  A follower with no LEO known in this term may not."""
    if in_isr or not assigned or follower_leo is None or follower_leo < hw:
        return False
    return not (kip320 and epoch_start is not None and follower_leo < epoch_start)
