"""Seed 000 H: a removed partition's id added again, and the identity that makes it safe.

``--reuse-partition-ids 1`` lets an added partition take the lowest id the topic has no
partition under, a removed one's included, once its removal is complete.  Without
``--partition-identity`` the re-added partition has the topic's id alone -- the removed
partition's -- and a broker that kept the removed partition's log (it missed or refused the
removal's StopReplica) carries it into the new partition: the checker finds a leader serving
a removed record (``deleted_not_served``).  With it the re-added partition is a new
incarnation, and the broker drops the old log before acting for it (``for_incarnation``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.actions import Step, forget_stale_requests
from model.actions.partitions import added_incarnation, added_partition_id
from model.config import named
from model.registry import apply, unsupported_features
from model.state import DELETED, FOLLOWER, LEADER, NOT_CREATED, LeaderAndIsr, initial
from properties.checkers.bfs import SearchOptions, check
from properties.safety import all_violations, deleted_not_served
from tests.pinned import pinned

REUSE = named("kip320", partition_changes=2, reuse_partition_ids=1)
IDENTITY = replace(REUSE, partition_identity=1)


def _steps(cfg, s, *steps, check_properties=True):
    for action, args in steps:
        t = apply(s, cfg, Step(action, args))
        assert t is not None, (action, args)
        if check_properties:
            assert not all_violations(s, t), (action, all_violations(s, t))
        s = t
    return s


def _replicated(cfg):
    """Partition 0 with a@1 on both brokers (the follower fetched it once)."""
    s = _steps(cfg, initial(cfg), ("produce", (0, 0)), ("send_fetch", (1, 0)))
    s = _steps(cfg, s, ("handle_fetch", (s.fetches[0],)))
    return _steps(cfg, s, ("receive_fetch", (s.fetches[0],)))


def _stop(s, cfg, to):
    [m] = [m for m in s.stop_replica if m.to == to]
    return _steps(cfg, s, ("stop_replica", (m,)))


def _leader_and_isr(s, to, p=0):
    return max((m for m in s.leader_and_isr if m.to == to and m.partition == p), key=lambda m: m.zk_version)


def test_the_knobs_are_off_by_default_and_go_with_partition_changes() -> None:
    cfg = named("kip320", partition_changes=2)
    assert (cfg.reuse_partition_ids, cfg.partition_identity) == (0, 0)
    with pytest.raises(ValueError, match="go with --partition-changes"):
        named("kip320", reuse_partition_ids=1)
    with pytest.raises(ValueError, match="needs topic ids"):
        named("kip320", partition_changes=2, reuse_partition_ids=1, partition_identity=1, topic_ids=False)
    with pytest.raises(ValueError, match="--reuse-partition-ids must be between 0 and 1"):
        named("kip320", partition_changes=2, reuse_partition_ids=2)
    assert "reuse_partition_ids=1 partition_identity=1" in IDENTITY.describe()


def test_the_native_search_runs_reused_ids_and_identities_and_z3_refuses_them() -> None:
    assert unsupported_features("native", IDENTITY) == []
    assert unsupported_features("z3", IDENTITY) == [
        "partitions added or removed", "removed partition ids added again", "partition identities"]


def test_an_added_partition_takes_the_lowest_free_id_once_its_removal_is_complete() -> None:
    s = _steps(REUSE, initial(REUSE), ("remove_partitions", (0, 0)))
    assert added_partition_id(s.zk, REUSE) == 0 and added_partition_id(s.zk, named("kip320", partition_changes=2)) == 1
    assert apply(s, REUSE, Step("add_partitions", (0, 0, (0, 1), 0))) is None, "StopReplica(delete) still unanswered"
    assert apply(s, REUSE, Step("add_partitions", (0, 1, (0, 1), 0))) is None, "not the lowest free id"
    s = _stop(_stop(s, REUSE, 0), REUSE, 1)
    t = _steps(REUSE, s, ("add_partitions", (0, 0, (0, 1), 0)))
    assert t.zk.partitions[0].ar == (0, 1) and t.zk.partitions[1] == NOT_CREATED


def test_a_re_added_partition_is_a_new_incarnation_only_with_identity() -> None:
    s = _stop(_stop(_steps(REUSE, initial(REUSE), ("remove_partitions", (0, 0))), REUSE, 0), REUSE, 1)
    removed = s.zk.partitions[0]
    assert added_incarnation(REUSE, removed) == removed.topic_id
    assert added_incarnation(IDENTITY, removed) == removed.topic_id + 1
    assert added_incarnation(IDENTITY, NOT_CREATED) == NOT_CREATED.topic_id, "a fresh id joins the topic's"
    t = _steps(IDENTITY, s, ("add_partitions", (0, 0, (0, 1), 0)))
    assert {m.topic_id for m in t.leader_and_isr if m.partition == 0} == {removed.topic_id + 1}


def test_a_request_a_reused_id_can_make_news_again_is_not_forgotten() -> None:
    """A LeaderAndISR refused for its leader epoch is dropped as stale for ever -- unless a
    removed id may come back with no topic ids, whose deleted replica's epochs start over."""
    for cfg, kept in ((named("kip320", partition_changes=2), False), (replace(REUSE, topic_ids=False), True)):
        s = initial(cfg)
        s = s._replace(leader_and_isr=(LeaderAndIsr(1, 0, 0, 1, (0, 1), 0, 1, 1),))
        assert bool(forget_stale_requests(s, cfg).leader_and_isr) == kept


