"""A recorded run that did not conform, kept as a test: the model was right, the recording
was incomplete.

``traces/data/nonconforming/not-enabled--unrecorded-controller-stop`` is a controller-failover
recording made under load.  At its end the harness stopped all three brokers at once without
recording their exits.  The controller (broker 2) finished its own controlled shutdown (ISR
[1], zxid 38), its ZooKeeper session closed (zxid 39, deleting ``/controller``), and broker 1,
still shutting down itself, won the election (zxid 40).  The trace shows broker 1's
``controller_elect`` while broker 2 still holds ``/controller`` in every state the model can
be in, so the judge refuses it.

The test proves which side was wrong: the same run with the one missing harness event (broker
2's ``broker_stop`` at its session's end) passes the election.  The recordings now stop brokers
one at a time, the controller last, each exit recorded (``impl.harness.recordings``).

The run was recorded before the implementation's controlled shutdown followed Kafka 2.7, and
the model now holds it to that rule too: past the election it is refused where broker 2, which
had asked to shut down, applies a LeaderAndISR naming it a follower -- Kafka 2.7 (and the
implementation since) sends a shutting-down follower StopReplica instead, so that it stops
fetching and does not rejoin the ISR.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from conformance.spark.verdict import judge_run, load_judge

CASE = Path(__file__).resolve().parents[2] / "traces" / "data" / "nonconforming" / "not-enabled--unrecorded-controller-stop"


def _events() -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(CASE.glob("*.jsonl")) for line in f.read_text().splitlines() if line.strip()]


def _verdicts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return judge_run(events[0]["run"], events, load_judge(None), "kip320")


def test_the_run_is_refused_at_the_election_that_follows_an_unrecorded_controller_stop() -> None:
    [v] = _verdicts(_events())
    assert not v["conforms"]
    assert v["reason"].startswith("controller_elect by broker 1 (broker 1, controller_epoch 3) breaks rule "
                               "controller_elect (design section 000 D): it is not enabled")


def test_the_same_run_passes_the_election_once_the_controllers_stop_is_recorded_at_its_session_end() -> None:
    events = _events()
    [harness] = [e for e in events if e["node"] == -1]
    stop = copy.deepcopy(harness)
    last_clock_of_2 = max(e["clock"] for e in events if e["node"] == 2)
    # as LocalCluster.stop_broker records it: after the broker's exit (a clock above its last
    # event) with the zxid at which its session ended (between its last write and the election)
    stop.update(kind="broker_stop", seq=harness["seq"] + 1, clock=last_clock_of_2 + 1, zxid=39,
                params={"broker": 2, "pid": 0})
    [v] = _verdicts(events + [stop])
    assert not v["conforms"] and not v["reason"].startswith("controller_elect"), v["reason"]
    # refused only where the pre-2.7 implementation told the shutting-down broker 2 it follows
    assert v["first_bad_kind"] == "become_follower" and v["first_bad_node"] == 2, v["reason"]
    assert "isr [1], leader 1" in v["reason"]


def test_a_stop_recorded_at_the_wrong_zxid_does_not_make_it_conform() -> None:
    """The fix is the missing event in its true place, not any extra event: after broker 1's
    election (zxid 41) the stop explains nothing."""
    events = _events()
    [harness] = [e for e in events if e["node"] == -1]
    late = dict(copy.deepcopy(harness), kind="broker_stop", seq=harness["seq"] + 1,
                clock=max(e["clock"] for e in events) + 1, zxid=41, params={"broker": 2, "pid": 0})
    [v] = _verdicts(events + [late])
    assert not v["conforms"]
