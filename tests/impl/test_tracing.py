"""Trace recorders of restarted nodes continue their run's numbering."""

from __future__ import annotations

import json
from pathlib import Path

from impl.tracing import HARNESS_NODE, open_recorder, trace_path


def test_a_restarted_node_continues_seq_and_clock_within_its_run(tmp_path: Path) -> None:
    rec = open_recorder(tmp_path, "run1", 3)
    rec.emit("broker_restart", params={"broker_epoch": 5})
    rec.emit("broker_restart", params={"broker_epoch": 6})
    rec.close()
    with open(trace_path(tmp_path, 3), "a") as f:
        f.write('{"torn": ')  # kill -9 mid-line
    again = open_recorder(tmp_path, "run1", 3)
    again.emit("broker_restart", params={"broker_epoch": 9})
    again.close()
    other = open_recorder(tmp_path, "run2", 3)
    other.emit("broker_restart", params={"broker_epoch": 11})
    other.close()
    lines = trace_path(tmp_path, 3).read_text().splitlines()
    events = [json.loads(x) for x in lines if x.startswith("{\"clock")]
    assert [(e["run"], e["seq"]) for e in events] == [
        ("run1", 0), ("run1", 1), ("run1", 2), ("run2", 0)]
    assert events[2]["clock"] > events[1]["clock"]
    assert trace_path(tmp_path, HARNESS_NODE).name == "harness.jsonl"
