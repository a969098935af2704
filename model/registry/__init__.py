"""The registry of the protocol's actions: the table every backend runs, and the functions over it.

Each action is declared once, in its design section's module of ``model.actions`` (see
there): its guard and effect, the arguments worth trying, its ``Entry`` -- design section,
implementation method, trace kind (or ``SILENT``), the text a counterexample prints for it,
the judge's view of it and the event it exports as, and one coverage decision per backend:
the compiled search (``native``), the z3 encoding (``z3``), the trace judge (``judge``) and
the model-driven harness driver (``driver``) -- and its ``Knob``.  This package assembles
the sections' entries into ``ACTIONS`` (in ``model.actions.SECTIONS`` order) and derives
from it what others read: the actions a search of a configuration explores, which actions
a backend runs, and which action replays each trace kind (``REPLAYED``).
``tests/model/test_registry.py`` fails when a decision is missing or untrue.

``python -m model.registry --markdown`` prints ``docs/actions.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from model.actions import ENTRIES, KNOBS, Step, forget_stale_requests
from model.actions.entry import (
    SILENT,
    Coverage,
    Decision,
    Emitted,
    Entry,
    Knob,
    Supported,
    Traced,
    Unsupported,
)
from model.config import Config
from model.state import State

__all__ = [
    "ACTIONS", "BACKENDS", "EXPLORED", "EXPLORED_WITH_REASSIGNMENT", "REASSIGNMENT", "SILENT", "Coverage",
    "Decision", "Emitted", "Entry", "KNOBS", "Knob", "REPLAYED", "Supported", "Traced", "Unsupported", "apply", "explored",
    "successors", "supported", "unsupported_features",
]

ACTIONS: dict[str, Entry] = {e.name: e for e in ENTRIES}
"""Every action, in the order a search tries them: that order decides which of two equally
short counterexamples is found, and the native search (``native/rules.c``) follows it (its
successors are compared with these, in order)."""

BACKENDS = Coverage._fields
"""The backends each entry decides for: native, z3, judge, driver."""

EXPLORED = tuple(a for a in ACTIONS.values() if a.explored)

REPLAYED: dict[str, str] = {
    e.trace.kind: name
    for name, e in ACTIONS.items()
    if e.trace is not None and not e.trace.reasons and e.coverage.judge.supported
}
"""Trace kind -> the action the judge replays an event of it as: the judged action traced
as that kind with no ``reason`` to tell it apart.  A kind of ``traces.vocabulary.KINDS``
not here is informational (validated and ordered, not replayed), or replayed only by its
``reason`` (``elect_leader`` events of a controlled shutdown, a reassignment, ...)."""

REASSIGNMENT = ("reassign_start", "reassign_complete", "stop_replica")
"""Seed 000 F's actions: the checker explores them only when ``Config.reassignments`` > 0,
so every named configuration at its default bounds keeps exactly the state space it had
(and the Hypothesis machine, built from ``EXPLORED``, the same rules)."""

EXPLORED_WITH_REASSIGNMENT = EXPLORED + tuple(ACTIONS[name] for name in REASSIGNMENT)


@functools.lru_cache(maxsize=256)
def explored(cfg: Config) -> tuple[Entry, ...]:
    """The actions a search of ``cfg`` tries, in registry order: the always-explored ones,
    and those whose knob ``cfg`` turns on (reassignments, topic deletions, preferred-replica
    elections, partitions added or removed)."""
    return tuple(e for e in ACTIONS.values() if e.explored_in(cfg))


def apply(s: State, cfg: Config, step: Step) -> State | None:
    """Take one step, or None if its guard does not hold."""
    t = ACTIONS[step.action].fn(s, cfg, *step.args)
    return None if t is None else forget_stale_requests(t, cfg)


def successors(s: State, cfg: Config) -> Iterator[tuple[Step, State]]:
    """Every enabled step from s and the state it leads to (self-loops omitted)."""
    for action in explored(cfg):
        fn = action.fn
        for args in action.args(s, cfg):
            t = fn(s, cfg, *args)
            if t is not None:
                t = forget_stale_requests(t, cfg)
                if t != s:
                    yield Step(action.name, args), t


def supported(backend: str) -> tuple[str, ...]:
    """The actions ``backend`` runs, in registry order."""
    return tuple(name for name, e in ACTIONS.items() if getattr(e.coverage, backend).supported)


def unsupported_features(backend: str, cfg: Config) -> list[str]:
    """The features ``cfg`` asks for whose actions ``backend`` does not run (each named once,
    in registry order) -- an action's knob, or a knob that changes its rule (``modifiers``):
    what a backend must refuse rather than silently leave out."""
    out: list[str] = []
    for e in ACTIONS.values():
        if getattr(e.coverage, backend).supported:
            continue
        for knob in ((e.knob,) if e.knob is not None else ()) + e.modifiers:
            if knob.asked(cfg) and knob.feature not in out:
                out.append(knob.feature)
    return out
