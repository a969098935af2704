"""``bench/mutation_paths/``: each path a mutation run drives as a case is a model path (every
step enabled in turn, under its configuration and bounds), and the paths written for a
survivor still reach the situation that tells the survivor from the original."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import mutation_generated as mg
from model.actions import stale_reason
from model.config import Config, named
from model.registry import apply
from model.state import FOLLOWER, LEADER, State, initial
from properties.safety import first_violation

PATHS = Path(mg.__file__).parent / "mutation_paths"


def _states(name: str) -> tuple[Config, list[tuple[str, State, State]]]:
    """The path's configuration, and each of its steps with the states before and after."""
    case = mg.path_case(PATHS / f"{name}.json")
    cfg = named(case["config"], brokers=case["brokers"], **case["knobs"])
    s, out = initial(cfg), []
    for step in case["steps"]:
        t = apply(s, cfg, step)
        assert t is not None, f"{name}: {step} is not enabled"
        out.append((step.action, s, t))
        s = t
    return cfg, out


def _driven_under_another_rule(path: Path) -> bool:
    """A path found under one truncation rule and driven under another: the driver follows it
    until the rule has no such step (``model_refused``), so it is no model path of its own."""
    return "driven under" in json.loads(path.read_text()).get("note", "")


@pytest.mark.parametrize("name", sorted(p.stem for p in PATHS.glob("*.json") if not _driven_under_another_rule(p)))
def test_every_mutation_path_is_a_model_path(name: str) -> None:
    assert _states(name)[1]


def test_a_shutdown_of_the_leader_elects_broker_0() -> None:
    # shutdown_choice's `d.leader >= 0`: broker 0 is the one elected
    _, steps = _states("shutdown_of_leader_elects_broker_0")
    _, before, after = next(x for x in steps if x[0] == "controlled_shutdown")
    assert before.zk.partitions[0].leader == 1 and after.zk.partitions[0].leader == 0


def test_a_follower_outside_the_isr_shuts_down_beside_an_isr_member_shutting_down() -> None:
    # shutdown_choice's `broker not in isr or len(isr) <= 1`: only the first half holds, and
    # an election excluding both brokers would write a smaller ISR
    _, steps = _states("shutdown_outside_isr_beside_another")
    _, before, after = [x for x in steps if x[0] == "controlled_shutdown"][-1]
    zn = before.zk.partitions[0]
    assert 2 not in zn.isr and zn.isr == (0, 1) and before.brokers[0].shutting_down == (1,)
    assert after.zk.partitions == before.zk.partitions and after.brokers[0].shutting_down == (1, 2)


def test_a_crash_beside_a_broker_shutting_down_keeps_it_in_the_isr() -> None:
    # broker_change_choice keeps the live leader, so it excludes no broker shutting down
    _, steps = _states("crash_beside_broker_shutting_down")
    _, before, after = next(x for x in steps if x[0] == "elect_leader")
    assert before.brokers[0].shutting_down == (1,) and 1 in before.zk.live
    assert after.zk.partitions[0].leader == 0 and after.zk.partitions[0].isr == (0, 1)


def test_a_request_to_an_earlier_registration_is_refused_for_its_broker_epoch() -> None:
    cfg, steps = _states("control_to_earlier_registration")
    action, before, after = steps[-1]
    m = mg.path_case(PATHS / "control_to_earlier_registration.json")["steps"][-1].args[0]
    assert action == "reject_leader_and_isr" and after == before
    assert stale_reason(before, cfg, m) == "stale broker epoch"


def _last_truncation(name: str, follower: int) -> tuple[State, State]:
    """The states around the path's last epoch lookup of ``follower``, checked to be one."""
    _, steps = _states(name)
    _, before, after = [x for x in steps if x[0] == "truncate"][-1]
    rb = before.brokers[follower].replicas[0]
    assert rb.role == FOLLOWER and before.brokers[rb.leader].replicas[0].role == LEADER
    return before, after


def test_a_follower_whose_latest_epoch_its_leader_never_had_cuts_where_an_older_one_ends() -> None:
    # epoch_truncation_point's older-epoch cut: broker 1's epoch 2, not in leader 2's log
    before, after = _last_truncation("truncation_older_epoch_cut", 1)
    follower, leader = before.brokers[1].replicas[0], before.brokers[2].replicas[0]
    assert follower.log[-1].epoch == 2 and 2 not in {e.epoch for e in leader.log}
    assert [e.epoch for e in after.brokers[1].replicas[0].log] == [1]


