"""The z3 encoding (``properties.checkers.symbolic``): proofs succeed, BMC's counterexample replays in the
explicit model, the fixed configuration has none, and -- what keeps the two models from
drifting apart -- on states the explicit model reaches, the z3 relation allows exactly the
explicit successors and every property evaluates the same.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
import z3

from model.actions import Step
from model.config import named
from properties.checkers.bfs import replay
from properties.checkers.scenarios import play
from properties.checkers.symbolic import (
    COVERED,
    Encoding,
    bmc,
    differential,
    proofs,
    prove,
    sample_states,
)
from properties.safety import all_violations


class _CutsBelowTheHw(Encoding):
    """A broken truncation rule: the follower truncates its whole log, committed records too."""

    def _truncation_point(self, s: dict, f: int, ld: int):
        return z3.IntVal(0)


# the durability formulas the broken truncation breaks, and the goals that lean on them: the
# base lemmas are not about the cut, and proving them too took ~4x the time for no assertion
_BROKEN_BY_THE_CUT = ("committed_durable", "acked_durable", "isr_holds_committed", "truncation_keeps_common_prefix")


def test_a_truncation_below_the_hw_fails_the_durability_proof_with_a_readable_cti():
    verdicts = {v.name: v for v in prove(named("kip320"), 2, encoding=_CutsBelowTheHw, only=_BROKEN_BY_THE_CUT)}
    assert verdicts["committed_durable"].status != "proved" and verdicts["acked_durable"].status != "proved"
    by_truncate = [v for v in verdicts.values() if v.status == "failed" and "truncate" in v.detail]
    assert {"isr_holds_committed", "truncation_keeps_common_prefix"} <= {v.name for v in by_truncate}
    cut = verdicts["truncation_keeps_common_prefix"]
    assert cut.detail == "not preserved by: truncate"
    text = "\n".join(cut.cti)
    assert "pre-state:" in text and "action: truncate(" in text and "post-state (what changed):" in text
    assert "log [] leo 0" in text.split("post-state (what changed):")[1]  # the follower's log, cut to nothing


def test_proofs_at_three_brokers():
    base = {*proofs.LEMMAS, *proofs.STATE_GOALS, *proofs.STEP_GOALS}
    verdicts = prove(named("kip101"), 3, with_durability=False)
    assert {v.name for v in verdicts} == base and all(v.status == "proved" for v in verdicts)


# BMC starts after the first 7 steps of the KAFKA-1211 scenario (the record committed, the
# follower crashed); every interleaving of the next 4 steps is then searched.  Solver time
# grows ~5x per depth, so this keeps the CI run in seconds (``epochal prove`` goes deeper).
PREFIX = 7


def _prefix(cfg):
    out = play("kafka_1211", cfg)
    return [s for s, _ in out.steps[:PREFIX]], out.states[PREFIX]


def test_bmc_design_counterexample_replays():
    cfg = named("design")
    prefix, start = _prefix(cfg)
    k, steps, times = bmc(cfg, 4, start=start)
    assert k == 4 and len(times) == 4
    states = replay(cfg, prefix + steps)
    names = [n for n, _ in all_violations(states[-2], states[-1])]
    assert "committed_durable" in names


def test_bmc_kip320_none():
    cfg = named("kip320")
    prefix, start = _prefix(cfg)
    k, _, times = bmc(cfg, 4, start=start)
    assert k is None and len(times) == 4


@pytest.mark.parametrize("name", ["design", "kip320"])  # 300 states each: test_differential_deep
def test_differential(name):
    cfg = named(name)
    states = sample_states(cfg, 40)
    assert differential(cfg, states) == []


@functools.cache
def _unclean_elections(cfg, count):
    """``count`` reachable states of ``cfg`` from which an unclean election is a step (no
    live ISR member: a live replica outside it may lead), spread over the first 5,000."""
    from model.registry import successors

    found = [s for s in sample_states(cfg, 5000)
             if any(0 in t.ghost.unclean and 0 not in s.ghost.unclean for _, t in successors(s, cfg))]
    return found[::max(1, len(found) // count)][:count]


def test_differential_of_unclean_election():
    """With unclean election on, the relation's elections are the model's: on states that
    allow an unclean one, and on an even spread of the configuration's states."""
    cfg = named("unclean")
    unclean = _unclean_elections(cfg, 8)
    assert len(unclean) == 8, "too few states allow an unclean election: the check would hold vacuously"
    assert differential(cfg, [*unclean, *sample_states(cfg, 8)]) == []


