"""The model's answer to a delivered LeaderAndISR (``impl.harness.drive.answers``): what the
driver holds a broker's recorded refusal and its error code to."""

from __future__ import annotations

from impl.harness.drive.answers import TAKEN, Answer, answer_mismatch, expected_answer
from impl.node.wire import ErrorCode
from model.config import named
from model.state import LeaderAndIsr, State, initial

CFG = named("kip320", brokers=2)


def _initial() -> State:
    return initial(CFG)


def _to_follower(leader_epoch: int, controller_epoch: int = 1, leader: int = 0) -> LeaderAndIsr:
    """A LeaderAndISR to broker 1, which follows broker 0 in leader epoch 1 at the start."""
    return LeaderAndIsr(1, 0, leader, leader_epoch, (0, 1), 0, controller_epoch, 1, 0)


def _refusal(reason: str) -> dict:
    return {"kind": "reject_leader_and_isr", "params": {"reason": reason}}


def test_a_repetition_of_the_replicas_decision_is_taken_without_refusal() -> None:
    # a newly elected controller's INIT: the leader and epoch broker 1 holds, a newer controller
    assert expected_answer(_initial(), CFG, _to_follower(1, controller_epoch=2)) == TAKEN


def test_another_leader_in_the_epoch_held_is_refused_for_its_leader_epoch() -> None:
    want = expected_answer(_initial(), CFG, _to_follower(1, leader=1))
    assert want == Answer("stale_leader_epoch", int(ErrorCode.FENCED_LEADER_EPOCH))


def test_an_older_controllers_request_is_refused_whole_for_its_controller_epoch() -> None:
    s = _initial()
    broker = s.brokers[1]._replace(controller_epoch=2)
    s = s._replace(brokers=(s.brokers[0], broker))
    want = expected_answer(s, CFG, _to_follower(2, controller_epoch=1))
    assert want == Answer("stale_controller_epoch", int(ErrorCode.STALE_CONTROLLER_EPOCH), whole=True)


def test_a_refused_repetition_is_a_mismatch() -> None:
    refused = {"partitions": [["t", 0, int(ErrorCode.FENCED_LEADER_EPOCH)]]}
    assert answer_mismatch(TAKEN, [_refusal("stale_leader_epoch")], refused, "t", 0) == \
        "refused it (stale_leader_epoch)"
    assert answer_mismatch(TAKEN, [], refused, "t", 0) == f"answered error {int(ErrorCode.FENCED_LEADER_EPOCH)}"
    assert answer_mismatch(TAKEN, [], {"partitions": [["t", 0, 0]]}, "t", 0) is None


def test_a_refusal_without_the_models_reason_is_a_mismatch() -> None:
    want = Answer("stale_controller_epoch", int(ErrorCode.STALE_CONTROLLER_EPOCH), whole=True)
    whole = {"error": int(ErrorCode.STALE_CONTROLLER_EPOCH)}
    assert answer_mismatch(want, [_refusal("stale_controller_epoch")], whole, "t", 0) is None
    assert answer_mismatch(want, [{"kind": "reject_leader_and_isr", "params": {}}], whole, "t", 0) == \
        "recorded refusals [None]"
    assert answer_mismatch(want, [], whole, "t", 0) == "recorded no refusal"
    assert answer_mismatch(want, [_refusal("stale_controller_epoch")], {}, "t", 0) == "answered error 0"
