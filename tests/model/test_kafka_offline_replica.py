"""Kafka's controller takes each dead replica out of the ISR by a write of its own
(``ReplicaStateMachine``'s OfflineReplica transition, ``doRemoveReplicasFromIsr``): leader -1
if the replica led, the last ISR member kept although dead, the leader epoch bumped every
time -- ``Config.offline_replica_writes``, in the Kafka configurations only.

The scenario is the one a chaos run on Kafka 3.9 with unclean election logged
(``tests/conformance/kafka/fixtures/unclean-39``, real brokers 1, 2, 3 as model brokers 0,
1, 2): follower 3 left the ISR, leader 1 and follower 2 were killed, and the new controller
3 wrote ``(Leader:-1,ISR:2,LeaderEpoch:2)`` after removing replica 1, then
``(Leader:-1,ISR:2,LeaderEpoch:3)`` after removing replica 2, then elected itself, outside
the ISR, at leader epoch 4."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.kafka.adapter import adapt
from conformance.kafka.patterns import ints, parse
from model.actions.controller import election_outcomes
from model.config import Config, named
from model.registry import ACTIONS, Step, apply, successors
from model.state import NO_LEADER, State, initial
from properties.checkers.native import unsupported as native_unsupported
from properties.checkers.symbolic.coverage import unsupported as z3_unsupported

KAFKA = named("kafka39-unclean", brokers=3, max_crashes=2, max_epoch=4)
SEED = named("unclean", brokers=3, max_crashes=2, max_epoch=4)
FIXTURE = Path(__file__).parents[1] / "conformance" / "kafka" / "fixtures" / "unclean-39"

FOLLOWER_FIRST = (
    "[2026-11-29 05:16:53,601] INFO [controller-event-thread] [Controller id=2 epoch=2] Partition chaos-0 state "
    "changed to (Leader:3,ISR:3,LeaderRecoveryState:RECOVERED,LeaderEpoch:2,ZkVersion:2,ControllerEpoch:2) after "
    "removing replica 1 from the ISR as part of transition to OfflineReplica (state.change.logger)",
    "[2026-11-29 05:16:53,625] INFO [controller-event-thread] [Controller id=2 epoch=2] Partition chaos-0 state "
    "changed to (Leader:-1,ISR:3,LeaderRecoveryState:RECOVERED,LeaderEpoch:3,ZkVersion:3,ControllerEpoch:2) after "
    "removing replica 3 from the ISR as part of transition to OfflineReplica (state.change.logger)",
    "[2026-11-29 05:16:53,662] INFO [controller-event-thread] [Controller id=2 epoch=2] Changed partition chaos-0 "
    "from OfflinePartition to OnlinePartition with state LeaderAndIsr(leader=2, leaderEpoch=4, "
    "isrWithBrokerEpoch=List(BrokerState(brokerId=2, brokerEpoch=-1)), leaderRecoveryState=RECOVERING, "
    "partitionEpoch=4) (state.change.logger)",
)
"""The new controller's lines of another unclean run on Kafka 3.9.2 (seed 1, 8 s): leader 3
and follower 1 killed, follower 2 out of the ISR -- and the follower written out first."""


def _step(s: State, cfg: Config, action: str, *args: object) -> State:
    t = apply(s, cfg, Step(action, tuple(args)))
    assert t is not None, f"{action}{args} is not enabled"
    return t


def _isr_members_dead(cfg: Config) -> State:
    """Broker 0 leads with ISR {0,1} (follower 2 left it), then 0 and 1 die and broker 2,
    the one left, becomes controller."""
    s = _step(initial(cfg), cfg, "produce", 0, 0)
    if cfg.alter_partition:  # the leader proposes, the controller writes, the leader applies
        s = _step(s, cfg, "propose_isr", 0, 0, 2)
        for action in ("alter_partition", "apply_isr"):
            s = next(t for st, t in successors(s, cfg) if st.action == action)
    else:
        s = _step(s, cfg, "shrink_isr", 0, 0, 2)
    for b in (0, 1):
        s = _step(s, cfg, "broker_crash", b)
    s = _step(s, cfg, "controller_elect", 2)
    zn = s.zk.partitions[0]
    assert (zn.leader, zn.isr, s.zk.live) == (0, (0, 1), (2,))
    return s


def _written(s: State) -> tuple[int, int, tuple[int, ...]]:
    zn = s.zk.partitions[0]
    return zn.leader, zn.leader_epoch, zn.isr


def test_two_dead_isr_members_are_written_out_one_at_a_time_before_the_unclean_election() -> None:
    s = _isr_members_dead(KAFKA)
    epoch = s.zk.partitions[0].leader_epoch
    first = _step(s, KAFKA, "elect_leader", 2, 0, NO_LEADER, 0)
    assert _written(first) == (NO_LEADER, epoch + 1, (1,)), "the leader removed: no leader, ISR without it"
    second = _step(first, KAFKA, "elect_leader", 2, 0, NO_LEADER, 1)
    assert _written(second) == (NO_LEADER, epoch + 2, (1,)), "the last member kept, the epoch bumped all the same"
    elected = _step(second, KAFKA, "elect_leader", 2, 0, 2)
    assert _written(elected) == (2, epoch + 3, (2,)) and 0 in elected.ghost.unclean
    assert "takes dead broker 1 out of partition 0's ISR" in ACTIONS["elect_leader"].describe(
        (2, 0, NO_LEADER, 1), first, second)


def test_the_other_order_keeps_the_dead_leader_until_it_is_removed() -> None:
    """Kafka takes the dead replicas in the order of a map: removing the follower first
    leaves the dead leader leading an ISR of itself, and removing it then keeps it there."""
    s = _isr_members_dead(KAFKA)
    follower_first = _step(s, KAFKA, "elect_leader", 2, 0, 0, 1)
    assert _written(follower_first)[::2] == (0, (0,))
    assert _written(_step(follower_first, KAFKA, "elect_leader", 2, 0, NO_LEADER, 0))[::2] == (NO_LEADER, (0,))


def test_the_writes_kafka_logged_are_the_ones_the_model_takes() -> None:
    """The adapter's events of the new controller's three writes in the fixture (real ids
    1, 2, 3 are model ids 0, 1, 2; Kafka's first leader epoch is 0, the model's 1)."""
    logged = [(e.params["leader"], e.params["leader_epoch"], e.params["isr"], e.params["unclean"])
              for node, e, _ in adapt(FIXTURE) if e.kind == "elect_leader" and node == 3 and e.topic == "chaos"]
    assert logged == [(-1, 2, [2], False), (-1, 3, [2], False), (3, 4, [3], True)]
    s = _isr_members_dead(KAFKA)
    model = []
    for args in ((2, 0, NO_LEADER, 0), (2, 0, NO_LEADER, 1), (2, 0, 2)):
        t = _step(s, KAFKA, "elect_leader", *args)
        leader, epoch, isr = _written(t)
        model.append((leader if leader == NO_LEADER else leader + 1, epoch, [b + 1 for b in isr],
                      0 in t.ghost.unclean and 0 not in s.ghost.unclean))
        s = t
    assert model == logged


def test_kafka_logged_the_other_order_too() -> None:
    """Each of ``FOLLOWER_FIRST``'s writes is the model's, replica for replica (real ids 3, 1,
    2 are model ids 0, 1, 2 there; both count leader epochs alike from that ISR on)."""
    ids = {3: 0, 1: 1, 2: 2, -1: NO_LEADER}
    s = _isr_members_dead(KAFKA)
    for text in FOLLOWER_FIRST:
        line = parse(text)
        assert line is not None
        f = line.fields
        offline = (ids[int(f["replica"])],) if line.name == "replica_offline" else ()
        s = _step(s, KAFKA, "elect_leader", 2, 0, ids[int(f["leader"])], *offline)
        isr = f["isr"] if isinstance(f["isr"], list) else ints(f["isr"])  # an election's line lists it
        assert _written(s) == (ids[int(f["leader"])], int(f["epoch"]), tuple(sorted(ids[b] for b in isr)))
    assert 0 in s.ghost.unclean


def test_no_election_writes_an_isr_of_its_own_for_dead_members() -> None:
    """With the rule a live leader's dead followers and a partition with no one to elect
    are left to the removals; seed 000 A's one write does either."""
    s = _isr_members_dead(KAFKA)
    clean = named("kafka39", brokers=3, max_crashes=2, max_epoch=4)
    assert election_outcomes(s.zk, 0, clean) == []
    assert election_outcomes(s.zk, 0, named("kip320", brokers=3)) == [(NO_LEADER, (0, 1), False)]
    offline = {st.args for st, _ in successors(s, KAFKA) if st.action == "elect_leader"}
    assert offline == {(2, 0, 2), (2, 0, NO_LEADER, 0), (2, 0, 0, 1)}


def test_only_a_dead_isr_member_is_taken_out_and_only_in_the_kafka_configurations() -> None:
    s = _isr_members_dead(KAFKA)
    assert apply(s, KAFKA, Step("elect_leader", (2, 0, NO_LEADER, 2))) is None, "2 is alive (and not in the ISR)"
    assert apply(s, KAFKA, Step("elect_leader", (2, 0, 0, 0))) is None, "removing the leader leaves no leader"
    seed = _isr_members_dead(SEED)
    assert apply(seed, SEED, Step("elect_leader", (2, 0, NO_LEADER, 0))) is None
    assert {st.args for st, _ in successors(seed, SEED) if st.action == "elect_leader"} == {(2, 0, 2)}


@pytest.mark.parametrize("cfg", [named("kip320", offline_replica_writes=True), KAFKA])
def test_z3_refuses_the_rule_and_the_compiled_search_runs_it(cfg: Config) -> None:
    """The compiled search's rendering is held to this one by tests/properties/test_native.py."""
    assert native_unsupported(cfg) is None
    assert "dead replica" in (z3_unsupported(cfg) or "")
