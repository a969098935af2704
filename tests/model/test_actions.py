"""Each action's guard and effect, named after the rule of seed 000 it implements."""

from __future__ import annotations

from model.actions import (
    Step,
    become_follower,
    become_leader,
    broker_crash,
    broker_pause,
    broker_restart,
    broker_resume,
    controller_elect,
    controller_resign,
    elect_leader,
    election_outcomes,
    expand_isr,
    handle_fetch,
    isr_update_failed,
    on_broker_startup,
    produce,
    receive_fetch,
    reject_leader_and_isr,
    repeats_held_decision,
    replica,
    send_fetch,
    shrink_isr,
    truncate,
)
from model.config import named
from model.registry import (
    apply,
)
from model.state import (
    DOWN,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    FETCHING,
    FOLLOWER,
    LEADER,
    NO_LEADER,
    NONE,
    TRUNCATING,
    UP,
    Entry,
    LeaderAndIsr,
    initial,
)

DESIGN = named("design")
K101 = named("kip101")
K320 = named("kip320")
UNCLEAN = named("unclean")


def run(cfg, *steps):
    s = initial(cfg)
    for name, *args in steps:
        t = apply(s, cfg, Step(name, tuple(args)))
        assert t is not None, f"{name}{tuple(args)} not enabled"
        s = t
    return s


def fetch_round(cfg, s, f, p=0):
    s = send_fetch(s, cfg, f, p)
    req = next(m for m in s.fetches if m.kind == FETCH_REQUEST and m.follower == f)
    s = handle_fetch(s, cfg, req)
    resp = next(m for m in s.fetches if m.kind == FETCH_RESPONSE and m.follower == f)
    return receive_fetch(s, cfg, resp)


def test_produce_appends_in_the_leaders_epoch_only_at_the_leader():
    s = initial(DESIGN)
    assert produce(s, DESIGN, 1, 0) is None  # a follower refuses writes
    t = produce(s, DESIGN, 0, 0)
    assert replica(t, 0, 0).log == (Entry(1, 1),)
    assert t.ghost.produced == 1


def test_produce_refused_below_min_insync_replicas():
    cfg = named("design", min_insync=2)
    s = shrink_isr(initial(cfg), cfg, 0, 0, 1)
    assert s is not None and replica(s, 0, 0).isr == (0,)
    assert produce(s, cfg, 0, 0) is None


def test_leader_hw_is_min_leo_of_isr_and_commits():
    s = produce(initial(DESIGN), DESIGN, 0, 0)
    s = fetch_round(DESIGN, s, 1)  # follower copies a, leader learns offset 0
    assert replica(s, 0, 0).hw == 0 and not s.ghost.committed
    s = fetch_round(DESIGN, s, 1)  # fetch at offset 1 tells the leader the follower has a
    assert replica(s, 0, 0).hw == 1
    assert replica(s, 1, 0).hw == 1  # the follower takes the leader's HW
    assert s.ghost.committed == ((0, 0, Entry(1, 1)),)
    assert s.ghost.acked == ((0, 1),)


def test_follower_appends_fetched_records_only_at_its_fetch_offset():
    s = produce(initial(DESIGN), DESIGN, 0, 0)
    s = send_fetch(s, DESIGN, 1, 0)
    assert send_fetch(s, DESIGN, 1, 0) is None  # one outstanding request per fetcher
    req = s.fetches[0]
    s = handle_fetch(s, DESIGN, req)
    resp = s.fetches[0]
    assert resp.records == (Entry(1, 1),)
    s = receive_fetch(s, DESIGN, resp)
    assert replica(s, 1, 0).log == (Entry(1, 1),)
    assert not s.fetches


def test_isr_shrink_is_a_conditional_zk_write():
    s = produce(initial(DESIGN), DESIGN, 0, 0)
    t = shrink_isr(s, DESIGN, 0, 0, 1)
    assert t.zk.partitions[0].isr == (0,) and t.zk.partitions[0].zk_version == 1
    assert replica(t, 0, 0).isr == (0,) and replica(t, 0, 0).zk_version == 1
    assert replica(t, 0, 0).hw == 1  # alone in the ISR, the leader commits at once


