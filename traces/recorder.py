"""Write trace events as JSON Lines, one file per node, with a Lamport clock.

The recorder is deliberately tiny so a port in any language can match it: every event is
one JSON object on one line, flushed as it is written, so a ``kill -9`` loses at most the
line being written (the reader quarantines a torn last line).

A recorder may **rotate** its file (``max_file_bytes``): once the file reaches the size it is
renamed ``<name>.<n>.jsonl`` (n = 1, 2, ...; the events keep their run, node and sequence
numbers, so a reader merges the pieces back in order) and a fresh file is started; at most
``keep_files`` files per node are kept, the oldest deleted.  That caps what one node's trace
can take from the disk -- at the price, once the cap is reached, of the run's beginning,
without which the run can no longer be judged from its start.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traces import SCHEMA_ID
from traces.events import Event


def _private(path: str, flags: int) -> int:
    """A trace holds the cluster's records and keys: readable by its owner only (0600)."""
    return os.open(path, flags, 0o600)


class TraceRecorder:
    """Records the events of one node (a broker, or -1 for the harness) of one run."""

    def __init__(self, path: str | os.PathLike[str], run_id: str, node: int,
                 max_file_bytes: int | None = None, keep_files: int = 8) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.run_id = run_id
        self.node = node
        self._seq = 0
        self._clock = 0
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8", opener=_private)
        self.max_file_bytes = max_file_bytes if max_file_bytes and max_file_bytes > 0 else None
        self.keep_files = max(1, keep_files)
        self._size = self.path.stat().st_size
        # Optional: a clock this node must observe before each event it records (returns
        # None when there is nothing new).  A broker follows the fault injector's clock so
        # that nothing it records orders before a fault recorded earlier (impl.node.tracing).
        self.observe_first: Callable[[], int | None] | None = None

    # -- Lamport clock: carried on every RPC --------------------------------------------
    def tick(self) -> int:
        """Advance the clock for a send; put the returned value on the outgoing message."""
        with self._lock:
            self._clock += 1
            return self._clock

    def observe(self, remote_clock: int) -> None:
        """Merge the clock carried by an incoming message (max + 1 happens at emit)."""
        with self._lock:
            self._clock = max(self._clock, int(remote_clock))

    def emit(self, step: Event) -> dict[str, Any]:
        """Append one event, made by a constructor of :mod:`traces.events` (which checked it
        against the schema); returns it."""
        if type(step) is not Event:
            raise TypeError(f"a recorder writes traces.events.Event, not {type(step).__name__}")
        with self._lock:
            if self.observe_first is not None:
                seen = self.observe_first()
                if seen is not None and seen > self._clock:
                    self._clock = seen
            self._clock += 1
            event = {
                "schema": SCHEMA_ID,
                "run": self.run_id,
                "node": self.node,
                "seq": self._seq,
                "clock": self._clock,
                "zxid": step.zxid,
                "kind": step.kind,
                "topic": step.topic,
                "partition": step.partition,
                "params": dict(step.params),
                "post": dict(step.post or {}),
                "ts": time.time(),
            }
            self._seq += 1
            line = json.dumps(event, separators=(",", ":"), sort_keys=True) + "\n"
            self._file.write(line)
            self._file.flush()
            self._size += len(line.encode())
            if self.max_file_bytes is not None and self._size >= self.max_file_bytes:
                self._rotate()
            return event

    def _rotate(self) -> None:
        """Rename the full file to the next ``<name>.<n>.jsonl``, drop the oldest beyond
        ``keep_files``, start an empty file (under the lock)."""
        self._file.close()
        pieces = rotated_files(self.path)
        n = int(pieces[-1].name[len(self.path.stem) + 1:].split(".", 1)[0]) + 1 if pieces else 1
        os.replace(self.path, self.path.with_name(f"{self.path.stem}.{n:06d}{self.path.suffix}"))
        pieces = rotated_files(self.path)
        for old in pieces[:max(0, len(pieces) - (self.keep_files - 1))]:  # the active one counts
            old.unlink(missing_ok=True)
        self._file = open(self.path, "a", encoding="utf-8", opener=_private)
        self._size = 0

    def close(self) -> None:
        with self._lock:
            self._file.close()


def rotated_files(path: str | os.PathLike[str]) -> list[Path]:
    """The rotated pieces of a trace file ``<name>.jsonl``, oldest first: ``<name>.<n>.jsonl``."""
    p = Path(path)
    out = []
    for f in p.parent.glob(f"{p.stem}.*{p.suffix}"):
        middle = f.name[len(p.stem) + 1:-len(p.suffix)]
        if middle.isdigit():
            out.append((int(middle), f))
    return [f for _, f in sorted(out)]
