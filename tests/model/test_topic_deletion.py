"""Seed 000 B (topics deleted and created) and its question 5 ("how to deal with repeated topic
deletion/creation?"), two designs side by side.

*As the seed argues* (``topic_ids=False``, ``--no-topic-ids``): no partition version, because
"we only assign replicas to live brokers".  An administrator's explicit assignment breaks the
argument: a broker that was down while the topic was deleted comes back to a re-created topic
that is assigned to it again, keeps the old log (its leader epochs start over, as the new
topic's do, so epoch-based truncation finds nothing to cut), rejoins the ISR and is elected
without the acknowledged write.

*The fix* (the default): a topic id -- in the implementation the czxid of the topic znode --
written with the topic, carried in LeaderAndISR, StopReplica and fetches, and kept beside
the log.  A replica of an older id is deleted before the newer one is followed; requests of
an older incarnation are refused.
"""

from __future__ import annotations

import json

import pytest

from impl.harness.cli.main import main
from model.actions import Step
from model.config import named
from model.registry import apply, explored
from model.scenarios import SCENARIOS
from model.state import EPOCH_DURING_DELETE, FETCH_REQUEST, initial
from properties.checkers.bfs import SearchOptions, check
from properties.checkers.scenarios import play
from properties.safety import all_violations
from tests.pinned import pinned

NO_IDS = named("kip320", deletions=1, topic_ids=False)
IDS = named("kip320", deletions=1)


