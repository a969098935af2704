"""Requests from producers and consumers, served by a partition's leader.

* **Consumer reads stop at the HW** (seed 000 question 7): only committed records are
  served.  Just after a leadership change the new leader's HW may be behind the old one's,
  so an offset between HW and LEO gets an empty answer (it is valid, only not committed
  here yet); only an offset beyond the LEO is OFFSET_OUT_OF_RANGE.
* **Produce with ``acks=all``** waits until the HW passes the records, and is refused when
  the ISR is smaller than ``min.insync.replicas`` -- before the append, or after it when the
  ISR shrank while the records waited (the HW = min LEO of the ISR jumps when it shrinks).
  An ISR write in flight is waited out first (see :meth:`Replica.begin_isr_write`), so an
  append cannot slip between the write and the ISR it sets.
* **An idempotent producer's batch is checked by sequence** (:mod:`.producers`): a retry of
  a batch the log holds is answered as the first time, not appended again.
* **A batch is appended in one write, whole or not at all**; if the write fails the log
  directory has failed (:mod:`.log_dir`): the answer is KAFKA_STORAGE_ERROR, never an
  acknowledgement, and the broker halts.
* **Sizes are bounded** (:mod:`impl.node.limits`): a value above ``max.message.bytes`` is
  refused with RECORD_TOO_LARGE before anything is appended, and a consumer fetch carries at
  most the fetch limits' bytes -- but always its first record whole (KIP-74).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from impl.node import limits
from impl.node.broker.core import RequestError, records_to_wire
from impl.node.broker.log_dir import LogDirFailures
from impl.node.broker.producers import IdempotentProducers
from impl.node.log import LogDirFailure
from impl.node.producer_state import NO_PRODUCER, Verdict
from impl.node.replica import LEADER, Replica
from impl.node.wire import ErrorCode
from traces import events


def consumer_fetch_range(offset: int, max_records: int, hw: int, leo: int,
                         log_start: int = 0) -> range | None:
    """Question 7: the offsets a consumer fetch returns -- committed records only, so none
    from the HW to the LEO -- or ``None`` (OFFSET_OUT_OF_RANGE) beyond the LEO or below the
    log start offset (0 unless retention deleted segments)."""
    if offset > leo or offset < max(0, log_start):
        return None
    return range(offset, max(offset, min(hw, leo, offset + max_records)))


def _value(v: Any) -> bytes:
    """A produced value: bytes or text.  Anything else is refused -- ``bytes(n)`` of an
    integer would allocate n zero bytes (a 105-byte request once wrote a 16 MiB record)."""
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, bytes | bytearray):
        return bytes(v)
    raise RequestError(ErrorCode.INVALID_REQUEST, f"a value is bytes or text, not {type(v).__name__}")


class ClientRequests(IdempotentProducers, LogDirFailures):
    """Produce and consumer fetch, on the leader."""

    async def _consumer_fetch(self, r: Replica, offset: int, max_records: int,
                              max_wait: float, max_bytes: int) -> dict[str, Any]:
        """Question 7: empty between HW and LEO; OFFSET_OUT_OF_RANGE only beyond the LEO.
        At most ``max_bytes`` of records (and the broker's fetch limits), but always the
        first one whole (KIP-74, :mod:`impl.node.limits`)."""
        if consumer_fetch_range(offset, max_records, r.hw, r.leo, r.log.log_start_offset) is None:
            raise RequestError(ErrorCode.OFFSET_OUT_OF_RANGE,
                               body={"leo": r.leo, "hw": r.hw, "log_start_offset": r.log.log_start_offset})
        if offset >= r.hw and max_wait:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(r.changed().wait(), max_wait)
        # the HW may have moved, and retention the log start
        window = consumer_fetch_range(offset, max_records, r.hw, r.leo, r.log.log_start_offset)
        records = [] if window is None else r.log.read(window.start, len(window))
        records = limits.within(records, min(max_bytes, self.config.fetch_max_bytes,
                                             self.config.fetch_partition_max_bytes), True)
        if records:
            r.emit(events.consumer_fetch, informational={"fetch_offset": offset, "records": len(records)},
                   post={"hw": r.hw, "leo": r.leo})
        return {"records": records_to_wire(records), "hw": r.hw, "leo": r.leo,
                "leader_epoch": r.leader_epoch, "log_start_offset": r.log.log_start_offset}

    async def on_produce(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Append on the leader; answer at once (acks 0/1) or once committed (acks=all)."""
        acks = int(body.get("acks", -1))
        r = self._leader(str(body["topic"]), int(body["partition"]))
        self.refuse_if_log_dir_failed()
        producer_id = int(body.get("producer_id", NO_PRODUCER))
        base_sequence = int(body.get("base_sequence", -1)) if producer_id != NO_PRODUCER else -1
        values = [_value(v) for v in body["values"]]
        if not values:
            raise RequestError(ErrorCode.INVALID_REQUEST, "no values")
        largest = max(len(v) for v in values)
        if largest > self.config.max_message_bytes:  # refused before anything is appended
            raise RequestError(ErrorCode.RECORD_TOO_LARGE,
                               f"a value of {largest} bytes exceeds max.message.bytes "
                               f"{self.config.max_message_bytes}")
        if r.isr_write is not None:
            await r.isr_settled()  # the ISR is being written: see Replica.begin_isr_write
            r = self._leader(str(body["topic"]), int(body["partition"]))
        if acks == -1 and len(r.isr) < self.config.min_insync_replicas:
            raise RequestError(ErrorCode.NOT_ENOUGH_REPLICAS,
                               f"ISR {sorted(r.isr)} smaller than min.insync.replicas "
                               f"{self.config.min_insync_replicas}")
        epoch = r.leader_epoch
        answer: dict[str, Any] = {}
        if producer_id != NO_PRODUCER:  # KIP-98 (.producers): no await from here to the append
            check = self.sequence_check(r, producer_id, base_sequence, len(values))
            if check.verdict is Verdict.DUPLICATE:
                assert check.base_offset is not None
                base, last_offset = check.base_offset, check.base_offset + len(values) - 1
                first = r.log.read(base, 1)  # none if retention deleted it: the epoch is unknown
                answer = {"base_offset": base, "leader_epoch": first[0].leader_epoch if first else -1,
                          "duplicate": True}
            elif check.skip:  # the batch's head is here already: append its tail
                values, base_sequence = values[check.skip:], base_sequence + check.skip
                answer = {"base_offset": -1 if check.base_offset is None else check.base_offset,
                          "leader_epoch": epoch}
        if "duplicate" not in answer:
            try:
                appended = r.append_batch(values, producer_id, base_sequence)
            except LogDirFailure as exc:
                raise self.storage_failed(exc) from None
            r.maybe_advance_hw()
            r.notify()
            last_offset = appended[-1].offset
            answer = answer or {"base_offset": appended[0].offset, "leader_epoch": epoch}
        if acks == 0:
            return None
        if acks == 1:
            return answer
        deadline = time.monotonic() + max(0.0, int(body.get("timeout_ms", 5000)) / 1000)
        while True:
            if r.role != LEADER or r.leader_epoch != epoch:
                raise RequestError(ErrorCode.NOT_LEADER, "leadership lost before commit",
                                   body={"leader": r.leader})
            if r.hw > last_offset:
                if len(r.isr) < self.config.min_insync_replicas:
                    # committed by a shrunken ISR (the HW = min LEO of the ISR jumped when it
                    # shrank): acks=all promises min.insync.replicas copies -- Kafka answers so
                    raise RequestError(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                       f"committed with ISR {sorted(r.isr)}, fewer than "
                                       f"min.insync.replicas {self.config.min_insync_replicas}")
                return answer
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestError(ErrorCode.REQUEST_TIMED_OUT, "not committed in time")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(r.changed().wait(), remaining)