def test_caught_up_follower_is_not_shrunk_and_rejoins_the_isr():
    s = fetch_round(DESIGN, initial(DESIGN), 1)  # follower at the leader's LEO
    assert shrink_isr(s, DESIGN, 0, 0, 1) is None
    s2 = shrink_isr(produce(initial(DESIGN), DESIGN, 0, 0), DESIGN, 0, 0, 1)
    s2 = fetch_round(DESIGN, s2, 1)
    s2 = fetch_round(DESIGN, s2, 1)
    t = expand_isr(s2, DESIGN, 0, 0, 1)
    assert t is not None and t.zk.partitions[0].isr == (0, 1)


def test_isr_update_fails_when_zk_version_moved_and_leader_steps_down():
    cfg = named("zombie")
    s = broker_pause(initial(cfg), cfg, 0)  # leader and controller 0 pauses; session expires
    s = controller_elect(s, cfg, 1)
    s = elect_leader(s, cfg, 1, 0, 1)
    s = broker_resume(s, cfg, 0)
    assert replica(s, 0, 0).role == LEADER  # still believes it leads
    assert shrink_isr(s, cfg, 0, 0, 2) is None  # the conditional write cannot succeed
    t = isr_update_failed(s, cfg, 0, 0)
    assert replica(t, 0, 0).role == NONE


def test_crash_keeps_log_and_hw_but_loses_the_session():
    s = produce(initial(DESIGN), DESIGN, 0, 0)
    t = broker_crash(s, DESIGN, 0)
    assert t.brokers[0].status == DOWN and 0 not in t.zk.live and t.zk.controller == NO_LEADER
    assert replica(t, 0, 0).log == (Entry(1, 1),) and replica(t, 0, 0).role == NONE
    one = named("design", max_crashes=1)
    assert broker_crash(broker_crash(s, one, 0), one, 1) is None  # the crash bound


def test_controller_election_bumps_controller_epoch_and_sends_init():
    s = broker_crash(initial(DESIGN), DESIGN, 0)
    assert controller_elect(initial(DESIGN), DESIGN, 1) is None  # /controller exists
    t = controller_elect(s, DESIGN, 1)
    assert t.zk.controller == 1 and t.zk.controller_epoch == 2
    assert t.brokers[1].is_controller and t.brokers[1].controller_epoch == 2


def test_on_broker_change_prefers_live_isr_then_unclean_then_minus_one():
    s = broker_crash(initial(DESIGN), DESIGN, 0)
    assert election_outcomes(s.zk, 0, DESIGN) == [(1, (1,), False)]
    cfg = named("unclean")
    s = run(cfg, ("produce", 0, 0), ("shrink_isr", 0, 0, 1), ("broker_crash", 0))
    assert election_outcomes(s.zk, 0, cfg) == [(1, (1,), True)]
    clean = named("kip320", brokers=2)
    s = run(clean, ("produce", 0, 0), ("shrink_isr", 0, 0, 1), ("broker_crash", 0))
    assert election_outcomes(s.zk, 0, clean) == [(NO_LEADER, (0,), False)]


def test_elect_leader_is_conditional_on_the_acting_controller_epoch():
    s = broker_crash(initial(DESIGN), DESIGN, 0)
    assert elect_leader(s, DESIGN, 1, 0, 1) is None  # 1 is not controller yet
    s = controller_elect(s, DESIGN, 1)
    t = elect_leader(s, DESIGN, 1, 0, 1)
    zn = t.zk.partitions[0]
    assert (zn.leader, zn.leader_epoch, zn.isr, zn.zk_version) == (1, 2, (1,), 1)
    assert any(m.leader == 1 and m.leader_epoch == 2 for m in t.leader_and_isr)


def test_become_leader_takes_isr_and_version_from_the_command():
    s = run(DESIGN, ("broker_crash", 0), ("controller_elect", 1), ("elect_leader", 1, 0, 1))
    m = next(m for m in s.leader_and_isr if m.to == 1 and m.leader == 1)
    t = become_leader(s, DESIGN, m)
    r = replica(t, 1, 0)
    assert (r.role, r.leader_epoch, r.isr, r.zk_version) == (LEADER, 2, (1,), 1)
    assert (0, 2, 1) in t.ghost.led


