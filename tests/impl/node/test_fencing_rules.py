"""The broker's and the controller's fencing rules, one pure function each
(:mod:`impl.node.fencing`, :mod:`impl.node.controller.responses`, the election's
:func:`~impl.node.controller.failover.next_controller_epoch`)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from impl.node.controller.failover import controller_holder, next_controller_epoch
from impl.node.controller.responses import response_actions
from impl.node.fencing import (
    Claim,
    ControlHeader,
    ControllerTerm,
    Verdict,
    control_refusal,
    controller_claim,
    controller_term,
    epoch_lookup_refusal,
    fetch_refusal,
    leader_and_isr_verdict,
    zookeeper_claim_refusal,
)
from impl.node.log import PartitionLog
from impl.node.replica import PartitionState, Replica
from impl.node.wire import ApiKey, ErrorCode
from traces.recorder import TraceRecorder

TOPIC_ID = 41  # the re-created incarnation's id (a czxid)
DELETED_ID = 17  # the deleted incarnation's


def _replica(tmp_path: Path, broker: int = 1, topic_id: int | None = TOPIC_ID) -> Replica:
    log = PartitionLog.open(tmp_path / "t-0")
    if topic_id is not None:
        log.set_topic_id(topic_id)
    return Replica("t", 0, broker, log, TraceRecorder(tmp_path / "trace.jsonl", "run", broker))


def _state(leader: int, epoch: int, isr: list[int], zk_version: int) -> PartitionState:
    return PartitionState("t", 0, leader, epoch, isr, [0, 1, 2], zk_version, 1, TOPIC_ID)


# -- fetches carry the topic id (KIP-516) ----------------------------------------------------
def test_a_fetch_sent_to_the_deleted_incarnation_is_refused_by_the_recreated_leader(tmp_path: Path) -> None:
    """The re-created topic's epochs start again: the stale fetch names the same leader
    epoch (1) and passes the KIP-320 fence; only its topic id tells it apart."""
    r = _replica(tmp_path)
    r.become_leader(_state(1, 1, [0, 1], 0))
    r.append(b"new")
    assert fetch_refusal(r, r.leo, 1, DELETED_ID, follower=0) == (ErrorCode.INCONSISTENT_TOPIC_ID, {})
    assert fetch_refusal(r, r.leo, 1, TOPIC_ID, follower=0) is None


def test_a_fetch_without_a_topic_id_or_to_a_leader_without_one_is_not_checked(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.become_leader(_state(1, 1, [0, 1], 0))
    assert fetch_refusal(r, 0, 1, 0, follower=0) is None  # an older follower: no id sent
    old = _replica(tmp_path / "old", topic_id=None)
    old.become_leader(_state(1, 1, [0, 1], 0))
    assert fetch_refusal(old, 0, 1, TOPIC_ID, follower=0) is None  # a log from before ids


def test_the_topic_id_is_checked_before_the_epoch_and_after_the_role(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    assert fetch_refusal(r, 0, 0, DELETED_ID, follower=0) == (ErrorCode.NOT_LEADER, {"leader": -1})
    r.become_leader(_state(1, 3, [0, 1], 0))
    assert fetch_refusal(r, 0, 2, DELETED_ID, follower=0)[0] == ErrorCode.INCONSISTENT_TOPIC_ID  # type: ignore[index]
    assert fetch_refusal(r, 0, 2, TOPIC_ID, follower=0)[0] == ErrorCode.FENCED_LEADER_EPOCH  # type: ignore[index]
    assert fetch_refusal(r, 5, 3, TOPIC_ID, follower=0)[0] == ErrorCode.OFFSET_OUT_OF_RANGE  # type: ignore[index]


def test_an_epoch_lookup_for_another_incarnation_is_refused(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.become_leader(_state(1, 1, [0, 1], 0))
    assert epoch_lookup_refusal(r, 1, DELETED_ID) == ErrorCode.INCONSISTENT_TOPIC_ID
    assert epoch_lookup_refusal(r, 1, TOPIC_ID) is None
    assert epoch_lookup_refusal(r, 1, 0) is None
    assert epoch_lookup_refusal(r, 0, TOPIC_ID) == ErrorCode.FENCED_LEADER_EPOCH


# -- LeaderAndISR: only a larger epoch changes the decision ---------------------------------
def test_the_same_leader_epoch_with_another_leader_is_refused(tmp_path: Path) -> None:
    r = _replica(tmp_path, broker=1)
    r.become_follower(_state(0, 4, [0, 1], 2), "kip320")
    assert leader_and_isr_verdict(r, _state(1, 4, [0, 1], 2)) is Verdict.REFUSE
    assert leader_and_isr_verdict(r, _state(1, 4, [0, 1], 3)) is Verdict.REFUSE
    assert leader_and_isr_verdict(r, _state(1, 5, [0, 1], 3)) is Verdict.APPLY
    assert leader_and_isr_verdict(r, _state(0, 3, [0, 1], 9)) is Verdict.REFUSE


def test_the_same_leader_epoch_with_another_isr_under_the_same_zk_version_is_refused(tmp_path: Path) -> None:
    r = _replica(tmp_path, broker=0)
    r.become_leader(_state(0, 4, [0, 1], 2))
    assert leader_and_isr_verdict(r, _state(0, 4, [0], 2)) is Verdict.REFUSE
    # the same decision again (INIT after a failover), or a later write of the ISR
    assert leader_and_isr_verdict(r, _state(0, 4, [0, 1], 2)) is Verdict.REPEAT
    assert leader_and_isr_verdict(r, _state(0, 4, [0], 3)) is Verdict.REPEAT


def test_a_stepped_down_replica_refuses_its_own_epoch_and_waits_for_a_larger_one(tmp_path: Path) -> None:
    """A failover's INIT repeating the epoch the leader held, read after its ISR write
    failed (the next election had moved the znode on), must not make it lead again."""
    r = _replica(tmp_path, broker=0)
    r.become_leader(_state(0, 4, [0, 1], 2))
    r.step_down()
    assert leader_and_isr_verdict(r, _state(0, 4, [0, 1], 2)) is Verdict.REFUSE
    assert leader_and_isr_verdict(r, _state(1, 4, [0, 1], 2)) is Verdict.REFUSE
    assert leader_and_isr_verdict(r, _state(0, 5, [0], 3)) is Verdict.APPLY


def test_a_stopped_follower_refuses_its_own_epoch(tmp_path: Path) -> None:
    r = _replica(tmp_path, broker=1)
    r.become_follower(_state(0, 4, [0, 1], 2), "kip320")
    r.stop()
    assert leader_and_isr_verdict(r, _state(0, 4, [0, 1], 2)) is Verdict.REFUSE
    assert leader_and_isr_verdict(r, _state(0, 5, [0, 1], 3)) is Verdict.APPLY


def test_a_new_replica_takes_any_epoch(tmp_path: Path) -> None:
    assert leader_and_isr_verdict(_replica(tmp_path), _state(0, 0, [0], 0)) is Verdict.APPLY


# -- control requests: both epochs mandatory ------------------------------------------------
def test_a_control_request_without_a_broker_epoch_is_malformed() -> None:
    with pytest.raises(ValueError, match="broker epoch"):
        ControlHeader.from_wire({"controller_id": 0, "controller_epoch": 3})
    with pytest.raises(ValueError, match="controller epoch"):
        ControlHeader.from_wire({"controller_id": 0, "max_broker_epoch": 3})


def test_a_broker_epoch_of_minus_one_is_refused_like_any_older_one() -> None:
    own = 4100
    for fmt in ("max_broker_epoch", "broker_epoch"):
        header = ControlHeader.from_wire({"controller_id": 0, "controller_epoch": 3, fmt: -1})
        assert control_refusal(header, 3, own) == ("stale_broker_epoch", ErrorCode.STALE_BROKER_EPOCH)
        ok = ControlHeader.from_wire({"controller_id": 0, "controller_epoch": 3, fmt: own})
        assert control_refusal(ok, 3, own) is None
    stale = ControlHeader.from_wire({"controller_epoch": 2, "max_broker_epoch": own})
    assert control_refusal(stale, 3, own) == ("stale_controller_epoch", ErrorCode.STALE_CONTROLLER_EPOCH)


# -- control requests only from the controller ZooKeeper names (docs/security.md) -----------
def _claim(controller_id: int | None, controller_epoch: int) -> ControlHeader:
    return ControlHeader(controller_id, controller_epoch, 4100)


def test_the_confirmed_term_settles_every_claim_of_its_epoch_without_zookeeper() -> None:
    term = ControllerTerm(0, 7)
    assert controller_claim(_claim(0, 7), term) is Claim.CONFIRMED
    assert controller_claim(_claim(2, 7), term) is Claim.NOT_CONTROLLER  # an impostor, same epoch
    assert controller_claim(_claim(None, 7), term) is Claim.NOT_CONTROLLER


def test_a_claim_the_cache_cannot_settle_is_checked_against_zookeeper() -> None:
    assert controller_claim(_claim(0, 7), None) is Claim.CHECK  # nothing confirmed yet
    assert controller_claim(_claim(1, 8), ControllerTerm(0, 7)) is Claim.CHECK  # a failover
    assert controller_claim(_claim(2, 1007), ControllerTerm(0, 7)) is Claim.CHECK  # or a lie


def test_zookeeper_confirms_only_its_own_controller_at_its_own_epoch() -> None:
    now = ControllerTerm(1, 8)
    assert zookeeper_claim_refusal(_claim(1, 8), now) is None
    not_controller = ("not_controller", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert zookeeper_claim_refusal(_claim(2, 8), now) == not_controller
    assert zookeeper_claim_refusal(_claim(2, 1008), now) == not_controller  # above ZooKeeper
    assert zookeeper_claim_refusal(_claim(1, 9), now) == not_controller  # even from the controller
    stale = ("stale_controller_epoch", ErrorCode.STALE_CONTROLLER_EPOCH)
    assert zookeeper_claim_refusal(_claim(0, 7), now) == stale  # deposed meanwhile
    assert zookeeper_claim_refusal(_claim(0, 7), None) == stale  # no controller to confirm it


def test_a_term_is_the_pair_one_election_wrote() -> None:
    """/controller's czxid is /controller_epoch's mzxid: the election's one transaction."""
    assert controller_term(2, 900, b"8", 900) == ControllerTerm(2, 8)
    assert controller_term(2, 950, b"8", 900) is None  # /controller from a later election
    assert controller_term(None, 900, b"8", 900) is None  # an abnormal /controller
    assert controller_term(2, 900, b"garbage", 900) is None  # a corrupt /controller_epoch


