"""Opening trace recorders for brokers, the controller and the fault-injecting harness.

Every node of a run writes ``<data-dir>/traces/<node>.jsonl`` through
:class:`traces.recorder.TraceRecorder` (broker N writes ``broker-N.jsonl``; the harness,
node -1, ``harness.jsonl``).  A restarted broker -- or a second ``epochal broker kill`` --
appends to the same file, so the per-(run, node) sequence number and the Lamport clock
continue from the last complete line of the same run instead of restarting at zero.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

from impl.node.layout import HARNESS_NODE, DataDir
from traces.recorder import TraceRecorder, rotated_files


def value_digest(value: bytes) -> str:
    """What a trace records of a record's value: its CRC-32 and length (``crc32:1a2b3c4d/5``),
    never its bytes.  The judge compares values only for equality (which produced record a
    fetch carried), and a trace that copied payloads grew by gigabytes in minutes when a
    leader recorded multi-MiB records on every failed fetch."""
    return f"crc32:{zlib.crc32(value):08x}/{len(value)}"


def records_digest(records: list) -> list[list]:
    """``[offset, leader_epoch, digest]`` per record, as fetch events record them."""
    return [[r.offset, r.leader_epoch, value_digest(r.value)] for r in records]


def trace_path(data_dir: str | os.PathLike[str], node: int) -> Path:
    return DataDir.of(data_dir).trace(node)


def _last_event(path: Path) -> dict | None:
    """The last complete event of a node's trace: its file, or if that is empty (just
    rotated), the newest rotated piece."""
    if not path.exists() or not path.stat().st_size:
        pieces = rotated_files(path)
        return _last_line_event(pieces[-1]) if pieces else None
    return _last_line_event(path)


def _last_line_event(path: Path) -> dict | None:
    if not path.exists():
        return None
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 65536))
        lines = f.read().splitlines()
    for line in reversed(lines):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def open_recorder(data_dir: str | os.PathLike[str], run_id: str, node: int,
                  max_file_bytes: int | None = None, keep_files: int = 8) -> TraceRecorder:
    """The node's recorder; with ``max_file_bytes``, its file rotates at that size and at
    most ``keep_files`` files are kept (:class:`traces.recorder.TraceRecorder`)."""
    path = trace_path(data_dir, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    last = _last_event(path)
    if path.exists() and path.stat().st_size and not open(path, "rb").read()[-1:] == b"\n":
        with open(path, "ab") as f:  # a torn last line (kill -9): start ours on a fresh line
            f.write(b"\n")
    rec = TraceRecorder(path, run_id, node, max_file_bytes, keep_files)
    if last is not None and last.get("run") == run_id:
        # the same run: continue the node's sequence and clock (a new run starts at zero;
        # the schema numbers events per (run, node))
        rec._seq = int(last.get("seq", -1)) + 1
        rec._clock = int(last.get("clock", 0))
    return rec


def open_harness_recorder(data_dir: str | os.PathLike[str], run_id: str) -> TraceRecorder:
    """The fault injector's recorder (node -1, ``harness.jsonl``)."""
    return open_recorder(data_dir, run_id, HARNESS_NODE)


class HarnessClock:
    """The clock of the harness's last event, whenever ``harness.jsonl`` has grown (else
    None) -- a broker's ``TraceRecorder.observe_first``.

    A fault is recorded by the harness before it happens to the victim (``broker_resume``
    before the SIGCONT).  A resumed broker's signal handler takes the harness's clock, but
    its other threads -- the controller noticing its suspended ZooKeeper session, the event
    loop's expired timers -- may record steps first; stamped with the clock from before the
    pause, such a step would order before the pause itself (seen in ``epochal chaos`` seed 2:
    ``controller_resign`` judged while the model's broker was still paused).  Checking the
    file's size costs one ``stat`` per event; the file is read only when it grew."""

    def __init__(self, data_dir: str | os.PathLike[str], run_id: str) -> None:
        self.path = trace_path(data_dir, HARNESS_NODE)
        self.run_id = run_id
        self._size = -1

    def __call__(self) -> int | None:
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return None
        if size == self._size:
            return None
        self._size = size
        last = _last_event(self.path)
        if last is None or last.get("run") != self.run_id:
            return None
        return int(last.get("clock", 0))


def observe_node(rec: TraceRecorder, data_dir: str | os.PathLike[str], node: int) -> None:
    """A fault happens after the victim's last recorded step: take its clock (Lamport
    receive), so the fault orders after that step and, as far as clocks go, not after the
    rest of the cluster's reaction to it (the fault event also carries the zxid at which
    the victim's session ended, the ZooKeeper change the controller reacts to)."""
    last = _last_event(trace_path(data_dir, node))
    if last is not None and last.get("run") == rec.run_id:
        rec.observe(int(last.get("clock", 0)))
