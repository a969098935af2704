"""The idempotent producer at the broker (KIP-98): producer ids, and a batch checked by sequence.

* **InitProducerId** may go to any broker.  Ids come from blocks of
  :data:`impl.node.producer_state.PRODUCER_ID_BLOCK` that the broker reserves by a
  conditional write of ``/latest_producer_id_block`` (Kafka's znode and rule): two brokers
  never reserve the same block, so no two producers share an id.
* **A produce with a producer id** is checked against the leader's log
  (:meth:`impl.node.producer_state.ProducerStateTable.check`) before anything is appended:
  the next batch is appended, a retry of one already in the log is answered as the first
  time (once committed, for acks=all) without appending, and a batch after a gap is refused.
  The check and the append are one step on the event loop (no ``await`` between them), so two
  retries of one batch cannot both pass.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from impl.node.broker.core import BrokerCore, RequestError
from impl.node.producer_state import PRODUCER_ID_BLOCK_PATH, Check, Verdict, next_block
from impl.node.replica import Replica
from impl.node.wire import ErrorCode


class IdempotentProducers(BrokerCore):
    """InitProducerId, and the sequence check of a produce."""

    _pid_next = 0
    _pid_end = -1  # the reserved block is [_pid_next, _pid_end]; empty at start
    _pid_lock: asyncio.Lock | None = None

    async def on_init_producer_id(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._pid_lock is None:
            self._pid_lock = asyncio.Lock()
        async with self._pid_lock:
            if self._pid_next > self._pid_end:
                self._pid_next, self._pid_end = await self._zk(self._reserve_block)
            pid = self._pid_next
            self._pid_next += 1
        return {"producer_id": pid, "producer_epoch": 0}

    def _reserve_block(self) -> tuple[int, int]:
        """The next block of producer ids, by a conditional write (blocking: off the loop)."""
        for _ in range(50):
            try:
                data, stat = self.zk.get(PRODUCER_ID_BLOCK_PATH)
            except NoNodeError:
                data, stat = None, None
            try:
                start, end, new = next_block(data, self.id)
            except ValueError as exc:
                raise RequestError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from None
            try:
                if stat is None:
                    self.zk.create(PRODUCER_ID_BLOCK_PATH, new)
                else:
                    self.zk.set(PRODUCER_ID_BLOCK_PATH, new, version=stat.version)
                return start, end
            except (NodeExistsError, BadVersionError):
                continue  # another broker reserved one meanwhile: read again
        raise RequestError(ErrorCode.BROKER_NOT_AVAILABLE, "could not reserve producer ids")

    @staticmethod
    def sequence_check(r: Replica, producer_id: int, base_sequence: int, count: int) -> Check:
        """The leader's verdict on an idempotent batch; OUT_OF_ORDER_SEQUENCE_NUMBER and an
        unlocatable duplicate (DUPLICATE_SEQUENCE_NUMBER) are raised."""
        check = r.log.producers.check(producer_id, base_sequence, count)
        if check.verdict is Verdict.OUT_OF_ORDER:
            raise RequestError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                               f"producer {producer_id}: a batch from sequence {base_sequence}, but "
                               f"the log's last is {check.last_sequence}")
        if check.verdict is Verdict.DUPLICATE and check.base_offset is None:
            raise RequestError(ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
                               f"producer {producer_id}: sequence {base_sequence} was appended "
                               f"before (the log's last is {check.last_sequence})")
        return check
