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


def observe_node(rec: TraceRecorder, data_dir: str | os.PathLike[str], node: int) -> None:
    """A fault happens after the victim's last recorded step: take its clock (Lamport
    receive), so the fault orders after that step and, as far as clocks go, not after the
    rest of the cluster's reaction to it (the fault event also carries the zxid at which
    the victim's session ended, the ZooKeeper change the controller reacts to)."""
    last = _last_event(trace_path(data_dir, node))
    if last is not None and last.get("run") == rec.run_id:
        rec.observe(int(last.get("clock", 0)))