def test_a_replica_fetch_is_served_only_to_the_assigned_replicas(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.become_leader(PartitionState("t", 0, 1, 1, [1, 2], [1, 2], 0, 1, TOPIC_ID))
    assert fetch_refusal(r, 0, 1, TOPIC_ID, follower=2) is None
    assert fetch_refusal(r, 0, 1, TOPIC_ID, follower=0) == (
        ErrorCode.NOT_LEADER, {"leader": 1, "replicas": [1, 2]})


# -- the controller acts on the codes brokers answer with ----------------------------------
def test_a_successful_response_asks_nothing_of_the_controller() -> None:
    assert not response_actions(ApiKey.LEADER_AND_ISR, 0, {"partitions": [["t", 0, 0]]})
    assert not response_actions(ApiKey.UPDATE_METADATA, 0, {})


def test_a_stale_controller_epoch_makes_the_controller_check_its_own() -> None:
    a = response_actions(ApiKey.UPDATE_METADATA, int(ErrorCode.STALE_CONTROLLER_EPOCH), {})
    assert a and a.check_controller_epoch and not a.reread_brokers
    assert "STALE_CONTROLLER_EPOCH" in a.errors[0]


def test_a_stale_broker_epoch_makes_the_controller_read_the_brokers_again() -> None:
    a = response_actions(ApiKey.STOP_REPLICA, int(ErrorCode.STALE_BROKER_EPOCH), {"message": "x"})
    assert a.reread_brokers and not a.check_controller_epoch


def test_refused_leader_and_isr_entries_make_the_controller_read_those_partitions_again() -> None:
    a = response_actions(ApiKey.LEADER_AND_ISR, 0, {"partitions": [
        ["t", 0, 0], ["t", 1, int(ErrorCode.FENCED_LEADER_EPOCH)],
        ["u", 2, int(ErrorCode.INCONSISTENT_TOPIC_ID)]]})
    assert a.reread_partitions == {("t", 1), ("u", 2)} and a.reread_topics == {"u"}
    assert len(a.errors) == 2


def test_an_error_nothing_can_mend_is_still_logged_not_taken_for_success() -> None:
    a = response_actions(ApiKey.LEADER_AND_ISR, int(ErrorCode.INVALID_REQUEST), {"message": "bad"})
    assert a and a.errors == ("LEADER_AND_ISR refused: INVALID_REQUEST (bad)",)
    assert not (a.check_controller_epoch or a.reread_brokers or a.reread_partitions)


# -- the election survives abnormal /controller and /controller_epoch ------------------------
def test_abnormal_controller_data_names_no_holder() -> None:
    assert controller_holder(b'{"version":1,"brokerid":2,"timestamp":"1"}') == 2
    for data in (b"", b"garbage", b"\xff", b"[]", b'{"brokerid":"2"}', b'{"brokerid":-1}', b"{}"):
        assert controller_holder(data) is None, data


def test_the_next_controller_epoch_is_above_every_epoch_held_whatever_the_znode_says() -> None:
    # honest history: created as 1 at version 0, +1 per election
    assert next_controller_epoch(b"1", 0) == 2
    assert next_controller_epoch(b"7", 6) == 8
    # unreadable or lowered: the version still counts every election
    assert next_controller_epoch(b"garbage", 6) == 8
    assert next_controller_epoch(b"\xff", 6) == 8
    assert next_controller_epoch(b"0", 6) == 8


# -- the rule held to the model's ---------------------------------------------------------------
_HISTORIES = {
    "a new replica": [],
    "a leader": [("leader", 4)],
    "a follower": [("follower", 4)],
    "a leader that stepped down": [("leader", 4), ("step_down",)],
    "a stopped follower": [("follower", 4), ("stop",)],
    "a follower made leader": [("follower", 3), ("leader", 4)],
}


@pytest.mark.parametrize("history", list(_HISTORIES))
def test_a_leader_and_isr_is_applied_exactly_when_the_model_finds_it_not_stale(tmp_path: Path, history: str) -> None:
    """``leader_and_isr_verdict`` and the model's ``stale_reason`` and
    ``repeats_held_decision`` write one rule twice: a broker acts on a LeaderAndISR (APPLY)
    only where the model takes it as a step, takes it silently (REPEAT) exactly where the
    model calls it a repetition of the decision held, and refuses the rest.  Every request
    of leader 0 or 1, epoch 3 to 5, either ISR and zk_version, against each history of
    broker 1's replica (as leader, or following broker 0)."""
    from model.actions.commands import repeats_held_decision, stale_reason
    from model.config import named
    from model.state import FOLLOWER as M_FOLLOWER
    from model.state import LEADER as M_LEADER
    from model.state import NONE as M_NONE
    from model.state import LeaderAndIsr, initial

    cfg = named("kip320")
    me = 1
    r = _replica(tmp_path, broker=me)
    role, leader, epoch = M_NONE, -1, 0
    for op in _HISTORIES[history]:
        if op[0] == "leader":
            r.become_leader(_state(me, op[1], [0, 1], 2))
            role, leader, epoch = M_LEADER, me, op[1]
        elif op[0] == "follower":
            r.become_follower(_state(0, op[1], [0, 1], 2), "kip320")
            role, leader, epoch = M_FOLLOWER, 0, op[1]
        else:
            getattr(r, op[0])()
            role, leader = M_NONE, -1
    s = initial(cfg)
    mr = s.brokers[me].replicas[0]._replace(role=role, leader=leader, leader_epoch=epoch)
    b = s.brokers[me]._replace(replicas=(mr, *s.brokers[me].replicas[1:]))
    s = s._replace(brokers=(*s.brokers[:me], b, *s.brokers[me + 1:]))
    for req_leader in (0, 1):
        for req_epoch in (3, 4, 5):
            for isr, zk_version in (([0, 1], 2), ([req_leader], 3)):
                st = _state(req_leader, req_epoch, isr, zk_version)
                m = LeaderAndIsr(me, 0, req_leader, req_epoch, tuple(isr), zk_version,
                                 b.controller_epoch, b.broker_epoch, mr.topic_id)
                verdict = leader_and_isr_verdict(r, st)
                assert (verdict is Verdict.APPLY) == (stale_reason(s, cfg, m) is None), (history, st)
                assert (verdict is Verdict.REPEAT) == repeats_held_decision(s, cfg, m), (history, st)


def test_the_broker_of_a_newly_elected_controller_refuses_the_deposed_controllers_epoch() -> None:
    """The model's controller_elect sets the winner's known controller epoch in the same
    step: a LeaderAndISR of the deposed controller still in flight to the winner's own broker
    is refused, though no request of the new controller has reached that broker yet."""
    from types import SimpleNamespace

    from impl.node.broker.core import BrokerCore

    broker = SimpleNamespace(id=2, controller_epoch=4, controller_term=ControllerTerm(1, 4),
                             metadata={"controller_id": 1, "controller_epoch": 4}, control_lock=threading.Lock())
    old = ControlHeader(controller_id=1, controller_epoch=4, broker_epoch=7)
    assert control_refusal(old, broker.controller_epoch, 7) is None
    BrokerCore.on_controller_elected(broker, 5)  # type: ignore[arg-type]
    assert control_refusal(old, broker.controller_epoch, 7) is not None
    assert broker.controller_term == ControllerTerm(2, 5)
    assert broker.metadata == {"controller_id": 2, "controller_epoch": 5}
    BrokerCore.on_controller_elected(broker, 3)  # type: ignore[arg-type]  # never moves back
    assert broker.controller_epoch == 5 and broker.controller_term == ControllerTerm(2, 5)


def test_an_election_won_while_a_control_request_is_applied_takes_effect_after_it() -> None:
    """The controller wins on a ZooKeeper thread while the broker's loop applies a request
    of the deposed controller it has already checked: the new epoch and the controller_elect
    event wait for that request's effects and events (``control_lock``), so the trace orders
    them as the broker did -- the request before the election, when it was not yet stale."""
    from types import SimpleNamespace

    from impl.node.broker.core import BrokerCore

    order: list[str] = []
    broker = SimpleNamespace(id=2, controller_epoch=4, controller_term=ControllerTerm(1, 4),
                             metadata={}, control_lock=threading.Lock())
    with broker.control_lock:  # the request's effects, as ``_deciding`` holds them
        won = threading.Thread(target=BrokerCore.on_controller_elected,
                               args=(broker, 5, lambda: order.append("controller_elect")))
        won.start()
        won.join(timeout=0.2)
        assert won.is_alive() and broker.controller_epoch == 4
        order.append("become_leader")
    won.join(timeout=5)
    assert order == ["become_leader", "controller_elect"] and broker.controller_epoch == 5
