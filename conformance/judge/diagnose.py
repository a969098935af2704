"""Why a trace is not a run of a configuration: which protocol variant it *is* a run of.

``conformance.judge.replay.judge`` answers one question: is this trace a run of configuration X?  When
the answer is "no, step k is not a step X allows", a user usually wants the next answer
too: the system under test implements some *other* variant of the protocol, and in that
variant, does the trace break a property?  The design's KAFKA-1211 trace is the example:
against ``kip320`` it fails at the leader that truncated to its high watermark (kip320 never
truncates so); read as a run of ``design`` -- the rule it does follow -- it breaks
``committed_durable``.  So the verdict can name the property even though the fixed
configuration never reaches the bad state.

``judge`` here is ``conformance.judge.replay.judge`` plus that diagnosis; the conformance job uses it as
its default judge.  The diagnosis costs nothing on conforming traces and one extra judgement
per variant on a trace that fails on an unexplained step.
"""

from __future__ import annotations

from typing import Any

from conformance.judge.replay import judge as replay_judge
from conformance.judge.words import REFINEMENT

# The truncation variants of one protocol, oldest first (Kafka's history): a trace that is
# not a run of one of them may be a run of another.
VARIANTS = ("design", "kip101", "kip279", "kip320")


def explain(events: list[dict[str, Any]], config: str, answer: dict[str, Any],
            compiled: bool | None = None) -> dict[str, Any] | None:
    """For a refusal, the configuration of which the trace is a run, and what that run breaks.

    A refusal for a safety property is explained by ``config`` itself. A refusal for a step
    ``config`` does not allow (``REFINEMENT``) is explained by another variant when every
    event is one of its steps (it conforms) or every event up to a property violation is (a
    valid run of that variant in which the property breaks); the best such variant -- one
    that accepts the whole trace first, else the one whose run goes furthest -- and else by
    ``config``, whose rule the trace breaks. Returns ``{"explained_by",
    "explained_property", "explained_at"}`` (the verdict's columns); None for a trace that
    conforms or is inconclusive, which needs no explanation.  ``compiled``: how the other
    variants are judged (``replay.judge``'s; by default runs of events in C where it can).
    """
    if answer.get("conforms") or answer.get("inconclusive"):
        return None
    own = {"explained_by": config, "explained_property": answer.get("property") or REFINEMENT,
           "explained_at": answer.get("first_bad")}
    if answer.get("property") != REFINEMENT or config not in VARIANTS:
        return own
    best: tuple[tuple[int, int], str, dict[str, Any]] | None = None
    for other in VARIANTS:
        if other == config:
            continue
        v = replay_judge(events, other, compiled=compiled)
        if not (v["conforms"] or v.get("property") not in (None, REFINEMENT)):
            continue  # not a run of this variant either
        # every step up to its end (or its property violation) is a step of ``other``
        score = (1 if v["conforms"] else 0, int(v.get("first_bad") or 0))
        if best is None or score > best[0]:
            best = (score, other, v)
    if best is None:
        return own
    _, other, v = best
    return {"explained_by": other, "explained_property": v.get("property"),
            "explained_at": None if v["conforms"] else v.get("first_bad")}


def judge(events: list[dict[str, Any]], config: str = "kip320", **kwargs: Any) -> dict[str, Any]:
    """``conformance.judge.replay.judge``, and when it fails on a step ``config`` does not allow, the
    variant that explains the trace (:func:`explain`) merged into the answer.  Unless told
    otherwise (``compiled``), runs of events are judged in C wherever there is a C compiler
    (``replay.judge``'s ``compiled=None``): the same verdicts, several times faster."""
    kwargs.setdefault("compiled", None)
    answer = replay_judge(events, config, **kwargs)
    extra = explain(events, config, answer, kwargs["compiled"])
    if extra:
        answer = {**answer, **extra}
    return answer
