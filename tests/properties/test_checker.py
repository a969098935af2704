"""The exhaustive checker: verdicts, shortest counterexamples that replay, pinned state counts.

State counts are pinned like the TLA+ Examples repository does: if the model changes, these
numbers change, and the change has to be looked at and the pins updated on purpose.
"""

from __future__ import annotations

import pytest

import properties.checkers.bfs as checker
from model.config import named
from properties.checkers.bfs import SearchOptions, check, replay
from properties.safety import all_violations
from tests.pinned import pinned
from tests.searched import searched

# (configuration, overrides) -> distinct states with symmetry reduction (docs/pinned-counts.md)
PINNED_EXHAUSTIVE = {(name, ()): pinned(name, "default", "states") for name in ("kip101", "kip279", "kip320")}
DESIGN_STEPS = pinned("design", "default", "counterexample steps")


# Searches several tests read, each run once per test process (tests.searched): a result
# is only read, never changed, so sharing it proves what running it again would
@pytest.fixture(scope="module")
def design_result():
    return searched(named("design"))


@pytest.fixture(scope="module")
def zombie_result():
    return searched(named("zombie"))


@pytest.fixture(scope="module")
def kip320_one_crash_result():
    return searched(named("kip320", max_crashes=1))


def test_design_finds_committed_record_loss(design_result):
    v = design_result.violation
    assert v is not None
    assert v.property == "committed_durable"
    assert "acked_durable" in v.properties


def test_design_counterexample_is_shortest_and_pinned(design_result):
    v = design_result.violation
    assert len(v.steps) == DESIGN_STEPS
    assert design_result.states == pinned("design", "default", "states")  # reached before it stopped
    actions = [s.action for s, _ in v.steps]
    assert "broker_restart" in actions and actions[-1] == "elect_leader"
    assert any("truncates log to hw=0: [a@1] → []" in d for _, d in v.steps)


def test_design_counterexample_replays_step_by_step(design_result):
    v = design_result.violation
    cfg = named("design")
    states = replay(cfg, [s for s, _ in v.steps])
    assert states == v.states
    assert all_violations(states[-2], states[-1])
    assert not any(all_violations(a, b) for a, b in zip(states, states[1:-1], strict=False))


def test_counterexample_text_is_a_numbered_step_list(design_result):
    text = design_result.violation.text()
    assert "VIOLATION of committed_durable" in text
    assert "\n  1. client writes a@1 to leader 0" in text
    assert "\n 11. controller 1 writes partition 0: leader 1" in text


def test_unclean_election_loses_an_acknowledged_write_and_says_so():
    r = check(named("unclean"))
    v = r.violation
    assert v is not None and "acked_durable" in v.properties
    assert v.label == "unclean-election loss"
    assert len(v.steps) == pinned("unclean", "default", "counterexample steps")
    assert "UNCLEAN election" in v.steps[-1][1]


def test_without_unclean_election_no_acknowledged_write_is_lost():
    r = check(named("unclean", unclean=False))
    assert r.holds and r.complete


# kip320's space, the headline verdict, stays in the default suite; the slow suite checks
# kip101's and kip279's, the largest (zombie's count: the plain check of
# tests/model/test_cli_check.py, which exhausts it; its verdict has its own quick test)
@pytest.mark.parametrize("key", [k if k[0] == "kip320" else pytest.param(k, marks=pytest.mark.slow)
                                 for k in sorted(PINNED_EXHAUSTIVE)])
def test_default_bounds_of_the_fixes_exhaust_with_every_property_holding(key):
    name, overrides = key
    r = check(named(name, **dict(overrides)))
    assert r.holds
    assert r.states == PINNED_EXHAUSTIVE[key]


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_symmetry_reduction_shrinks_the_space_without_changing_the_verdict():
    cfg = named("kip320", max_crashes=1)
    reduced = check(cfg, SearchOptions(symmetry=True))
    full = check(cfg, SearchOptions(symmetry=False))
    assert reduced.holds and full.holds
    assert reduced.states < full.states
    bad = named("design")
    assert len(check(bad, SearchOptions(symmetry=False)).violation.steps) == len(check(bad).violation.steps)


