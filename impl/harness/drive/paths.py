"""The runs of the model a driver can execute: a named scenario (``model.scenarios``, whose
steps choose their arguments from the state they are taken in) or a fixed path -- a
counterexample exported by ``epochal check --json``, or a list of steps of the same shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.actions import Step
from model.registry import ACTIONS
from model.scenarios import SCENARIOS
from model.state import Entry, Fetch, LeaderAndIsr, State, StopReplica

Chooser = Callable[[State], tuple]


BOUNDS = ("records", "max_epoch", "max_crashes", "max_pauses", "max_expiries", "max_shutdowns", "reassignments", "deletions",
          "preferred_elections", "partition_changes", "fetch_max_records")
"""The search bounds a counterexample keeps when it is driven under another configuration:
its steps stay within them (the configuration's own rules -- truncation, unclean election,
min.insync.replicas -- are the ones driven).  The admin knobs are bounds too: a path with a
deletion needs ``deletions`` >= 1 to be taken at all; and a path whose answers were cut short
(``fetch_max_records``) carries those answers as its messages."""

KNOBS = ("deletions", "partition_changes", "preferred_elections", "reassignments", "max_shutdowns")
"""The model's admin knobs ``epochal drive`` takes on its command line, as ``epochal check`` does."""


class PathError(ValueError):
    """A run the driver cannot read (one line for the user)."""


@dataclass(frozen=True)
class ModelRun:
    """What to drive: a name for reports, the steps (each an action and a way to get its
    arguments in the state it is taken in), and, for a path, the broker count it was found at."""

    name: str
    steps: list[tuple[str, Chooser]]
    brokers: int | None = None
    description: str = ""
    bounds: dict[str, int] = field(default_factory=dict)  # a counterexample's search bounds


def scenario(name: str) -> ModelRun:
    if name not in SCENARIOS:
        raise PathError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}")
    text, script = SCENARIOS[name]
    return ModelRun(name, list(script), None, text)


def _message(d: dict[str, Any]) -> Any:
    """A message argument from its JSON (``check --json`` writes NamedTuples as objects)."""
    if "follower" in d and "kind" in d:
        d = dict(d, records=tuple(Entry(int(r["value"]), int(r["epoch"])) if isinstance(r, dict)
                                  else Entry(*r) for r in d.get("records", ())))
        return Fetch(**d)
    if "max_broker_epoch" in d:
        return LeaderAndIsr(**dict(d, isr=tuple(d["isr"])))
    if "to" in d:
        return StopReplica(**d)
    raise PathError(f"a step argument is not a message the model knows: {json.dumps(d)[:80]}")


def _arg(a: Any) -> Any:
    if isinstance(a, dict):
        return _message(a)
    if isinstance(a, list):
        return tuple(_arg(x) for x in a)
    return a


def _fixed(args: tuple) -> Chooser:
    """A path's step: its arguments are given, whatever the state."""
    return lambda _s: args


def from_json(path: Path) -> ModelRun:
    """A counterexample from ``epochal check --json`` (the first result with a violation),
    or ``{"steps": [...]}``, or a bare list of ``{"action", "args"}`` steps."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise PathError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise PathError(f"{path} is not JSON: {exc}") from None
    steps: Any = doc
    config: dict[str, Any] = {}
    if isinstance(doc, dict) and "results" in doc:
        found = [r for r in doc.get("results") or [] if isinstance(r, dict) and r.get("violation")]
        if not found:
            raise PathError(f"{path} holds no counterexample (no result with a violation)")
        steps = found[0]["violation"].get("steps")
        config = found[0].get("config") or {}
    elif isinstance(doc, dict):
        steps = (doc.get("violation") or doc).get("steps")
        config = doc.get("config") or {}
    brokers = config.get("brokers")
    if config.get("partitions", 1) != 1:
        raise PathError(f"{path}: the driver runs one partition; this counterexample has {config['partitions']}")
    bounds = {k: int(v) for k, v in config.items() if k in BOUNDS and isinstance(v, int) and not isinstance(v, bool)}
    if not isinstance(steps, list) or not steps:
        raise PathError(f"{path} has no steps (expected check --json output or a list of steps)")
    out: list[tuple[str, Chooser]] = []
    for i, s in enumerate(steps, 1):
        if not isinstance(s, dict) or not isinstance(s.get("action"), str) or not isinstance(s.get("args"), list):
            raise PathError(f"{path}: step {i} is not an object with an action and a list of args")
        if s["action"] not in ACTIONS:
            raise PathError(f"{path}: step {i}: unknown action {s['action']!r}")
        try:
            args = tuple(_arg(a) for a in s["args"])
        except TypeError as exc:
            raise PathError(f"{path}: step {i}: bad arguments: {exc}") from None
        out.append((s["action"], _fixed(args)))
    return ModelRun(Path(path).name, out, int(brokers) if isinstance(brokers, int) else None,
                    f"{len(out)} steps from {path}", bounds)


def step_of(action: str, choose: Chooser, s: State) -> Step | None:
    """The step with its arguments chosen in ``s``; None if the chooser finds none (the
    message it asks for is not in flight)."""
    try:
        return Step(action, tuple(choose(s)))
    except (StopIteration, IndexError, KeyError):
        return None


def brokers_needed(run: ModelRun, cfg_name: str) -> int:
    """The brokers a run names: a path says; a scenario names brokers A, B and C by index, so
    the smallest count (2 or 3) at which its steps can all be chosen and taken in the model
    (or until the model refuses one, which a larger cluster would not change)."""
    from model.config import named
    from model.registry import apply
    from model.state import initial

    if run.brokers:
        return run.brokers
    for n in (2, 3):
        cfg = named(cfg_name, brokers=n, **run.bounds)
        s = initial(cfg)
        try:
            for action, choose in run.steps:
                step = step_of(action, choose, s)
                t = apply(s, cfg, step) if step is not None else None
                if t is None:
                    break
                s = t
        except IndexError:
            continue
        return n
    return 3
