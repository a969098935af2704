"""``broker_expire``: a broker's ZooKeeper session expires while it keeps running.

Unlike ``broker_pause`` the broker is not frozen: it goes on acting on the roles it had
while the controller fails it over, until it re-registers with a new broker epoch."""

from __future__ import annotations

import pytest

from model.actions import Step
from model.config import NAMED, named
from model.registry import apply, successors
from model.state import LEADER, NO_LEADER, UP, initial
from properties.checkers.bfs import SearchOptions, check


@pytest.mark.parametrize("name", sorted(NAMED))
def test_no_named_configuration_expires_a_session(name: str) -> None:
    cfg = NAMED[name]
    assert cfg.max_expiries == 0
    assert all(step.action != "broker_expire" for step, _ in successors(initial(cfg), cfg))


def test_an_expired_leader_keeps_leading_in_its_own_eyes_until_it_re_registers() -> None:
    cfg = named("kip320", max_expiries=1)
    s = apply(initial(cfg), cfg, Step("broker_expire", (0,)))
    assert s is not None and s.ghost.expiries == 1
    assert 0 not in s.zk.live and s.zk.controller == NO_LEADER  # its ephemeral znodes are gone
    assert s.brokers[0].status == UP and s.brokers[0].replicas[0].role == LEADER  # it runs on
    s = apply(s, cfg, Step("controller_elect", (1,)))
    s = apply(s, cfg, Step("elect_leader", (1, 0, 1)))
    assert s is not None and s.zk.partitions[0].leader == 1
    assert s.brokers[0].replicas[0].role == LEADER  # two leaders, one of them stale
    assert apply(s, cfg, Step("broker_expire", (1,))) is None  # the one expiry allowed is spent
    after = apply(s, cfg, Step("broker_reregister", (0,)))
    assert after is not None and 0 in after.zk.live and after.brokers[0].broker_epoch > s.brokers[0].broker_epoch


def test_kip320_holds_with_an_expiry() -> None:
    r = check(named("kip320", records=1, max_crashes=0, max_expiries=1), SearchOptions())
    assert r.holds and r.complete
    without = check(named("kip320", records=1, max_crashes=0), SearchOptions())
    assert r.states > without.states  # the expiry is explored, not a self-loop


@pytest.mark.slow  # about a minute
def test_on_the_design_an_expiry_alone_loses_nothing() -> None:
    """The design's data loss (KAFKA-1211) comes from a restarted broker truncating to its
    HW; an expired broker keeps its memory and re-registers, and at the design's bounds
    without crashes no property breaks."""
    r = check(named("design", max_crashes=0, max_expiries=1), SearchOptions())
    assert r.holds and r.complete and r.states == 35152
