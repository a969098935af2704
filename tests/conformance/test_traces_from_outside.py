"""Traces our testers recorded from outside and the judge refused, kept with the verdict they
now get (``docs/conformance.md``, "Traces from outside"; the traces in ``evidence/``).

``chaos-admin-5-brokers-send-fetch-not-enabled`` (chaos seed 404, 5 brokers, ``--admin``;
trimmed to the first 400 events of its group ``chaos-admin/0``) was refused at broker 1's
first fetch of the re-created topic (event 282, node 1 seq 313, ``broker-1.jsonl:314`` of the full recording): "send_fetch ... is
not enabled in any of the 1 possible model states".  The judge was wrong, not the broker.
Broker 1's last fetch of the deleted incarnation (offset 17, recorded at event 266) was an
empty long poll that the leader, broker 0, took on its arrival without a trace line, as it
takes every fetch that changes nothing (its answer after the deletion, an error, went to a
follower that had dropped the partition too).  The judge places such silent steps as late as the next
event that needs them, and none did before broker 0's StopReplica(delete) at event 270.
After it broker 0 has no replica and can answer nothing, so in the one state left the
request was still in flight. The model's fetcher keeps one request to a leader outstanding
(``model.actions.replication.send_fetch``), and broker 1's new fetch to broker 0 was not
enabled there.  The model allows the run: broker 0 answers both followers' pending fetches
silently before its StopReplica.  A StopReplica now *freezes* its broker (``freezing`` on
``model.actions.reassignment.STOP_REPLICA``, which only the judge reads), as a role change
or a crash already did: the judge also keeps the states where the broker took its own
silent steps just before the event (``conformance.judge.search._before_freeze``).  No rule
of the model changed, and a state the judge keeps is still reached only by model steps.

The other recording, ``controller-failover-not-conforming``, is byte for byte the sample
``traces/data/nonconforming/not-enabled--unrecorded-controller-stop``, which
``test_unrecorded_stop.py`` already keeps with its refusal (the harness did not record the
controller's ``broker_stop``).  It is not copied a second time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.judge import search
from conformance.judge.replay import judge
from conformance.spark.order import causal_order, split_groups
from traces.reader import read_traces

EVIDENCE = Path(__file__).resolve().parent / "evidence"
SEND_FETCH_CASE = EVIDENCE / "chaos-admin-5-brokers-send-fetch-not-enabled"


def _group(case: Path) -> list[dict]:
    ordered, _ = causal_order(read_traces([case]).events)
    [(key, events)] = split_groups(ordered).items()
    assert key == ("chaos-admin", 0)
    return events


def test_the_fetch_of_a_recreated_topic_conforms_once_a_stop_replica_freezes_its_broker() -> None:
    """The whole trimmed group conforms, past the first fetch of the new incarnation and the
    new leader's answer to it."""
    events = _group(SEND_FETCH_CASE)
    assert (events[282]["kind"], events[282]["node"], events[282]["seq"]) == ("send_fetch", 1, 313)
    assert events[286]["kind"] == "become_leader" and events[287]["kind"] == "handle_fetch"
    v = judge(events, "kip320")
    assert v["conforms"], v["reason"]
    assert v["matched"] == len(events) == 400


def test_without_a_freezing_stop_replica_the_judge_loses_the_leaders_silent_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge as it was: a StopReplica not among the freezing events refuses the fetch
    exactly where the testers' run was refused (without the memo, whose steps the judge
    with the fix may have learned)."""
    monkeypatch.setattr(search, "FREEZING", tuple(a for a in search.FREEZING if a != "stop_replica"))
    events = _group(SEND_FETCH_CASE)
    v = judge(events, "kip320", memo=False)
    assert not v["conforms"] and v["first_bad"] == 282
    assert v["reason"].startswith("send_fetch by broker 1 (fetch_offset 0, leader 0, leader_epoch 1")
    assert "is not enabled in any of the 1 possible model states" in v["reason"]
