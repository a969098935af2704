"""The idempotent producer (Kafka's KIP-98, without transactions): who wrote what, per partition.

A producer asks any broker for a **producer id** (InitProducerId) and numbers the records it
sends to each partition 0, 1, 2, ... (its **sequence**).  A retried batch carries the numbers
it had the first time, so the partition's leader can tell a retry of a batch it already
appended from a new one:

* ``base_sequence == last + 1``: the next batch -- append it;
* the whole batch at or below ``last``: a duplicate -- append nothing and answer with the
  offset the batch got the first time (if it is still among the runs kept here; otherwise
  DUPLICATE_SEQUENCE_NUMBER, which the client takes as delivered, as Kafka's does);
* a batch that starts at or below ``last`` and ends above it: its head is here already (a
  follower fetched part of the batch before it became leader: fetches are cut by bytes,
  not at batch ends) -- append only the tail, from ``last + 1``.  A sequence number names
  one record of one producer, so the head in the log *is* the batch's head;
* ``base_sequence > last + 1``: OUT_OF_ORDER_SEQUENCE_NUMBER -- a batch between was never
  appended here, and appending this one would reorder the stream.

An unknown producer id starts at sequence 0.

**The state survives a leader change because it is rebuilt from the log**: every record
carries its producer id and sequence (:mod:`impl.node.log`, format version 2), followers copy
them with the records, and a log's table is derived from its records on open, on append and
on truncation.  A new leader therefore knows every batch its log holds -- in particular every
committed one, since the new leader holds every committed record -- and refuses a retry of a
batch the old leader had committed as a duplicate.  A batch the old leader appended but never
committed may be lost with the old leader's tail (truncation); its retry is then *not* a
duplicate on the new leader, and is appended there, once.

The table is pure (no I/O); :class:`PartitionLog` owns one.  Producer ids come from blocks
reserved in ZooKeeper (:func:`next_block`, Kafka's ``/latest_producer_id_block``).
"""

from __future__ import annotations

import enum
import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

NO_PRODUCER = -1
RUNS_KEPT = 5
"""Runs of consecutive sequence numbers remembered per producer (Kafka keeps the last five
batches, its limit on a producer's requests in flight)."""
PRODUCER_ID_BLOCK = 1000
"""Producer ids a broker reserves from ZooKeeper at a time (Kafka's block size)."""
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"


class _HasSeq(Protocol):
    producer_id: int
    sequence: int
    offset: int


class Verdict(enum.Enum):
    APPEND = "append"
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out_of_order"


@dataclass(frozen=True)
class Check:
    """What the leader does with a batch; ``base_offset`` is a duplicate's first offset
    (None: the duplicate is older than the runs kept)."""

    verdict: Verdict
    base_offset: int | None = None
    last_sequence: int = -1  # the producer's last sequence in this log (-1: none)
    skip: int = 0  # APPEND: how many of the batch's first records the log holds already


@dataclass
class _Run:
    """Records whose sequences and offsets both go up by one: ``first_seq`` at ``first_offset``."""

    first_seq: int
    first_offset: int
    last_seq: int


@dataclass
class ProducerEntry:
    last_seq: int = -1
    runs: deque[_Run] = field(default_factory=lambda: deque(maxlen=RUNS_KEPT))

    def offset_of(self, seq: int) -> int | None:
        for run in self.runs:
            if run.first_seq <= seq <= run.last_seq:
                return run.first_offset + (seq - run.first_seq)
        return None


class ProducerStateTable:
    """One partition log's producers: the last sequence each appended, and where."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def record(self, producer_id: int, sequence: int, offset: int) -> None:
        """A record of ``producer_id`` with ``sequence`` is at ``offset`` (appended or read)."""
        if producer_id == NO_PRODUCER or sequence < 0:
            return
        e = self.entries.setdefault(producer_id, ProducerEntry())
        last = e.runs[-1] if e.runs else None
        if last is not None and sequence == last.last_seq + 1 and \
                offset == last.first_offset + (last.last_seq - last.first_seq) + 1:
            last.last_seq = sequence
        else:
            e.runs.append(_Run(sequence, offset, sequence))
        e.last_seq = max(e.last_seq, sequence)

    def rebuild(self, records: Iterable[_HasSeq]) -> None:
        """The table of a log holding exactly ``records`` (after a truncation)."""
        self.entries = {}
        for r in records:
            self.record(r.producer_id, r.sequence, r.offset)

    def check(self, producer_id: int, base_sequence: int, count: int) -> Check:
        """Whether a batch of ``count`` records numbered from ``base_sequence`` is new."""
        e = self.entries.get(producer_id)
        last = e.last_seq if e is not None else -1
        return classify(last, base_sequence, count,
                        e.offset_of(base_sequence) if e is not None else None)

    def last_sequence(self, producer_id: int) -> int:
        e = self.entries.get(producer_id)
        return e.last_seq if e is not None else -1


def classify(last_seq: int, base_sequence: int, count: int, known_offset: int | None) -> Check:
    """The rule, pure: next batch, duplicate, or out of order (see the module docstring)."""
    if base_sequence < 0 or base_sequence > last_seq + 1:
        return Check(Verdict.OUT_OF_ORDER, None, last_seq)
    if base_sequence + count - 1 <= last_seq:
        return Check(Verdict.DUPLICATE, known_offset, last_seq)
    return Check(Verdict.APPEND, known_offset, last_seq, last_seq + 1 - base_sequence)


# -- producer ids: blocks reserved in ZooKeeper ------------------------------------------------

def next_block(current: bytes | None, broker: int) -> tuple[int, int, bytes]:
    """The block after the one ``current`` (the znode's data, None if absent) records:
    (first id, last id, the znode's new data).  Written with a conditional set, so two
    brokers never reserve the same block."""
    end = -1
    if current:
        try:
            end = int(json.loads(current.decode())["block_end"])
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise ValueError(f"{PRODUCER_ID_BLOCK_PATH} is not a producer id block: "
                             f"{current[:80]!r}") from None
    start = end + 1
    stop = start + PRODUCER_ID_BLOCK - 1
    data: dict[str, Any] = {"version": 1, "broker": broker, "block_start": start, "block_end": stop}
    return start, stop, json.dumps(data, sort_keys=True).encode()
