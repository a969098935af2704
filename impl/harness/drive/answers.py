"""What a broker records and answers for a delivered LeaderAndISR, as the model has it.

The model's broker refuses a LeaderAndISR for one reason (``model.actions.commands.
stale_reason``), takes it, or -- a repetition of the decision its replica holds
(``model.actions.commands.repeats_held_decision``) -- takes it silently, changing nothing.
The driver holds each delivered request to the model's answer here: a refusal recorded with
the model's reason and the error its fence answers, and no refusal and no error for a
request the model takes, a repetition included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from impl.node.wire import ErrorCode
from model.actions.commands import repeats_held_decision, stale_reason
from model.config import Config
from model.state import LeaderAndIsr, State

# the model's reason -> the reason the refusal names, its error, whether the whole request is refused
FENCES: dict[str, tuple[str, ErrorCode, bool]] = {
    "stale controller epoch": ("stale_controller_epoch", ErrorCode.STALE_CONTROLLER_EPOCH, True),
    "stale broker epoch": ("stale_broker_epoch", ErrorCode.STALE_BROKER_EPOCH, True),
    "stale topic id": ("stale_topic_id", ErrorCode.INCONSISTENT_TOPIC_ID, False),
    "stale leader epoch": ("stale_leader_epoch", ErrorCode.FENCED_LEADER_EPOCH, False),
}
RECEIPTS = ("become_leader", "become_follower", "reject_leader_and_isr")


@dataclass(frozen=True)
class Answer:
    """What a broker does with one partition of a LeaderAndISR: the refusal it records (its
    reason; None: it records none) and the error it answers, for the partition or, with
    ``whole``, for the whole request."""

    refusal: str | None
    error: int
    whole: bool = False


TAKEN = Answer(None, int(ErrorCode.NONE))


def expected_answer(s: State, cfg: Config, m: LeaderAndIsr) -> Answer:
    """The model's answer to ``m``, delivered in state ``s``: taken (and a repetition) with no
    refusal and no error, else refused with the model's reason and its fence's error."""
    why = stale_reason(s, cfg, m)
    if why is None or repeats_held_decision(s, cfg, m):
        return TAKEN
    reason, error, whole = FENCES[why]
    return Answer(reason, int(error), whole)


def answer_mismatch(want: Answer, refusals: list[dict[str, Any]], response: dict[str, Any] | None,
                    topic: str, partition: int) -> str | None:
    """What the broker did that ``want`` does not say, or None: ``refusals`` are the
    ``reject_leader_and_isr`` events it recorded for the request's entry, ``response`` the
    summary of its answer (None: not seen -- a repeated delivery's answer is swallowed)."""
    reasons = [(e.get("params") or {}).get("reason") for e in refusals]
    if want.refusal is None and reasons:
        return f"refused it ({', '.join(map(str, reasons))})"
    if want.refusal is not None and reasons != [want.refusal]:
        return f"recorded refusals {reasons}" if reasons else "recorded no refusal"
    if response is None:
        return None
    error = int(response.get("error") or 0)
    if not want.whole:
        if error:
            return f"answered the request with error {error}"
        error = next((int(x[2]) for x in response.get("partitions") or []
                      if list(x[:2]) == [topic, partition]), 0)
    return None if error == want.error else f"answered error {error}"
