"""Trace recorders of restarted nodes continue their run's numbering."""

from __future__ import annotations

import json
from pathlib import Path

from impl.node.tracing import HARNESS_NODE, open_recorder, trace_path
from traces import events as ev


def test_a_restarted_node_continues_seq_and_clock_within_its_run(tmp_path: Path) -> None:
    rec = open_recorder(tmp_path, "run1", 3)
    rec.emit(ev.broker_restart(zxid=5, broker=3, broker_epoch=5))
    rec.emit(ev.broker_restart(zxid=6, broker=3, broker_epoch=6))
    rec.close()
    with open(trace_path(tmp_path, 3), "a") as f:
        f.write('{"torn": ')  # kill -9 mid-line
    again = open_recorder(tmp_path, "run1", 3)
    again.emit(ev.broker_restart(zxid=9, broker=3, broker_epoch=9))
    again.close()
    other = open_recorder(tmp_path, "run2", 3)
    other.emit(ev.broker_restart(zxid=11, broker=3, broker_epoch=11))
    other.close()
    lines = trace_path(tmp_path, 3).read_text().splitlines()
    events = [json.loads(x) for x in lines if x.startswith("{\"clock")]
    assert [(e["run"], e["seq"]) for e in events] == [
        ("run1", 0), ("run1", 1), ("run1", 2), ("run2", 0)]
    assert events[2]["clock"] > events[1]["clock"]
    assert trace_path(tmp_path, HARNESS_NODE).name == "harness.jsonl"


def _last(tmp_path: Path, node: int) -> dict:
    return json.loads(trace_path(tmp_path, node).read_text().splitlines()[-1])


def test_a_fault_orders_after_what_others_recorded_until_the_victim_stopped(tmp_path: Path) -> None:
    """Chaos seed 3: the leader records its answer to the victim's fetch in the moment
    before the SIGSTOP lands; the victim took that answer and fetched again without a
    trace line.  The pause must order after the answer, so every clock is read only once
    the victim has stopped (``stop_then_observe``)."""
    from impl.harness.cluster import stop_then_observe

    leader, victim = open_recorder(tmp_path, "run1", 0), open_recorder(tmp_path, "run1", 2)
    victim.emit(ev.send_fetch(topic="t", partition=0, leader=0, fetch_offset=50, leader_epoch=1))
    leader.observe(_last(tmp_path, 2)["clock"])
    harness = open_recorder(tmp_path, "run1", HARNESS_NODE)

    def stop() -> None:  # the answer is recorded while the signal is on its way
        leader.emit(ev.handle_fetch(topic="t", partition=0, follower=2, fetch_offset=50, leader_epoch=1))

    stop_then_observe(harness, tmp_path, [0, 1, 2], stop)
    harness.emit(ev.broker_pause(broker=2))
    for r in (leader, victim, harness):
        r.close()
    answer, pause = _last(tmp_path, 0), _last(tmp_path, HARNESS_NODE)
    assert pause["clock"] > answer["clock"] > _last(tmp_path, 2)["clock"]
