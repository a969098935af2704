"""The registry of the protocol's actions: each declared once, with everything that runs it.

An action's entry (``model.registry.entry.Entry``) holds its guard and effect (the pure
function in ``model.actions``), the arguments worth trying, the design section it
implements, the implementation method that performs it, its trace kind (or ``SILENT``), the
text a counterexample prints for it, the judge's view of it and the event it exports as,
and one coverage decision per backend: the compiled search (``native``), the z3 encoding
(``z3``), the trace judge (``judge``) and the model-driven harness driver (``driver``).
``tests/model/test_registry.py`` fails when a decision is missing or untrue.

Entries are declared by design section, one module each:

* ``model.registry.brokers``     -- failures, startup, pauses, clean stops (seed 000 A, E; 003)
* ``model.registry.controller``  -- controller and leader elections, startups, shutdown,
  reassignment (seed 000 A, D, F; 002; 003)
* ``model.registry.commands``    -- brokers acting on LeaderAndISR and StopReplica (seed 000 C)
* ``model.registry.replication`` -- produce, fetch, high watermark, ISR (seed 000 G)
* ``model.registry.partitions``  -- partitions added and removed (seed 000 H)

Adding an action: write its function in ``model.actions``, declare its entry in the module
of its section, and put it in ``ACTIONS`` below; the registry test names whatever else is
missing (a backend decision that is not true, the trace vocabulary, ``docs/actions.md``).

``python -m model.registry --markdown`` prints ``docs/actions.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from model.actions import Step, forget_stale_requests
from model.config import Config
from model.registry import brokers, commands, controller, partitions, replication
from model.registry.entry import (
    SILENT,
    Coverage,
    Decision,
    Emitted,
    Entry,
    Feature,
    Supported,
    Traced,
    Unsupported,
)
from model.state import State

__all__ = [
    "ACTIONS", "BACKENDS", "EXPLORED", "EXPLORED_WITH_REASSIGNMENT", "REASSIGNMENT", "SILENT", "Coverage",
    "Decision", "Emitted", "Entry", "Feature", "Supported", "Traced", "Unsupported", "apply", "explored",
    "successors", "supported", "unsupported_features",
]

ACTIONS: dict[str, Entry] = {
    e.name: e
    for e in [
        brokers.CRASH,
        brokers.RESTART,
        brokers.PAUSE,
        brokers.RESUME,
        brokers.REREGISTER,
        controller.CONTROLLER_ELECT,
        controller.CONTROLLER_RESIGN,
        controller.ELECT_LEADER,
        controller.ON_BROKER_STARTUP,
        controller.CONTROLLED_SHUTDOWN,
        brokers.STOP,
        commands.BECOME_LEADER,
        commands.BECOME_FOLLOWER,
        commands.REJECT_LEADER_AND_ISR,
        commands.TRUNCATE,
        replication.PRODUCE,
        replication.SEND_FETCH,
        replication.HANDLE_FETCH,
        replication.RECEIVE_FETCH,
        replication.SHRINK_ISR,
        replication.EXPAND_ISR,
        replication.ISR_UPDATE_FAILED,
        controller.REASSIGN_START,
        controller.REASSIGN_COMPLETE,
        commands.STOP_REPLICA,
        controller.DELETE_TOPIC,
        controller.CREATE_TOPIC,
        controller.PREFERRED_ELECTION,
        partitions.ADD_PARTITIONS,
        partitions.REMOVE_PARTITIONS,
    ]
}
"""Every action, in the order a search tries them: that order decides which of two equally
short counterexamples is found, and the native search (``native/rules.c``) follows it (its
successors are compared with these, in order)."""

BACKENDS = Coverage._fields
"""The backends each entry decides for: native, z3, judge, driver."""

EXPLORED = tuple(a for a in ACTIONS.values() if a.explored)

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
    in registry order): what a backend must refuse rather than silently leave out."""
    out: list[str] = []
    for e in ACTIONS.values():
        if e.feature is not None and not getattr(e.coverage, backend).supported and e.feature.asked(cfg):
            if e.feature.name not in out:
                out.append(e.feature.name)
    return out
