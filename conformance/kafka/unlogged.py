"""Records a replica holds that no surviving line shows arriving (a killed leader's last answers),
and records no replica holds that a line showed leaving (a killed follower's last answer).

The leader's request log writes a Fetch when its answer is sent -- a kill -9 can cut off the
lines of the last answers (and of the produce of the last record, whose client never got
its acknowledgement and sends it again to the next leader).  The followers took those
answers in: applying the next LeaderAndIsr, each logs where its log ends (``Leader T-P ...
starts at leader epoch E from offset N``, ``Follower T-P starts at ... from offset N``),
past the log the adapter rebuilt from the lines.  The records between came from the killed
leader, so the round trip that carried them is derived, just before the kill: the leader's
append when its own rebuilt log lacks them too (each value by its offset, ``produced.jsonl``
-- the read-back saw it there, in the killed leader's epoch), its answer to the follower's
fetch at the follower's offset (the HW as the leader had it, its followers' known fetch
offsets), and the follower's receipt.  The client's retry then meets the record already
there, a duplicate (``adapter._produce``).

The other way round: the leader's request log writes an answer as it is sent, and the adapter
takes the follower's receipt right after it -- but a follower killed (kill -9) before its
fetcher appended the records never took them in: restarted, its line says its log ends
before them.  The receipts past that end, its last steps before the kill, did not happen:
the answer was in flight when the kill took the process (the model's ``broker_crash`` drops
it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from traces import events

BEFORE_KILL = 1e-4
"""Seconds before the kill at which the derived round trips go (the last line the killed leader
wrote is earlier); their steps one microsecond apart, and in the order derived where they meet."""


class UnloggedReceipts:
    """The adapter's derivation of a killed leader's unlogged answers (``conformance.kafka.adapter``)."""

    out: Any
    placed: Any
    down: dict[int, list[tuple[float, float]]]
    derived: dict[float, int]  # a kill's time -> the steps derived before it so far

    if TYPE_CHECKING:  # the adapter's own (``conformance.kafka.adapter._Adapter``)
        def replica(self, topic: str, partition: int, broker: int) -> Any: ...
        def _hw_as_read(self, r: Any, leader: int, ts: float) -> int: ...

    def killed_between(self, broker: int, since: float, ts: float) -> float | None:
        """When ``broker``'s process was last killed or stopped after ``since`` and before ``ts``."""
        return max((start for start, _ in self.down.get(broker, ()) if since <= start <= ts), default=None)

    def receipts_cut_by_kill(self, broker: int, ts: float, topic: str, p: int, leo: int) -> None:
        """``broker``'s replica of ``topic``-``p`` says at ``ts`` that its log ends at ``leo``,
        before the log its derived receipts rebuilt: those receipts, its last steps of the
        partition before its process was killed, never happened (``out.dropped``)."""
        r = self.replica(topic, p, broker)
        killed = self.killed_between(broker, r.became_at, ts)
        if leo >= len(r.log) or killed is None:
            return
        for i in reversed(range(len(self.out.events))):
            when, _, node, event = self.out.events[i]
            if node != broker or when >= killed or i in self.out.dropped or (event.topic, event.partition) != (topic, p):
                continue
            if event.kind != "receive_fetch" or event.post["leo"] <= leo:
                return
            self.out.dropped.add(i)

    def receipts_before_kill(self, broker: int, ts: float, topic: str, p: int, leo: int) -> None:
        """``broker``'s replica of ``topic``-``p`` says at ``ts`` that its log ends at ``leo``:
        the records past its rebuilt log came from its leader, killed before ``ts``, in
        answers no line shows -- derived before the kill.  Nothing when its leader was not
        killed, or the killed leader's epoch cannot place the values."""
        r = self.replica(topic, p, broker)
        old = r.leader
        if leo <= len(r.log) or old < 0 or old == broker or self.placed is None:
            return
        lr = self.replica(topic, p, old)
        killed = self.killed_between(old, lr.became_at, ts)
        if killed is None or lr.leader != old or lr.leader_epoch != r.leader_epoch:
            return
        offset = len(r.log)
        derived = []  # (node, event) in order
        for o in range(len(lr.log), leo):
            value = self.placed.value(topic, p, o, lr.leader_epoch)
            lr.log.append([o, lr.leader_epoch, value])
            lr.appended_at[o] = killed - BEFORE_KILL
            derived.append((old, events.produce(topic=topic, partition=p, offset=o, value=value,
                                                  leader_epoch=lr.leader_epoch,
                                                  post={"hw": min(self._hw_as_read(lr, old, killed), o), "leo": len(lr.log)})))
        lr.fetch_offset[broker] = offset
        hw = self._hw_as_read(lr, old, killed)
        records = [list(x) for x in lr.log[offset:leo]]
        derived.append((old, events.handle_fetch(
            topic=topic, partition=p, follower=broker, fetch_offset=offset, leader_epoch=lr.leader_epoch,
            records=records, leader_hw=hw, error=None, post={"hw": hw, "leo": len(lr.log), "isr": list(lr.isr)})))
        r.log.extend(records)
        r.hw = min(hw, len(r.log))
        derived.append((broker, events.receive_fetch(
            topic=topic, partition=p, leader=old, fetch_offset=offset, leader_epoch=r.leader_epoch,
            records=records, leader_hw=hw, error=None, post={"hw": r.hw, "leo": len(r.log)})))
        first = self.derived.get(killed, 0)
        for i, (node, event) in enumerate(derived, start=first):
            self.out.add(killed - BEFORE_KILL + i * 1e-6, node, event)
        self.derived[killed] = first + len(derived)