def _led_by_broker_1(cfg):
    """Broker 1 elected and made leader after broker 0's crash, and the request it took."""
    s = run(cfg, ("broker_crash", 0), ("controller_elect", 1), ("elect_leader", 1, 0, 1))
    m = next(m for m in s.leader_and_isr if m.to == 1)
    return become_leader(s, cfg, m), m


def test_a_repetition_of_the_decision_held_is_taken_silently():
    """The same leader in the leader epoch the replica holds -- the request delivered again,
    or a newer controller's INIT repeating it -- is stale for its epoch, yet no broker
    refuses it: it is no step (no refusal, no second becoming leader)."""
    for cfg in (DESIGN, K320):
        t, m = _led_by_broker_1(cfg)
        for again in (m, m._replace(controller_epoch=m.controller_epoch + 1)):
            assert repeats_held_decision(t, cfg, again), (cfg.name, again)
            assert reject_leader_and_isr(t, cfg, again) is None, (cfg.name, again)
            assert become_leader(t, cfg, again) is None, (cfg.name, again)


def test_a_stale_leader_and_isr_that_repeats_nothing_is_refused():
    """An older leader epoch, another leader in the epoch held, or the decision held sent by
    a deposed controller are refused (a self-loop), never taken as repetitions."""
    t, m = _led_by_broker_1(K320)
    older = m._replace(leader_epoch=m.leader_epoch - 1)
    other_leader = m._replace(leader=2)
    deposed = m._replace(controller_epoch=m.controller_epoch - 1)
    for stale in (older, other_leader, deposed):
        assert not repeats_held_decision(t, K320, stale), stale
        assert reject_leader_and_isr(t, K320, stale) == t, stale
        assert become_leader(t, K320, stale) is None and become_follower(t, K320, stale) is None, stale


def test_design_become_follower_truncates_to_hw():
    s = produce(initial(DESIGN), DESIGN, 0, 0)
    s = fetch_round(DESIGN, s, 1)  # the follower has a, but its hw is still 0
    s = broker_crash(s, DESIGN, 1)
    t = broker_restart(s, DESIGN, 1)
    r = replica(t, 1, 0)
    assert r.role == FOLLOWER and r.log == () and r.fetch_state == FETCHING  # hw was 0


def test_kip101_follower_reconciles_by_epoch_before_fetching():
    s = run(K101, ("produce", 0, 0))
    s = fetch_round(K101, s, 1)
    s = broker_crash(s, K101, 1)
    s = broker_restart(s, K101, 1)
    r = replica(s, 1, 0)
    assert r.fetch_state == TRUNCATING and r.log == (Entry(1, 1),)
    assert send_fetch(s, K101, 1, 0) is None  # no fetching before reconciling
    t = truncate(s, K101, 1, 0)
    assert replica(t, 1, 0).log == (Entry(1, 1),) and replica(t, 1, 0).fetch_state == FETCHING


def test_kip320_fenced_fetch_from_another_epoch_is_refused():
    s = run(K320, ("produce", 0, 0), ("send_fetch", 1, 0))
    req = s.fetches[0]
    stale = req._replace(epoch=0)
    s2 = s._replace(fetches=(stale,))
    t = handle_fetch(s2, K320, stale)
    assert t is not None and not t.fetches  # consumed, nothing answered
    assert replica(t, 0, 0).follower_leo == replica(s2, 0, 0).follower_leo


def test_controller_resigns_when_its_epoch_is_overtaken():
    cfg = named("zombie")
    s = broker_pause(initial(cfg), cfg, 0)
    s = controller_elect(s, cfg, 1)
    s = broker_resume(s, cfg, 0)
    assert s.brokers[0].is_controller and s.brokers[0].status == UP
    t = controller_resign(s, cfg, 0)
    assert not t.brokers[0].is_controller
    assert controller_resign(s, cfg, 1) is None


