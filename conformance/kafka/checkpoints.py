"""The high watermark a restarted broker loaded from its replication-offset checkpoint.

A broker writes each partition's HW to ``replication-offset-checkpoint`` in its log dir
every ``replica.high.watermark.checkpoint.interval.ms`` (5 s) and once more on a clean
shutdown; after a ``kill -9`` the file holds the last periodic write.  The file itself is
overwritten by the next process, so the run's log dir no longer shows what a restart read.
The broker logs it instead, when the controller's first LeaderAndIsr makes it load the
partition (``Partition.createLog``: "Log loaded for partition T-P with initial high
watermark N", the checkpoint's HW as the log took it) -- exact, and the restart's own.
The model's restart chooses that HW (``model.actions.brokers.restarts_args``), so the
adapter gives the ``broker_restart`` event the first such line of each partition after the
registration, as ``checkpointed_hw`` ("T-P" -> N), and the judge keeps only that choice.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class CheckpointLines:
    """The adapter's handling of ``log_loaded`` lines (``conformance.kafka.adapter``)."""

    out: Any
    restarted: dict[int, int]  # broker -> its restart event (index into out.events), this process

    def note_registration(self, broker: int, restart: bool) -> None:
        """The event just added registers ``broker``: a restart's loads are its own; a
        re-registration (the same process) loads nothing anew."""
        if restart:
            self.restarted[broker] = len(self.out.events) - 1
        else:
            self.restarted.pop(broker, None)

    def _log_loaded(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        at = self.restarted.get(broker)
        if at is None:
            return
        when, priority, node, event = self.out.events[at]
        loaded = dict(event.params.get("checkpointed_hw", {}))
        if f["tp"] in loaded:
            return  # a later load of the same process (a re-created topic's): not the checkpoint's
        loaded[f["tp"]] = int(f["hw"])
        self.out.events[at] = (when, priority, node,
                               dataclasses.replace(event, params={**event.params, "checkpointed_hw": loaded}))