def _run(cfg, script):
    """Every state of the scripted run (stopping only where a step is not enabled)."""
    s = initial(cfg)
    states = [s]
    for action, choose in script:
        t = apply(s, cfg, Step(action, choose(s)))
        if t is None:
            break
        states.append(t)
        s = t
    return states


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_without_topic_ids_the_checker_finds_a_stale_replica_in_the_recreated_topic(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Searched by the command the README gives for it (``epochal check --config kip320
    --deletions 1 --no-topic-ids``: exit 1), its counterexample read from the verdict object."""
    code = main(["check", "--config", "kip320", "--deletions", "1", "--no-topic-ids", "--json", "--quiet"])
    doc = json.loads(capsys.readouterr().out)
    assert code == doc["exit_code"] == 1
    assert (doc["config"]["name"], doc["config"]["deletions"], doc["config"]["topic_ids"]) == ("kip320", 1, False)
    v = doc["violation"]
    assert v is not None
    assert v["property"] == "replicas_consistent"
    assert len(v["steps"]) == pinned("kip320", "deletions 1, no topic ids", "counterexample steps")
    actions = [step["action"] for step in v["steps"]]
    # the replica's broker is down when the topic is deleted, then comes back to its re-creation
    assert actions.index("broker_crash") < actions.index("delete_topic") < actions.index("create_topic") \
        < actions.index("broker_restart")


@pytest.mark.whole_space  # bench/bench_whole_space.py; CI pins the same count natively
def test_with_topic_ids_every_property_holds_with_one_deletion() -> None:
    """The Python checker's own exhaustion of one deletion, 75 s; the default suite pins the
    same count with the compiled search (``tests/properties/test_native.py``), held to this
    checker by the native differential tests."""
    result = check(IDS, SearchOptions(progress=None))
    assert result.holds and result.complete
    assert result.states == pinned("kip320", "deletions 1", "states")
    assert result.depth == pinned("kip320", "deletions 1", "depth")


@pytest.mark.whole_space  # bench/bench_whole_space.py: about seven minutes on one core
def test_with_topic_ids_one_deletion_holds_at_three_brokers_with_one_record_and_one_crash() -> None:
    """Question 5 at three brokers: with a third broker a replica can be down across the
    deletion while two others re-create the topic and take writes, so the stale-log story
    has more room than at two; the reduced space still ends, and every property holds."""
    cfg = named("kip320", deletions=1, brokers=3, records=1, max_crashes=1)
    result = check(cfg, SearchOptions(progress=None, reduction=True))
    assert result.holds and result.complete
    assert result.states == pinned("kip320", "deletions 1, three brokers, one record, one crash, reduced", "states")
    assert result.depth == pinned("kip320", "deletions 1, three brokers, one record, one crash, reduced", "depth")


def test_the_recreation_story_loses_the_acknowledged_write_without_topic_ids() -> None:
    """The manual run of the issue, step by step: the stale broker is elected holding the
    old incarnation's record and not the acknowledged one."""
    _, script = SCENARIOS["topic_recreation"]
    states = _run(NO_IDS, script)
    assert len(states) == len(script) + 1  # every step is enabled
    broken = {name for name, _ in all_violations(states[-2], states[-1])}
    assert {"acked_durable", "deleted_not_served"} <= broken
    first = play("topic_recreation", NO_IDS)
    assert [name for name, _ in first.violations] == ["replicas_consistent"]  # already at the restart
    assert first.steps[-1][0].action == "broker_restart"


def test_with_topic_ids_the_returning_broker_deletes_the_old_log_and_must_catch_up() -> None:
    out = play("topic_recreation", IDS)
    assert not out.violations
    assert out.blocked_step is not None and out.blocked_step.startswith("expand_isr")
    restarted = out.states[-1].brokers[1].replicas[0]
    assert restarted.topic_id == out.states[-1].zk.partitions[0].topic_id == 1
    assert all(e.value != 1 for e in restarted.log)  # a@1 of the deleted topic is gone


def test_a_fetch_sent_before_the_deletion_is_refused_by_the_recreated_leader_with_topic_ids() -> None:
    """Found by the checker: the re-created topic's epochs start again, so a follower's fetch
    sent before the deletion passes the KIP-320 epoch fence; the leader would count its
    offset and commit a record nobody else has.  Fetches carry the topic id (KIP-516)."""
    A, B = 0, 1
    script = [("send_fetch", lambda s: (B, 0)), ("delete_topic", lambda s: (A, 0)),
              ("stop_replica", lambda s: next((m,) for m in s.stop_replica if m.to == B)),
              ("stop_replica", lambda s: next((m,) for m in s.stop_replica if m.to == A)),
              ("create_topic", lambda s: (A, 0, (A, B), A)),
              ("become_leader", lambda s: next((m,) for m in s.leader_and_isr if m.to == A and m.topic_id == 1)),
              ("produce", lambda s: (A, 0))]
    for cfg, counted in ((IDS, False), (NO_IDS, True)):
        s = _run(cfg, script)[-1]
        [stale] = [m for m in s.fetches if m.kind == FETCH_REQUEST]
        assert stale.topic_id == 0 and stale.offset == 0
        t = apply(s, cfg, Step("handle_fetch", (stale,)))
        assert (t.brokers[A].replicas[0].follower_leo[B] == 0) is counted


def test_a_deletions_stop_replica_carries_no_epoch_and_the_deleted_replica_forgets_its_own() -> None:
    s = _run(IDS, [("delete_topic", lambda s: (0, 0))])[-1]
    assert {m.leader_epoch for m in s.stop_replica} == {EPOCH_DURING_DELETE}
    t = apply(s, IDS, Step("stop_replica", (s.stop_replica[0],)))
    r = t.brokers[s.stop_replica[0].to].replicas[0]
    assert (r.log, r.leader_epoch) == ((), 0)


def test_the_name_is_free_again_only_once_every_live_replica_has_answered_the_deletion() -> None:
    s = _run(IDS, [("delete_topic", lambda s: (0, 0))])[-1]
    assert apply(s, IDS, Step("create_topic", (0, 0, (0, 1), 0))) is None
    for m in list(s.stop_replica):
        s = apply(s, IDS, Step("stop_replica", (m,)))
    assert apply(s, IDS, Step("create_topic", (0, 0, (0, 1), 0))) is not None


def test_no_deletion_is_explored_unless_the_bound_allows_one() -> None:
    names = {e.name for e in explored(named("kip320"))}
    assert not names & {"delete_topic", "create_topic", "stop_replica"}
    assert {"delete_topic", "create_topic", "stop_replica"} <= {e.name for e in explored(IDS)}