class _CleanElectionsOnly(Encoding):
    """Ignores ``unclean.leader.election.enable``: a partition with no live ISR member stays leaderless."""

    def __init__(self, shape, params):
        super().__init__(shape, replace(params, unclean=False))


def test_the_differential_check_catches_a_relation_without_unclean_election():
    cfg = named("unclean")
    problems = differential(cfg, _unclean_elections(cfg, 8)[:3], encoding=_CleanElectionsOnly)
    assert any("explicit step elect_leader" in p for p in problems)


UNCLEAN_PREFIX = [Step("produce", (0, 0)), Step("shrink_isr", (0, 0, 1))]


def _unclean_prefix():
    """Leader 0 has written a record and taken follower 1, which lacks it, out of the ISR."""
    return replay(named("unclean"), UNCLEAN_PREFIX)[-1]


def test_bmc_finds_the_unclean_election_loss():
    """Three steps on -- leader 0 crashes, 1 takes the controller, elects itself uncleanly --
    the committed record is lost; the same steps with clean elections only lose nothing."""
    cfg = named("unclean")
    k, steps, _ = bmc(cfg, 3, start=_unclean_prefix())
    assert k == 3 and steps[-1].action == "elect_leader"
    states = replay(cfg, [*UNCLEAN_PREFIX, *steps])
    assert {n for n, _ in all_violations(states[-2], states[-1])} >= {"committed_durable", "acked_durable"}
    assert 0 in states[-1].ghost.unclean
    assert bmc(named("kip320"), 3, start=_unclean_prefix())[0] is None


# The actions a configuration turns on by a knob, each held to the model on states where it
# is enabled (a deep prefix enables some, which an even spread of samples rarely meets) and
# on an even spread of the configuration's states (where the others interleave with it).
KNOBBED = [
    ("zombie", {}, "broker_pause"),
    ("zombie", {}, "broker_resume"),
    ("zombie", {}, "broker_reregister"),
    ("kip320", {"max_expiries": 1}, "broker_expire"),
    ("kip320", {"preferred_elections": 1}, "preferred_election"),
    ("kip320", {"max_shutdowns": 1}, "controlled_shutdown"),
    ("kip320", {"max_shutdowns": 1}, "broker_stop"),
    ("kip320", {"max_shutdowns": 1}, "stop_replica"),
    ("kip320", {"max_shutdowns": 1, "brokers": 3, "max_crashes": 1}, "controlled_shutdown"),  # electing among two
]


@pytest.mark.slow  # 5-10 s each (30 s at three brokers): 10,000 states explored to find those that enable it
@pytest.mark.parametrize(("name", "knobs", "action"), KNOBBED,
                         ids=[a + ("-3" if k.get("brokers") == 3 else "") for _, k, a in KNOBBED])
def test_differential_of_a_knobbed_action(name, knobs, action):
    cfg = named(name, **knobs)
    enabled = sample_states(cfg, 12, explore=10000, enabling=action)
    assert len(enabled) == 12, f"too few states enable {action}: the check would hold vacuously"
    assert differential(cfg, enabled + sample_states(cfg, 12)) == []


class _WrongPreferred(Encoding):
    """Moves the leadership to broker 1 rather than the preferred replica."""

    def preferred_election(self, s, c):
        d = super().preferred_election(s, c)
        d.post[("ldr",)] = z3.IntVal(1)
        return d


class _ForgetsWhoIsShuttingDown(Encoding):
    """The controller does not note that the broker is shutting down."""

    def controlled_shutdown(self, s, c, b, leader, write):
        d = super().controlled_shutdown(s, c, b, leader, write)
        d.post[("sd", c, b)] = s[("sd", c, b)]
        return d