def _down_through_the_removal(cfg):
    """Broker 1 holds a@1 and is down while partition 0 is removed (StopReplica(delete)
    reaches broker 0 only); partition 0 is added again with both in its AR, and broker 1
    restarts into it -- the broker a reassignment or an addition puts back in the AR."""
    s = _steps(cfg, _replicated(cfg), ("broker_crash", (1,)), ("remove_partitions", (0, 0)))
    s = _steps(cfg, _stop(s, cfg, 0), ("add_partitions", (0, 0, (0, 1), 0)), ("broker_restart", (1,)))
    return s


def test_without_identity_a_broker_down_through_the_removal_keeps_its_old_log() -> None:
    s = _down_through_the_removal(REUSE)
    r = s.brokers[1].replicas[0]
    assert r.role == FOLLOWER and r.log and r.topic_id == s.zk.partitions[0].topic_id, \
        "the removed partition's a@1 is taken for the new partition's"
    assert (0, r.log[0].value) in s.ghost.retired
    # and the broker that did delete it cannot tell the new partition's LeaderAndISR from
    # a stale one of the removed partition: it refuses it for ever (``stale_reason``), so
    # the request to lead is forgotten at once
    assert s.brokers[0].replicas[0].role == DELETED
    assert s.zk.partitions[0].leader == 0 and not [m for m in s.leader_and_isr if m.to == 0]


def test_with_identity_the_old_log_is_dropped_and_the_new_partition_led() -> None:
    s = _down_through_the_removal(IDENTITY)
    r = s.brokers[1].replicas[0]
    assert r.log == () and r.topic_id == s.zk.partitions[0].topic_id == 1
    t = _steps(IDENTITY, s, ("become_leader", (_leader_and_isr(s, 0),)), ("produce", (0, 0)))
    assert t.brokers[0].replicas[0].role == LEADER and [e.value for e in t.brokers[0].replicas[0].log] == [2]


def _fenced_removal(cfg):
    """The checker's counterexample without identity (depth 9): broker 1's StopReplica of
    the removal comes from a controller that has since been replaced, so broker 1 refuses it
    and keeps a@1; the new controller adds partition 0 again with broker 1 as leader."""
    s = _steps(cfg, _replicated(cfg), ("remove_partitions", (0, 0)), ("broker_crash", (0,)),
               ("controller_elect", (1,)))
    s = _steps(cfg, _stop(s, cfg, 1), ("add_partitions", (1, 0, (1,), 1)), check_properties=False)
    return s


def test_without_identity_the_re_added_partition_serves_a_removed_record() -> None:
    s = _fenced_removal(REUSE)
    assert s.brokers[1].replicas[0].log and "serves [a@1]" in (deleted_not_served(s) or "")


def test_with_identity_the_same_run_breaks_nothing() -> None:
    s = _fenced_removal(IDENTITY)
    assert deleted_not_served(s) is None
    t = _steps(IDENTITY, s, ("become_leader", (_leader_and_isr(s, 1),)))
    assert t.brokers[1].replicas[0].role == LEADER and t.brokers[1].replicas[0].log == ()


SMALL = {"records": 1, "max_crashes": 1, "max_epoch": 1}
"""One record, one crash, no leader election (epoch 1 only): the smallest bounds the loss needs."""


LOSS = "partition changes 2, ids reused, no identity, one record, one crash, epoch 1"


@pytest.mark.slow
def test_without_identity_the_checker_finds_a_removed_record_served() -> None:
    """The search finds the loss on its own: a shortest counterexample of
    ``deleted_not_served``, the run of ``_fenced_removal`` (about 15 s)."""
    result = check(replace(REUSE, **SMALL), SearchOptions(progress=None))
    assert result.violation is not None and result.violation.property == "deleted_not_served"
    assert [step.action for step, _ in result.violation.steps][-3:] == ["controller_elect", "stop_replica",
                                                                        "add_partitions"]
    assert len(result.violation.steps) == pinned("kip320", LOSS, "counterexample steps")


@pytest.mark.slow
def test_with_identity_every_run_as_long_as_the_loss_holds() -> None:
    """The same bounds with identity: every property holds in every run of up to the
    counterexample's length (about 30 s; the complete search is far longer than a CI run,
    docs/model.md)."""
    depth = pinned("kip320", LOSS, "counterexample steps")
    result = check(replace(IDENTITY, **SMALL), SearchOptions(progress=None, max_depth=depth))
    assert result.violation is None and result.checked_depth == depth
    bound = f"partition changes 2, ids reused, identity, one record, one crash, epoch 1, within {depth} steps"
    assert result.states == pinned("kip320", bound, "states")