def test_a_follower_that_led_an_epoch_its_leader_skipped_looks_up_an_epoch_it_lacks() -> None:
    # epoch_truncation_step's incomplete round: broker 0 led epoch 3 (its record there never
    # committed); its new leader 1 has epoch 2, which broker 0 never had -- the answer to its
    # lookup of epoch 3 is 2, and it must ask again for epoch 1
    before, after = _last_truncation("truncation_incomplete_round", 0)
    follower, leader = before.brokers[0].replicas[0], before.brokers[1].replicas[0]
    assert [e.epoch for e in follower.log] == [1, 3] and [e.epoch for e in leader.log] == [1, 2]
    assert [e.epoch for e in after.brokers[0].replicas[0].log] == [1]


@pytest.mark.parametrize(("name", "follower_end", "leader_end"), [
    ("truncation_older_epoch_longer_at_leader", 1, 2), ("truncation_older_epoch_longer_at_follower", 2, 1)])
def test_the_older_epoch_cut_is_where_it_ends_first(name: str, follower_end: int, leader_end: int) -> None:
    # epoch_truncation_point's min(follower_leo, leader_end_offset, own_end): each of the two
    # ends below the other once
    before, after = _last_truncation(name, 1)
    follower, leader = before.brokers[1].replicas[0], before.brokers[2].replicas[0]
    assert follower.log[-1].epoch == 2 and 2 not in {e.epoch for e in leader.log}
    assert sum(e.epoch == 1 for e in follower.log) == follower_end and sum(e.epoch == 1 for e in leader.log) == leader_end
    assert len(after.brokers[1].replicas[0].log) == min(follower_end, leader_end)


def test_a_reassignment_keeps_its_leader_when_it_is_not_rar_first_member() -> None:
    # reassignment_switch's `set(rar) <= set(isr)` (RAR is the whole ISR here) and the leader
    # kept when it is a live RAR member: broker 1, not RAR's first
    _, steps = _states("reassignment_kept_leader_not_first")
    _, before, after = steps[-1]
    zb, za = before.zk.partitions[0], after.zk.partitions[0]
    assert zb.rar == (0, 1) and set(zb.isr) == set(zb.rar) and zb.leader == 1
    assert za.leader == 1 and za.rar == () and za.leader_epoch == zb.leader_epoch + 1


def test_a_reassignment_away_from_its_leader_passes_over_a_member_shutting_down() -> None:
    # reassignment_switch's live RAR members in the ISR: leader 0 is not in RAR [1, 2], and
    # broker 1, RAR's first and in the ISR, is shutting down: broker 2 is elected
    _, steps = _states("reassignment_past_member_shutting_down")
    _, before, after = steps[-1]
    zb, za = before.zk.partitions[0], after.zk.partitions[0]
    assert zb.rar == (1, 2) and set(zb.rar) <= set(zb.isr) and zb.leader not in zb.rar
    assert before.brokers[0].shutting_down == (1,) and 1 in before.zk.live
    assert za.leader == 2 and za.isr == (1, 2)


def test_a_fetch_of_the_deleted_incarnation_reaches_the_new_one_leader_and_is_refused() -> None:
    # topic_ids_differ with two known ids that differ: the leader epochs agree (both
    # incarnations start at 1), so only the topic id refuses the fetch
    _, steps = _states("fetch_from_deleted_incarnation")
    action, before, after = steps[-1]
    m = mg.path_case(PATHS / "fetch_from_deleted_incarnation.json")["steps"][-1].args[0]
    leader = before.brokers[m.leader].replicas[0]
    assert action == "handle_fetch" and leader.role == LEADER and leader.log
    assert m.epoch == leader.leader_epoch and m.topic_id < leader.topic_id
    assert after == before._replace(fetches=after.fetches) and m not in after.fetches
    assert not any(f.follower == m.follower and f.kind != m.kind for f in after.fetches)


def test_kip101_keeps_a_record_of_an_epoch_its_leader_never_had() -> None:
    # truncate_round's KIP-101 branch where it and the epoch rounds cut apart: the leader
    # answers where epoch 1 ends in its log (2), above where it ends in the follower's (1)
    cfg, steps = _states("truncation_kip101_keeps_older_epoch")
    before, after = _last_truncation("truncation_kip101_keeps_older_epoch", 1)
    follower, leader = before.brokers[1].replicas[0], before.brokers[2].replicas[0]
    assert cfg.truncation == "kip101"
    assert [e.epoch for e in follower.log] == [1, 2] and [e.epoch for e in leader.log] == [1, 1]
    assert after.brokers[1].replicas[0].log == follower.log
    # it stops before the follower takes a HW over the logs that disagree: a driven case
    # that ends in a violation is a reproduction, not a path a mutant can be told apart on
    assert all(first_violation(b, t) is None for _, b, t in steps)
