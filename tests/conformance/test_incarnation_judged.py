"""Two driven runs whose new incarnation's LeaderAndISR meets the deleted one's records
(``epochal drive --generate transitions``, pair ``become_leader/other_incarnation``), kept
with the judgements the judge owed them (``fixtures/incarnation/``; docs/drive.md).

``refused-stop`` (``--config kip320 --deletions 1``): the controller deletes the topic and
crashes; broker 1, controller now, refuses the old controller's StopReplica(delete) -- it
records only a cluster-wide ``request_rejected`` -- and re-creates the topic.  The model
holds a re-creation back until every live replica has answered its StopReplica
(``removal_pending``); the judge kept the unrecorded refusal pending and refused the
re-creation's ``elect_leader``.

``zombie-append`` (``--config zombie --deletions 1``, ``become_follower/other_incarnation``):
leader 0 is paused through the deletion and the re-creation, resumes, appends to the deleted
incarnation's log in its leader epoch 0, and then follows the new incarnation's leader,
dropping those records first.  The judge renumbered the zombie's append onto the new
incarnation's epochs (leader epoch 1).

``zombie-leads`` (the same configuration): leader 0 resumes after the deletion, appends, fails
its ISR write, and leads the re-created topic.  Without the deletion's zxid the causal order
put broker 0's re-registration before the deletion, where the model's StopReplica would have
gone to broker 0 too and held the re-creation back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.judge import replay, search
from conformance.judge.replay import judge
from conformance.spark.order import causal_order, split_groups
from traces.reader import read_traces

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "incarnation"


def _group(case: str, strip_zxid_of: str = "") -> list[dict]:
    events = read_traces([FIXTURES / case]).events
    events = [{**e, "zxid": None} if e["kind"] == strip_zxid_of else e for e in events]
    ordered, _ = causal_order(events)
    return split_groups(ordered)[("t", 0)]


def _refused_at(v: dict, events: list[dict], kind: str) -> str:
    assert not v["conforms"], "conforms"
    assert events[v["first_bad"]]["kind"] == kind, v["reason"]
    return v["reason"]


def test_a_stop_replica_refused_without_a_partition_event_frees_the_topic_for_recreation() -> None:
    events = _group("refused-stop")
    assert any(e["kind"] == "request_rejected" and e["params"]["api"] == "stop_replica" for e in events)
    v = judge(events, "kip320")
    assert v["conforms"] and v["matched"] == len(events), v["reason"]


def test_without_the_unrecorded_refusal_the_recreation_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "INTERNAL_ACTIONS", tuple(a for a in search.INTERNAL_ACTIONS if a != "stop_replica"))
    events = _group("refused-stop")
    reason = _refused_at(judge(events, "kip320", memo=False), events, "elect_leader")
    assert 'reason "init"' in reason and "is not enabled" in reason


def test_a_zombie_appending_to_the_deleted_incarnation_then_leading_the_new_one_conforms() -> None:
    events = _group("zombie-append")
    kinds = [e["kind"] for e in events]
    assert kinds.index("topic_deleted") < kinds.index("broker_reregister") < kinds.index("produce")
    v = judge(events, "zombie")
    assert v["conforms"] and v["matched"] == len(events), v["reason"]


def test_the_zombies_append_renumbered_onto_the_new_incarnation_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay, "_of_older_incarnation", lambda s, e, ids: False)
    events = _group("zombie-append")
    reason = _refused_at(judge(events, "zombie", memo=False), events, "produce")
    assert "leader_epoch is 1 where the model's step gives 0" in reason


def test_without_the_deletions_zxid_the_recreation_is_refused() -> None:
    assert judge(_group("zombie-leads"), "zombie")["conforms"]
    events = _group("zombie-leads", strip_zxid_of="topic_deleted")
    reason = _refused_at(judge(events, "zombie", memo=False), events, "elect_leader")
    assert 'reason "init"' in reason and "is not enabled" in reason
