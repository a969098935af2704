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
from pathlib import Path

from traces.recorder import TraceRecorder

HARNESS_NODE = -1


def trace_path(data_dir: str | os.PathLike[str], node: int) -> Path:
    name = "harness" if node == HARNESS_NODE else f"broker-{node}"
    return Path(data_dir) / "traces" / f"{name}.jsonl"


def _last_event(path: Path) -> dict | None:
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


def open_recorder(data_dir: str | os.PathLike[str], run_id: str, node: int) -> TraceRecorder:
    path = trace_path(data_dir, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    last = _last_event(path)
    if path.exists() and path.stat().st_size and not open(path, "rb").read()[-1:] == b"\n":
        with open(path, "ab") as f:  # a torn last line (kill -9): start ours on a fresh line
            f.write(b"\n")
    rec = TraceRecorder(path, run_id, node)
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