def test_become_follower_when_already_following_keeps_the_fetcher_in_the_design():
    cfg = named("design", brokers=3)
    s = run(cfg, ("broker_crash", 2))
    s = elect_leader(s, cfg, 0, 0, 0)  # leader stays, ISR loses 2, epoch 2
    m = next(m for m in s.leader_and_isr if m.to == 1)
    t = become_follower(s, cfg, m)
    r = replica(t, 1, 0)
    assert r.leader == 0 and r.leader_epoch == 2 and r.fetch_state == FETCHING


def test_controlled_shutdown_moves_leadership_to_another_isr_member_first():
    cfg = named("kip320", max_shutdowns=1)
    s = initial(cfg)
    from model.actions import broker_stop, controlled_shutdown

    assert broker_stop(s, cfg, 0) is None  # still in a shared ISR: shut down first
    t = controlled_shutdown(s, cfg, 0, 0, 0, 1)
    zn = t.zk.partitions[0]
    assert (zn.leader, zn.leader_epoch, zn.isr) == (1, 2, (1,))
    assert controlled_shutdown(t, cfg, 0, 0, 1, 1) is None  # the last ISR member stays
    u = broker_stop(t, cfg, 0)
    assert u.brokers[0].status == DOWN and u.ghost.shutdowns == 1 and u.ghost.crashes == 0


def test_the_controller_runs_on_broker_startup_once_per_new_registration():
    """Seed 000 E / Kafka's ``onBrokerStartup``: the controller's broker-change watch fires
    when /brokers/ids/b is created, and the controller sends b the current LeaderAndISR --
    once for that registration, not again each time the ISR moves."""
    s = run(K320, ("broker_crash", 1), ("elect_leader", 0, 0, 0), ("broker_restart", 1))
    assert s.brokers[0].new_brokers == (1,)
    t = on_broker_startup(s, K320, 0, 1)
    assert t is not None and t.brokers[0].new_brokers == ()
    zn = t.zk.partitions[0]
    sent = [m for m in t.leader_and_isr if m.to == 1]
    assert [(m.leader, m.leader_epoch, m.isr, m.zk_version) for m in sent] == [(0, zn.leader_epoch, zn.isr, zn.zk_version)]
    assert sent[0].max_broker_epoch == t.zk.broker_epochs[1]
    assert on_broker_startup(t, K320, 0, 1) is None, "a second startup for the same registration"
    assert on_broker_startup(t, K320, 0, 2) is None, "broker 2 never re-registered"


def test_a_registration_gone_before_its_startup_is_not_started():
    """If b's session ends again before the controller handles the event, the live brokers
    it reads no longer include b: nothing is sent (and a later restart is a new event)."""
    s = run(K320, ("broker_crash", 1), ("broker_restart", 1))
    assert s.brokers[0].new_brokers == (1,)
    s = broker_crash(s, K320, 1)
    assert s.brokers[0].new_brokers == () and on_broker_startup(s, K320, 0, 1) is None


def test_a_new_controller_owes_no_startup_its_init_requests_cover_every_broker():
    """A broker that registers while no controller holds /controller is covered by the next
    controller's INIT requests (seed 000 D), and a controller's pending startups die with it."""
    s = run(K320, ("broker_crash", 0), ("broker_restart", 0))  # controller gone: nobody to tell
    assert all(br.new_brokers == () for br in s.brokers)
    s = run(K320, ("broker_crash", 1), ("broker_restart", 1), ("broker_crash", 0))
    assert all(br.new_brokers == () for br in s.brokers)
    t = controller_elect(s, K320, 1)
    assert t is not None and t.brokers[1].new_brokers == ()


def test_a_controller_that_learns_of_a_newer_one_forgets_the_startups_it_owed():
    """Seed 002: a LeaderAndISR from a newer controller epoch tells a broker it is no longer
    controller; what it still owed as controller is the new controller's to cover."""
    s = run(K320, ("broker_crash", 1), ("broker_restart", 1))
    assert s.brokers[0].new_brokers == (1,)
    newer = LeaderAndIsr(0, 0, 0, 2, (0, 1), 1, 2, s.zk.zxid)  # leader 0, epoch 2, controller epoch 2
    t = become_leader(s._replace(leader_and_isr=(newer,)), K320, newer)
    assert t is not None and not t.brokers[0].is_controller and t.brokers[0].new_brokers == ()
    assert on_broker_startup(t, K320, 0, 1) is None
