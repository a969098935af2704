"""Seed 000 A 3.2: the controller's leader choice, as a pure function."""

from __future__ import annotations

from impl.node.controller import Decision, choose_leader
from impl.node.zk import LeaderAndIsr


def st(leader: int, isr: tuple[int, ...], epoch: int = 3) -> LeaderAndIsr:
    return LeaderAndIsr(leader, epoch, isr, 1)


def test_a_live_leader_stays_and_dead_isr_members_are_dropped() -> None:
    assert choose_leader([0, 1, 2], st(1, (0, 1, 2)), {1, 2}, False) == Decision(1, (1, 2))


def test_a_dead_leader_is_replaced_by_the_first_live_isr_member_in_assignment_order() -> None:
    assert choose_leader([2, 0, 1], st(2, (0, 1, 2)), {0, 1}, False) == Decision(0, (0, 1))


def test_no_live_isr_member_means_no_leader_and_the_isr_is_kept_for_its_return() -> None:
    assert choose_leader([0, 1, 2], st(0, (0,)), {1, 2}, False) == Decision(-1, (0,))


def test_unclean_election_picks_a_live_replica_outside_the_isr_when_allowed() -> None:
    assert choose_leader([0, 1, 2], st(0, (0,)), {2}, True) == Decision(2, (2,), unclean=True)


def test_controlled_shutdown_excludes_the_departing_broker() -> None:
    d = choose_leader([0, 1, 2], st(0, (0, 1, 2)), {0, 1, 2}, False, exclude=frozenset({0}))
    assert d == Decision(1, (1, 2))