def test_parallel_search_visits_the_same_states(monkeypatch, kip320_one_crash_result):
    cfg = named("kip320", max_crashes=1)
    serial = kip320_one_crash_result
    monkeypatch.setattr(checker, "PARALLEL_THRESHOLD", 10)
    monkeypatch.setattr(checker, "CHUNK", 50)
    parallel = check(cfg, SearchOptions(workers=2))
    assert parallel.states == serial.states and parallel.holds


@pytest.mark.parametrize("workers", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_parallel_search_stops_at_the_same_shortest_counterexample(monkeypatch, workers, design_result):
    """Workers forked per level report the level's results in the serial order, so the
    search stops where the serial one does: same path, same counts."""
    cfg = named("design")
    serial = design_result
    monkeypatch.setattr(checker, "PARALLEL_THRESHOLD", 10)
    monkeypatch.setattr(checker, "CHUNK", 20)
    parallel = check(cfg, SearchOptions(workers=workers))
    assert [step for step, _ in parallel.violation.steps] == [step for step, _ in serial.violation.steps]
    assert (parallel.states, parallel.transitions) == (serial.states, serial.transitions)


def test_max_states_makes_the_result_inconclusive():
    r = check(named("kip320"), SearchOptions(max_states=100))
    assert not r.complete and not r.holds and r.violation is None
    assert r.stopped_by == "max_states"


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_max_depth_checks_every_run_of_that_length_and_no_longer():
    """The design's loss is 11 steps deep: a search bounded at 10 steps sees none of it and
    says so (inconclusive, not "holds"); one bounded at 11 finds the same shortest
    counterexample as the unbounded search; and the states counted within a bound are the
    unbounded search's first levels."""
    cfg = named("design")
    full = check(cfg)
    short = check(cfg, SearchOptions(max_depth=DESIGN_STEPS - 1))
    assert short.violation is None and not short.holds and short.stopped_by == "max_depth"
    assert short.depth == DESIGN_STEPS - 1 and short.states < full.states
    enough = check(cfg, SearchOptions(max_depth=DESIGN_STEPS))
    assert enough.violation is not None and len(enough.violation.steps) == len(full.violation.steps) == DESIGN_STEPS
    assert enough.states == full.states
    assert check(cfg, SearchOptions(max_depth=DESIGN_STEPS - 2)).states < short.states


def test_zombie_leader_accepts_writes_but_cannot_commit_them(zombie_result):
    """Seed 000 question 3, exhaustively: the paused leader does take writes after resuming
    (so the property is not vacuous) and never commits one."""
    from model.actions import Step
    from model.registry import apply

    cfg = named("zombie")
    s = replay(cfg, [Step("broker_pause", (0,)), Step("controller_elect", (1,)), Step("elect_leader", (1, 0, 1))])[-1]
    m = next(m for m in s.leader_and_isr if m.to == 1 and m.leader == 1)
    s = apply(s, cfg, Step("become_leader", (m,)))
    s = apply(s, cfg, Step("broker_resume", (0,)))
    s = apply(s, cfg, Step("produce", (0, 0)))
    assert s.ghost.zombie_appends == ((0, 1),)
    assert zombie_result.holds


def test_without_the_conditional_isr_write_the_zombie_commits(monkeypatch):
    """The property would notice if the design's argument broke: make the leader's ISR
    update unconditional and the checker finds the zombie committing."""
    import model.actions as actions
    import model.actions.replication as replication_rules

    def unconditional(s, cfg, b, p, isr):
        lr = actions.replica(s, b, p)
        zn = s.zk.partitions[p]
        s = actions.set_znode(s, p, zn._replace(isr=isr, zk_version=zn.zk_version + 1))
        s = actions.set_replica(s, b, p, lr._replace(isr=isr, zk_version=zn.zk_version + 1))
        return actions.advance_hw(s, cfg, b, p)

    monkeypatch.setattr(replication_rules, "_conditional_isr_write", unconditional)
    r = check(named("zombie"))
    assert r.violation is not None
    # the zombie's unconditional write clobbers the ISR the controller wrote
    assert r.violation.properties == ["isr_well_formed"]
    assert any(s.action == "broker_resume" for s, _ in r.violation.steps)


def test_a_zombie_that_could_shrink_its_isr_alone_would_commit_and_the_property_says_so(monkeypatch):
    """``zombie_cannot_commit`` itself: if a superseded leader's ISR shrink needed no
    ZooKeeper write at all, the zombie would commit its late write by itself -- and the
    property (with the durability ones) names it."""
    import model.actions as actions
    import model.actions.replication as replication_rules
    from model.actions import Step
    from model.registry import apply
    from model.state import initial
    from properties.safety import all_violations

    def local_only(s, cfg, b, p, isr):
        return actions.advance_hw(actions.set_replica(s, b, p, actions.replica(s, b, p)._replace(isr=isr)), cfg, b, p)

    cfg = named("zombie")
    s = initial(cfg)

    def lai(s):
        epoch = s.zk.partitions[0].leader_epoch
        return (next(m for m in s.leader_and_isr if m.to == 1 and m.leader == 1 and m.leader_epoch == epoch),)

    script = [("broker_pause", (0,)), ("controller_elect", (1,)), ("elect_leader", (1, 0, 1)),
              ("become_leader", None), ("broker_resume", (0,)), ("produce", (0, 0)), ("shrink_isr", (0, 0, 1))]
    broken: list[str] = []
    for patched in (False, True):
        if patched:
            monkeypatch.setattr(replication_rules, "_conditional_isr_write", local_only)
        s = initial(cfg)
        for action, args in script:
            t = apply(s, cfg, Step(action, args or lai(s)))
            if t is None:
                break
            broken = [name for name, _ in all_violations(s, t)]
            s = t
        if not patched:  # as designed: the zombie's conditional write fails, nothing breaks
            assert broken == [] and s.ghost.zombie_commits == ()
    assert "zombie_cannot_commit" in broken and s.ghost.zombie_commits == ((0, 1),)


def test_without_epoch_fencing_a_broker_acts_on_a_request_for_its_older_incarnation(zombie_result):
    """Seed 003's e0 -> e1 -> e2 story: a request computed before the broker re-registered
    arrives after it; with fencing off it is acted on, with fencing on it is refused."""
    r = check(named("zombie", fence_controller_epoch=False, fence_broker_epoch=False))
    assert r.violation is not None and r.violation.property == "single_controller"
    assert any(s.action == "broker_reregister" for s, _ in r.violation.steps)
    assert zombie_result.holds


@pytest.mark.slow
def test_controlled_shutdown_keeps_every_property():
    r = check(named("kip320", max_shutdowns=1, max_crashes=0))
    assert r.states > 1000  # the shutdown is explored, not vacuous
    assert r.holds


def test_the_reduction_is_opt_in_keeps_the_verdict_and_explores_fewer_states(kip320_one_crash_result):
    """The partial-order reduction is opt-in: without it every pinned count above stands
    (test_reduction.py pins the reduced counts and compares what the two searches reach)."""
    cfg = named("kip320", max_crashes=1)
    full, reduced = kip320_one_crash_result, searched(cfg, SearchOptions(reduction=True))
    assert full.holds and reduced.holds and not full.reduction and reduced.reduction
    assert reduced.states < full.states


def test_the_search_runs_without_the_cycle_collector_and_restores_it(monkeypatch):
    """States hold no reference cycles, so the search switches the collector off (it would
    re-scan the levels held, about a quarter of the time at three brokers) -- and on again
    afterwards, also when it stops at a violation."""
    import gc

    import properties.checkers.bfs as checker

    seen: list[bool] = []
    real = checker.successors

    def spy(s, cfg):
        seen.append(gc.isenabled())
        return real(s, cfg)

    monkeypatch.setattr(checker, "successors", spy)
    assert gc.isenabled()
    check(named("kip320", max_crashes=0, records=1), SearchOptions(max_states=500))
    assert seen and not any(seen) and gc.isenabled()
    r = check(named("design"))
    assert r.violation is not None and gc.isenabled()