@pytest.mark.slow
@pytest.mark.parametrize(("knobs", "action", "mutant"), [
    ({"preferred_elections": 1}, "preferred_election", _WrongPreferred),
    ({"max_shutdowns": 1}, "controlled_shutdown", _ForgetsWhoIsShuttingDown),
], ids=["preferred_election", "controlled_shutdown"])
def test_the_differential_check_catches_a_mutated_knobbed_action(knobs, action, mutant):
    """Not vacuous: a relation whose knobbed action is wrong disagrees with the model."""
    cfg = named("kip320", **knobs)
    states = sample_states(cfg, 4, explore=10000, enabling=action)
    assert any(action in p for p in differential(cfg, states, encoding=mutant))


ALTER = ("propose_isr", "alter_partition", "apply_isr")


@functools.cache
def _alter_partition_states():
    """Of the first 5,000 states with AlterPartition on: 2 enabling each of its actions, and
    those where a leader's HW waits on a follower only its unanswered proposal adds (the
    maximal ISR), behind records it has not committed."""
    from model.registry import ACTIONS
    from model.state import LEADER

    cfg = named("kip320", alter_partition=1)
    states = sample_states(cfg, 5000, explore=5000)

    def enables(s, action):
        entry = ACTIONS[action]
        return any(entry.fn(s, cfg, *args) not in (None, s) for args in entry.args(s, cfg))

    def waits_on_proposal(s):
        return any(r.role == LEADER and m.leader_epoch == r.leader_epoch and set(m.isr) - set(r.isr) and r.hw < r.leo
                   for m in s.alter_partition for r in [s.brokers[m.leader].replicas[0]])

    chosen = {}
    for action in ALTER:
        enabled = [s for s in states if enables(s, action)]
        chosen[action] = enabled[::max(1, len(enabled) // 2)][:2]
    chosen["maximal_isr"] = [s for s in states if waits_on_proposal(s)]
    return cfg, chosen


def test_differential_of_alter_partition():
    """With AlterPartition on, the relation's proposals, controller writes and answers are
    the model's, and so is the HW that waits on the maximal ISR."""
    cfg, chosen = _alter_partition_states()
    assert [len(chosen[a]) for a in ALTER] == [2, 2, 2] and chosen["maximal_isr"], "the check would hold vacuously"
    assert differential(cfg, [s for states in chosen.values() for s in states]) == []


class _HwIgnoresTheProposal(Encoding):
    """The leader's HW waits on its ISR alone, not the ISR it proposed (no maximal ISR)."""

    def proposed(self, t, b, x):
        return z3.BoolVal(False)


def test_the_differential_check_catches_a_hw_that_ignores_the_proposed_isr():
    cfg, chosen = _alter_partition_states()
    assert any("not allowed by the z3 relation" in p for p in differential(cfg, chosen["maximal_isr"], encoding=_HwIgnoresTheProposal))


def test_alter_partition_messages_decode_as_the_model_sent_them():
    """What BMC's counterexample replays: each message of the encoded set, decoded, is one
    the explicit state has in flight, and every one is found."""
    from properties.checkers.symbolic.state import Shape, alter_decode, encode

    cfg, chosen = _alter_partition_states()
    s = chosen["apply_isr"][0]
    shape = Shape.of(cfg)
    sol, m = z3.Solver(), z3.Const("m", shape.alt)
    sol.add(encode(shape, s)[("alt",)][m])
    found = []
    while sol.check() == z3.sat and len(found) <= len(s.alter_partition):
        found.append(alter_decode(shape, sol.model(), m, s.zk.partitions[0].topic_id))
        sol.add(m != sol.model().eval(m, model_completion=True))
    assert sorted(found) == sorted(s.alter_partition) and found


DELETION_ACTIONS = ("delete_topic", "create_topic", "stop_replica")


@functools.cache
def _deletion_states():
    """Of the first 4,000 states with a topic deletion: 2 enabling each of the deletion, the
    re-creation and a deletion's StopReplica (the differential takes one), and 2 of each kind where the topic's identity
    decides a step -- a LeaderAndISR of a newer incarnation to a replica with records of an
    older one, a fetch of another incarnation than its receiver's, a broker down while the
    topic is gone."""
    from model.actions.commands import stale_reason
    from model.registry import ACTIONS
    from model.state import DOWN, EPOCH_DURING_DELETE

    cfg = named("kip320", deletions=1)
    states = sample_states(cfg, 4000, explore=4000)

    def enables(s, action):
        entry = ACTIONS[action]
        return any(entry.fn(s, cfg, *args) not in (None, s) for args in entry.args(s, cfg)
                   if action != "stop_replica" or args[0].leader_epoch == EPOCH_DURING_DELETE)

    def tid(s, b):
        return s.brokers[b].replicas[0].topic_id

    kinds = {action: functools.partial(lambda a, s: enables(s, a), action)
             for action in DELETION_ACTIONS}
    kinds["takes_a_newer_incarnation"] = lambda s: any(
        m.topic_id > tid(s, m.to) and s.brokers[m.to].replicas[0].log and stale_reason(s, cfg, m) is None
        for m in s.leader_and_isr)
    kinds["fetch_of_another_incarnation"] = lambda s: any(
        m.topic_id != tid(s, m.leader if m.kind == 0 else m.follower) for m in s.fetches)
    kinds["down_while_deleted"] = lambda s: not s.zk.partitions[0].ar and any(b.status == DOWN for b in s.brokers)
    chosen = {}
    for kind, f in kinds.items():
        found = [s for s in states if f(s)]
        chosen[kind] = found[::max(1, len(found) // 2)][:2]
    return cfg, chosen


def _deletion_sample(chosen):
    """One state enabling each deletion action, both of each kind the identity decides."""
    return [s for kind, states in chosen.items() for s in (states[:1] if kind in DELETION_ACTIONS else states)]


def test_differential_of_topic_deletion():
    """With topic deletions on, the relation's deletions, re-creations and deletion
    StopReplicas are the model's, and so is every step where the topic's identity decides
    (an older incarnation's replica deleted first, a request or fetch of another one fenced)."""
    cfg, chosen = _deletion_states()
    assert all(len(states) == 2 for states in chosen.values()), "the check would hold vacuously"
    assert differential(cfg, _deletion_sample(chosen)) == []


def test_differential_of_knobbed_actions_on_a_re_created_topic():
    """A controlled shutdown and a preferred election of a re-created topic -- whose AR the
    re-creation chose, so its preferred replica need not be broker 0 -- are the model's."""
    from model.registry import ACTIONS

    cfg = named("kip320", deletions=1, max_shutdowns=1, preferred_elections=1)
    reborn = [s for s in sample_states(cfg, 5000, explore=5000) if s.zk.partitions[0].topic_id == 1]
    chosen = []
    for action in ("controlled_shutdown", "preferred_election"):
        entry = ACTIONS[action]
        chosen += [s for s in reborn if any(entry.fn(s, cfg, *args) not in (None, s) for args in entry.args(s, cfg))][:2]
    assert len(chosen) == 4, "the check would hold vacuously"
    assert differential(cfg, chosen) == []


class _KeepsTheOlderIncarnation(Encoding):
    """A replica of an older incarnation takes a newer one's LeaderAndISR with its log kept
    (no ``for_incarnation``): the old records would come back under the new topic."""

    def take_incarnation(self, t, b, tid):
        if tid is not None:
            t[("rtid", b)] = tid


def test_the_differential_check_catches_a_replica_that_keeps_an_older_incarnation():
    cfg, chosen = _deletion_states()
    problems = differential(cfg, chosen["takes_a_newer_incarnation"], encoding=_KeepsTheOlderIncarnation)
    assert any("not allowed by the z3 relation" in p for p in problems)


def test_deletion_requests_decode_as_the_model_sent_them():
    """What BMC's counterexample replays: each deletion StopReplica and LeaderAndISR of the
    encoded sets, decoded, is one the explicit state has in flight, topic id and all."""
    from properties.checkers.symbolic.state import Shape, encode, req_decode, stop_decode

    cfg, chosen = _deletion_states()
    s = next(s for s in chosen["stop_replica"] if s.leader_and_isr)
    shape = Shape.of(cfg)
    state = encode(shape, s)
    stops = []
    for b in range(cfg.brokers):
        sol, m = z3.Solver(), z3.Const(f"stop{b}", shape.stop)
        sol.add(state[("stops", b)][m])
        while sol.check() == z3.sat and len(stops) <= len(s.stop_replica):
            stops.append(stop_decode(shape, sol.model(), m, b))
            sol.add(m != sol.model().eval(m, model_completion=True))
    sol, q = z3.Solver(), z3.Const("lai", shape.req)
    sol.add(state[("lai",)][q])
    requests = []
    while sol.check() == z3.sat and len(requests) <= len(s.leader_and_isr):
        requests.append(req_decode(shape, sol.model(), q))
        sol.add(q != sol.model().eval(q, model_completion=True))
    assert sorted(stops) == sorted(s.stop_replica) and any(m.delete for m in stops)
    assert sorted(requests) == sorted(s.leader_and_isr)


REASSIGNMENT_ACTIONS = ("reassign_start", "reassign_complete", "stop_replica")


@functools.cache
def _reassignment_states(name: str):
    """Of the first 3,000 states of ``name`` with a reassignment: 2 enabling each of the
    start (a new move or the pending one restarted), the completion and a reassignment's
    StopReplica (delete, of a leader epoch)."""
    from model.registry import ACTIONS
    from model.state import EPOCH_DURING_DELETE

    cfg = named(name, reassignments=1)
    states = sample_states(cfg, 3000, explore=3000)

    def enables(s, action):
        entry = ACTIONS[action]
        return any(entry.fn(s, cfg, *args) not in (None, s) for args in entry.args(s, cfg)
                   if action != "stop_replica" or (args[0].delete and args[0].leader_epoch != EPOCH_DURING_DELETE))

    return cfg, {action: [s for s in states if enables(s, action)][:2] for action in REASSIGNMENT_ACTIONS}


@pytest.mark.parametrize("name", ["kip320", "zombie"])
def test_differential_of_reassignment(name):
    """With reassignments on, the relation's reassignment starts and completions and a
    reassignment's StopReplica are the model's, and so is every other step from those states
    (elections, LeaderAndISR and ISR expansion reading the moved AR)."""
    cfg, chosen = _reassignment_states(name)
    assert all(len(states) == 2 for states in chosen.values()), "the check would hold vacuously"
    assert differential(cfg, [s for states in chosen.values() for s in states]) == []


class _KeepsTheRemovedReplicasInTheIsr(Encoding):
    """A completion that switches AR and leader to RAR but leaves the ISR as it was: a
    replica the move removed would still count towards commits."""

    def reassign_complete(self, s, c, leader):
        d = super().reassign_complete(s, c, leader)
        for x in range(self.n):
            d.post[("isr", x)] = s[("isr", x)]
        return d


def test_the_differential_check_catches_a_completion_that_keeps_the_removed_replicas_in_the_isr():
    cfg, chosen = _reassignment_states("kip320")
    problems = differential(cfg, chosen["reassign_complete"], encoding=_KeepsTheRemovedReplicasInTheIsr)
    assert any("reassign_complete" in p and "not allowed by the z3 relation" in p for p in problems)


def test_a_reassignment_keeps_one_incarnation_and_the_isr_within_the_ar_by_induction():
    """With reassignments (and no deletions) the topic's identity has one incarnation, so
    the durability tier's lemmas read it as before, and the ISR stays within the moving AR
    -- for every number of moves; a completion keeping the removed replicas in the ISR
    does not keep it within the AR."""
    cfg = named("kip320", reassignments=1)
    goals = ("one_incarnation", "isr_well_formed")
    assert {v.name: v.status for v in prove(cfg, 2, with_durability=False, only=goals)} == dict.fromkeys(goals, "proved")
    broken = prove(cfg, 2, with_durability=False, only=goals[1:], encoding=_KeepsTheRemovedReplicasInTheIsr)
    assert [v.status for v in broken] == ["failed"] and "reassign_complete" in broken[0].detail


def _removed_replica_states(count: int):
    """Reachable states of kip320 with one reassignment where the moved-off replica
    matters: ``count`` each with a reassignment's StopReplica in flight, with a broker down
    outside the AR (its restart deletes its copy), and with a broker outside the AR that has
    no role but a fetch still in flight or counted by a leader."""
    from model.state import DOWN, EPOCH_DURING_DELETE, NONE, UNKNOWN

    cfg, _ = _reassignment_states("kip320")
    states = sample_states(cfg, 3000, explore=3000)
    zn = lambda s: s.zk.partitions[0]  # noqa: E731
    outside = lambda s: [b for b in range(cfg.brokers) if zn(s).ar and b not in zn(s).ar]  # noqa: E731
    kinds = {
        "stop in flight": lambda s: any(m.delete and m.leader_epoch != EPOCH_DURING_DELETE for m in s.stop_replica),
        "down outside the AR": lambda s: any(s.brokers[b].status == DOWN for b in outside(s)),
        "stale fetch of a removed replica": lambda s: any(
            s.brokers[b].replicas[0].role == NONE
            and (any(m.follower == b for m in s.fetches)
                 or any(br.replicas[0].follower_leo[b] != UNKNOWN for br in s.brokers)) for b in outside(s)),
    }
    return cfg, {kind: [s for s in states if pick(s)][:count] for kind, pick in kinds.items()}


def test_the_durability_lemmas_hold_where_a_reassignment_removed_a_replica():
    """Every formula of the durability tier -- ``removed_replicas_stay_out`` and
    ``broker_epochs_issued`` among them -- holds on reachable states where a replica the
    move removed is being deleted, restarts outside the AR, or has a fetch still in flight:
    no lemma is false of the model."""
    from properties.checkers.symbolic.proofs import holds
    from properties.checkers.symbolic.state import Shape, encode

    cfg, chosen = _removed_replica_states(3)
    assert all(len(states) == 3 for states in chosen.values()), "the check would hold vacuously"
    shape = Shape.of(cfg)
    false = [(name, s) for states in chosen.values() for s in states
             for name, (_, f) in proofs.durability_tier(cfg).items() if not holds(f(shape, encode(shape, s)))]
    assert false == []


def assert_lemma_carries(monkeypatch, cfg, lemma: str, goals: tuple[str, ...], actions: tuple[str, ...],
                         fails_at: str) -> None:
    """``goals`` are proved across ``actions`` with ``lemma`` among the assumptions, and each
    fails at ``fails_at`` without it: the lemma is what carries them there."""
    from properties.checkers.symbolic import durability

    assert {v.name: v.status for v in prove(cfg, 2, only=goals, actions=actions)} == dict.fromkeys(goals, "proved")
    monkeypatch.delitem(durability.LEMMAS, lemma)
    without = {v.name: v.detail for v in prove(cfg, 2, only=goals, actions=actions)}
    assert all(fails_at in without[name] for name in goals), without


def test_durability_with_a_reassignment_leans_on_the_removed_replicas_staying_out(monkeypatch):
    """With one reassignment the durability tier is proved (``epochal prove --config kip320
    --reassignments 1`` answers 0; docs/benchmarks.md); the ISR holding every committed
    record and a leader's view of a follower's log survive the removed replica's
    StopReplica because of ``removed_replicas_stay_out``: without it both fail there."""
    assert_lemma_carries(monkeypatch, named("kip320", reassignments=1), "removed_replicas_stay_out",
                         goals=("isr_holds_committed", "follower_prefix"), actions=("stop_replica",), fails_at="stop_replica")


def test_the_durability_lemmas_hold_across_incarnations():
    """Every formula of the durability tier, as ``prove`` states it with deletions (of the
    current incarnation's view, ``incarnation_settled`` of the state), holds on reachable
    states of kip320 with a deletion: the deepest one each where a re-creation is a step, where a
    deletion's StopReplica is in flight, where the topic exists beside a replica of an
    older incarnation, and where a follower of the current one follows such a replica (a
    stray leader: ``stray_leaders_commit_nothing``)."""
    from model.registry import ACTIONS
    from model.state import DELETED, EPOCH_DURING_DELETE, FOLLOWER
    from properties.checkers.symbolic.proofs import holds
    from properties.checkers.symbolic.state import Shape, encode

    cfg = named("kip320", deletions=1)
    states = sample_states(cfg, 8000, explore=8000)
    create = ACTIONS["create_topic"]
    kinds = {
        "re-creation": [s for s in states if any(create.fn(s, cfg, *args) is not None for args in create.args(s, cfg))],
        "deletion in flight": [s for s in states if any(m.leader_epoch == EPOCH_DURING_DELETE for m in s.stop_replica)],
        "older replica": [s for s in states if s.zk.partitions[0].ar and any(
            br.replicas[0].topic_id < s.zk.partitions[0].topic_id for br in s.brokers)],
        "follower of a stray leader": [s for s in states if _follows_a_stray_leader(s, DELETED, FOLLOWER)],
    }
    kinds = {kind: chosen[-1:] for kind, chosen in kinds.items()}  # the deepest
    assert all(len(chosen) == 1 for chosen in kinds.values()), "the check would hold vacuously"
    shape = Shape.of(cfg)
    false = [(name, s) for chosen in kinds.values() for s in chosen
             for name, (_, f) in proofs.durability_tier(cfg).items() if not holds(f(shape, encode(shape, s)))]
    assert false == []


def _follows_a_stray_leader(s, deleted: int, follower: int) -> bool:
    """A replica of the topic's current incarnation follows one of an older incarnation."""
    p = s.zk.partitions[0]
    replicas = [br.replicas[0] for br in s.brokers]
    current = [bool(p.ar) and r.topic_id == p.topic_id and r.role != deleted for r in replicas]
    return any(current[f] and r.role == follower and r.leader >= 0 and not current[r.leader] for f, r in enumerate(replicas))


def test_durability_across_incarnations_leans_on_incarnation_settled(monkeypatch):
    """With deletions the ISR holds every committed record of the current incarnation past a
    re-creation and a deletion's StopReplica because of ``incarnation_settled`` (no commit
    outlives its incarnation, no deletion is in flight while the topic exists, its requests
    go to its AR): without it both fail there.  (The whole proof, ``epochal prove --config
    kip320 --deletions 1``: tests/impl/harness/cli/test_prove_cli.py, slow.)"""
    assert_lemma_carries(monkeypatch, named("kip320", deletions=1), "incarnation_settled",
                         goals=("isr_holds_committed", "committed_durable"), actions=("create_topic", "stop_replica"), fails_at="create_topic")


def test_a_follower_truncating_against_a_stray_leader_loses_nothing_by_induction(monkeypatch):
    """A follower of the re-created topic truncates against a replica that leads the older
    incarnation on in the same leader epoch (the topic ids are not compared): the ISR keeps
    every committed record there because of ``stray_leaders_commit_nothing`` (nothing is
    committed while such a leader is named), and without it both fail at ``truncate``."""
    assert_lemma_carries(monkeypatch, named("kip320", deletions=1), "stray_leaders_commit_nothing",
                         goals=("isr_holds_committed", "committed_durable"), actions=("truncate",), fails_at="truncate")


def test_no_deleted_record_is_served_by_induction():
    """With topic deletions, deleted_not_served is proved for every number of deletions and
    re-creations (the base tier's other formulas assumed: ``epochal prove`` proves them too);
    a replica that keeps an older incarnation's log when it takes a newer one does not."""
    cfg = named("kip320", deletions=1)  # the deletion actions alone: a smaller relation
    goals = ("retired_records_gone", "deleted_not_served")
    assert {v.name: v.status for v in prove(cfg, 2, with_durability=False, only=goals)} == dict.fromkeys(goals, "proved")
    broken = prove(cfg, 2, with_durability=False, only=goals[:1], encoding=_KeepsTheOlderIncarnation)
    assert [v.status for v in broken] == ["failed"]


@pytest.mark.whole_space  # bench/bench_whole_space.py: about a minute per configuration
@pytest.mark.parametrize("name", ["design", "kip101", "kip279", "kip320"])
def test_differential_deep(name):
    cfg = named(name)
    assert differential(cfg, sample_states(cfg, 300, explore=20000)) == []


def test_covered_actions_are_model_actions():
    from model.registry import ACTIONS

    assert set(COVERED) <= set(ACTIONS)


def test_proofs_are_not_vacuous():
    """Without controller- and broker-epoch fencing a broker may act on a superseded
    controller's request: the induction must fail, and name the actions that break it."""
    cfg = replace(named("kip320"), fence_controller_epoch=False, fence_broker_epoch=False)
    failed = {v.name: v.detail for v in prove(cfg, 2, with_durability=False) if v.status != "proved"}
    assert set(failed) == {"single_controller"}
    assert "become_leader" in failed["single_controller"]


def test_every_safety_property_has_a_symbolic_formula():
    """The ``prop_*`` formulas are held to ``properties.safety`` by ``differential`` on sampled
    states; this makes sure none is left out (``epoch_monotonic`` is a step formula)."""
    from properties.checkers.symbolic import STATE_PROPERTIES
    from properties.safety import BY_NAME

    assert set(STATE_PROPERTIES) | {"epoch_monotonic"} == set(BY_NAME)
