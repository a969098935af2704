"""From one run's events to its verdicts: order, split, judge each (run, topic, partition).

A *judge* is a pure function ``judge(events, config) -> dict`` over one causally ordered
group (the interface of ``conformance.judge.replay.judge``).  This module wraps it so that a judge
that raises, or answers in the wrong shape, gives an ``error`` verdict instead of killing
the job, and turns its answer into a flat verdict record with the evidence a reader needs:
the first non-conforming event, its file and line, the events before it, the model's
possible states beside the observation.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from conformance.spark.order import Event, causal_order, source_disorder, split_groups

Judge = Callable[[list[Event], str], dict[str, Any]]
CONTEXT_EVENTS = 5  # events shown before the first non-conforming one

VERDICT_FIELDS: tuple[tuple[str, str], ...] = (
    ("run", "string"), ("topic", "string"), ("partition", "long"),
    ("status", "string"),  # conforms | violates | inconclusive (the judge's budget ran out) | error
    ("conforms", "boolean"), ("matched", "long"), ("total", "long"), ("out_of_order", "long"),
    ("first_bad", "long"), ("first_bad_file", "string"), ("first_bad_line", "long"),
    ("first_bad_node", "long"), ("first_bad_seq", "long"), ("first_bad_kind", "string"),
    ("observed", "string"), ("before", "array<string>"), ("possible_states", "array<string>"),
    ("reason", "string"), ("property", "string"), ("bound", "long"), ("config", "string"),
    ("judge_seconds", "double"), ("run_events", "long"), ("run_out_of_order", "long"),
    # a failing trace that is a (longer) run of another protocol variant: which, and what
    # breaks there (conformance.judge.diagnose; empty for judges that do not diagnose)
    ("explained_by", "string"), ("explained_property", "string"), ("explained_at", "long"),
)
"""Columns of a verdict, in order, with their Spark SQL types."""


def default_judge() -> Judge:
    """``conformance.judge.diagnose.judge``: ``conformance.judge.replay.judge`` plus which
    protocol variant explains a failure.  Imported here, where it runs (on the executors),
    so the driver and the report never load the model; an import all the same, so the
    import contract sees the job depend on the judge (never the other way round)."""
    from conformance.judge.diagnose import judge

    return judge


def load_judge(spec: str | Judge | None) -> Judge:
    """A judge: the default one for None, a callable as it is, or a user's own named by a
    ``"module:function"`` string (``--judge``), imported where it runs."""
    if spec is None:
        return default_judge()
    if callable(spec):
        return spec
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _compact(e: Event) -> str:
    return json.dumps({k: v for k, v in e.items() if k not in ("schema", "ts")},
                      separators=(",", ":"), sort_keys=True, default=str)


def judge_group(run: str, key: tuple[str | None, int | None], events: list[Event], judge: Judge,
                config: str, out_of_order: int = 0) -> dict[str, Any]:
    """Judge one (run, topic, partition) group; never raises."""
    verdict: dict[str, Any] = dict.fromkeys(name for name, _ in VERDICT_FIELDS)
    verdict.update(run=run, topic=key[0], partition=key[1], total=len(events),
                   out_of_order=out_of_order, config=config, before=[], possible_states=[])
    start = time.perf_counter()
    try:
        answer = judge(events, config)
        conforms = bool(answer["conforms"])
        verdict.update(
            status="conforms" if conforms else "inconclusive" if answer.get("inconclusive") else "violates",
            conforms=conforms,
            matched=int(answer.get("matched", len(events) if conforms else 0)),
            total=int(answer.get("total", len(events))),
            reason=answer.get("reason"), property=answer.get("property"),
            bound=int(answer.get("bound") or 0),
            possible_states=[str(s) for s in answer.get("possible_states") or []],
            explained_by=answer.get("explained_by"), explained_property=answer.get("explained_property"),
            explained_at=None if answer.get("explained_at") is None else int(answer["explained_at"]),
        )
        bad = answer.get("first_bad")
        if bad is not None and not conforms:
            bad = int(bad)
            verdict["first_bad"] = bad
            if 0 <= bad < len(events):
                e = events[bad]
                verdict.update(first_bad_file=e.get("_file"), first_bad_line=e.get("_line"),
                               first_bad_node=e["node"], first_bad_seq=e["seq"],
                               first_bad_kind=e["kind"], observed=_compact(e),
                               before=[_compact(x) for x in events[max(0, bad - CONTEXT_EVENTS):bad]])
    except Exception as exc:  # a broken judge must not take the corpus down with it
        verdict.update(status="error", conforms=False, matched=0,
                       reason=f"judge raised {type(exc).__name__}: {exc}"[:500])
    verdict["judge_seconds"] = time.perf_counter() - start
    return verdict


def judge_run(run: str, events: Sequence[Event], judge: Judge, config: str) -> list[dict[str, Any]]:
    """All verdicts of one run: causal order, split per partition, judge every group.

    Each verdict counts the out-of-order events of its group; ``run_out_of_order`` and
    ``run_events`` (the same in every verdict of the run) let totals count each event once.
    """
    ordered, forced = causal_order(events)
    late = source_disorder(events) | forced
    verdicts = []
    for key, group in split_groups(ordered).items():
        ooo = sum(1 for e in group if id(e) in late) if late else 0
        v = judge_group(run, key, group, judge, config, ooo)
        v.update(run_events=len(events), run_out_of_order=len(late))
        verdicts.append(v)
    return verdicts


def summary_line(v: dict[str, Any]) -> str:
    """``conforms (n events)`` or ``matched k of n events: reason``."""
    if v["status"] == "conforms":
        return f"conforms ({v['total']} events)"
    if v["status"] == "error":
        return f"error: {v['reason']}"
    if v["status"] == "inconclusive":
        return str(v["reason"])  # "inconclusive: what ran out before which event"
    line = f"matched {v['matched']} of {v['total']} events: {v['reason'] or 'not conforming'}"
    if v.get("explained_by") and v["explained_by"] != v.get("config"):
        where = "" if v.get("explained_at") is None else f" at event {v['explained_at']}"
        then = (f"breaks {v['explained_property']}{where}" if v.get("explained_property")
                else "conforms")
        line += f" [as a run of {v['explained_by']}, it {then}]"
    return line
