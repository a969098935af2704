"""Hypothesis stateful search over the model: deeper than exhaustive search, and it shrinks.

The exhaustive checker (``model.checker``) sees every state but only of small
configurations.  Here the *same* actions (``model.actions.ACTIONS``) are the rules of a
Hypothesis ``RuleBasedStateMachine`` and the *same* properties (``properties.PROPERTIES``)
are its invariants, so the machine walks long random runs of configurations the BFS cannot
exhaust (5 brokers, several partitions, many records, epochs and crashes) and, when a
property breaks, Hypothesis shrinks the run to a short one that still breaks it.

* **Rules are actions.**  One rule per explored action.  Its precondition is the action's
  guard -- "some argument the action's enumerator offers gives a successor" -- and the
  argument is drawn with ``st.sampled_from`` from exactly those enabled arguments, so every
  step Hypothesis takes is a step the model allows (self-loops excluded, as in the BFS).
* **Invariants are properties.**  State properties are ``@invariant`` checks; transition
  properties (``epoch_monotonic``) are checked inside each rule, where the step is known.
* **Readable failures.**  A violation raises ``PropertyViolation`` whose text is the
  numbered step list rendered by ``model.render.describe`` -- the same prose the BFS prints.

Profiles (kept here, not in a conftest, so ``epochal fuzz`` and the tests share them):
``ci`` is derandomized, bounded and database-free for the default test run; ``deep`` is
for long searches.  They are registered with Hypothesis as ``epochal-ci`` / ``epochal-deep``
so as not to replace Hypothesis's own built-in ``ci`` profile.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from model.actions import EXPLORED, Step, apply
from model.config import Config, named
from model.render import describe, state_text
from model.state import State, initial
from properties import all_violations, transition_violation

# -- profiles ------------------------------------------------------------------------------

_COMMON = dict(
    deadline=None,  # a step costs what the state costs: wall time is not a property
    database=None,  # no example database: runs are reproducible from the seed alone
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,  # one violation, shrunk; not a group of them
    print_blob=False,
)

PROFILES: dict[str, settings] = {
    # the default test run: same examples every time, seconds not minutes
    "ci": settings(derandomize=True, max_examples=100, stateful_step_count=80, **_COMMON),
    # long searches from the command line
    "deep": settings(derandomize=False, max_examples=5000, stateful_step_count=150, **_COMMON),
}
for _name, _profile in PROFILES.items():
    settings.register_profile(f"epochal-{_name}", _profile)

# The scale the fuzzer runs at by default: well past what the BFS can exhaust.
FUZZ_SCALE: dict[str, int] = dict(brokers=5, partitions=2, records=8, max_epoch=12, max_crashes=6)


def fuzz_config(name: str, **overrides: int | None) -> Config:
    """Named configuration ``name`` at fuzzing scale (``FUZZ_SCALE``), with overrides.

    Brokers and partitions go through ``model.config.named`` (its limits are the model's:
    broker sets and symmetry assume at most 5 brokers).  Records, epochs and crashes may go
    beyond the BFS's limits -- the walk does not enumerate states, so they cost nothing --
    up to 26 records (they print as letters) and 50 epochs.
    """
    o = {**FUZZ_SCALE, **{k: v for k, v in overrides.items() if v is not None}}
    cfg = named(name, brokers=o["brokers"], partitions=o["partitions"], min_insync=overrides.get("min_insync"))
    records, max_epoch, crashes = o["records"], o["max_epoch"], o["max_crashes"]
    pauses = o.get("max_pauses", cfg.max_pauses)
    if not 0 <= records <= 26:
        raise ValueError("--records must be between 0 and 26")
    if not 1 <= max_epoch <= 50:
        raise ValueError("--max-epoch must be between 1 and 50")
    if crashes < 0 or pauses < 0:
        raise ValueError("--max-crashes and --max-pauses must be >= 0")
    return replace(cfg, records=records, max_epoch=max_epoch, max_crashes=crashes, max_pauses=pauses)


FAULTS = frozenset({"broker_crash", "broker_pause"})
MAX_PACE = 12

# -- the violation a run ends with ------------------------------------------------------


class PropertyViolation(AssertionError):
    """A property broke; carries the numbered steps from the initial state."""

    def __init__(self, prop: str, message: str, steps: list[tuple[Step, str]], state: State,
                 also: list[tuple[str, str]]) -> None:
        self.property, self.message, self.steps, self.state, self.also = prop, message, steps, state, also
        super().__init__(self.text())

    def text(self) -> str:
        lines = [f"VIOLATION of {self.property}: {self.message}"]
        lines += [f"     also {name}: {msg}" for name, msg in self.also]
        lines += ["", f"Steps ({len(self.steps)}):"]
        lines += [f"{i:3d}. {desc}" for i, (_, desc) in enumerate(self.steps, 1)]
        lines += ["", "State that breaks it:", state_text(self.state)]
        return "\n".join(lines)


# -- the state machine ------------------------------------------------------------------


class ModelMachine(RuleBasedStateMachine):
    """Base class; ``machine_for(cfg)`` adds one rule per action for a configuration."""

    cfg: Config

    def __init__(self) -> None:
        super().__init__()
        self.state = initial(self.cfg)
        self.before: State | None = None
        self.steps: list[tuple[Step, str]] = []
        self._enabled: dict[str, list[tuple[tuple, State]]] = {}
        self.pace = 1  # steps between faults (see ``nemesis``)
        self.last_fault = -(10**6)

    @initialize(pace=st.integers(1, MAX_PACE))
    def nemesis(self, pace: int) -> None:
        """Jepsen-style pacing, drawn once per run: a fault (crash, GC pause) may strike only
        ``pace`` steps after the previous one.  ``pace == 1`` is the unrestricted model, and
        every run is a run of the model either way; larger paces leave the calm stretches
        in which replication commits records that a later fault can then lose.  Uniform rule
        choice alone spends the crash budget in the first few steps (measured: the design's
        data loss is then found in under 1% of walks, in none of 4,000 Hypothesis runs)."""
        self.pace = pace

    def enabled(self, action: str) -> list[tuple[tuple, State]]:
        """(args, successor) for every argument that enables ``action`` here (cached per state)."""
        if action in FAULTS and len(self.steps) - self.last_fault < self.pace:
            return []
        if action not in self._enabled:
            a = _BY_NAME[action]
            out = []
            for args in a.args(self.state, self.cfg):
                t = apply(self.state, self.cfg, Step(action, args))
                if t is not None and t != self.state:
                    out.append((args, t))
            self._enabled[action] = out
        return self._enabled[action]

    def take(self, action: str, data: st.DataObject) -> None:
        choices = self.enabled(action)
        i = data.draw(st.integers(0, len(choices) - 1), label=action) if len(choices) > 1 else 0
        args, t = choices[i]
        step = Step(action, args)
        self.steps.append((step, describe(step, self.state, t)))
        self.before, self.state, self._enabled = self.state, t, {}
        if action in FAULTS:
            self.last_fault = len(self.steps)
        bad = transition_violation(self.before, t)
        if bad is not None:
            self.fail(*bad)

    def fail(self, prop: str, message: str) -> None:
        also = [v for v in all_violations(self.before, self.state) if v[0] != prop]
        raise PropertyViolation(prop, message, list(self.steps), self.state, also)

    @precondition(lambda self: not any(self.enabled(a.name) for a in EXPLORED))
    @rule()
    def quiescent(self) -> None:
        """Nothing is enabled (every record written, every message delivered): stay put."""

    @invariant()
    def properties_hold(self) -> None:
        for name, msg in all_violations(None, self.state):
            self.fail(name, msg)


_BY_NAME = {a.name: a for a in EXPLORED}



def _rule_for(action: str):
    """The rule for one action: enabled when its guard holds for some argument."""

    def step(self: ModelMachine, data: st.DataObject) -> None:
        self.take(action, data)

    step.__name__ = step.__qualname__ = action
    step.__doc__ = (_BY_NAME[action].fn.__doc__ or "").strip().splitlines()[0]
    return precondition(lambda self: bool(self.enabled(action)))(rule(data=st.data())(step))


def machine_for(cfg: Config) -> type[ModelMachine]:
    """A ``RuleBasedStateMachine`` class whose rules are the actions of ``cfg``'s model."""
    body = {"cfg": cfg, **{a.name: _rule_for(a.name) for a in EXPLORED}}
    return type(f"Model_{cfg.name}", (ModelMachine,), body)


# -- running it -------------------------------------------------------------------------


@dataclass
class FuzzResult:
    config: Config
    profile: str
    seed: int | None
    seconds: float
    violation: PropertyViolation | None

    @property
    def found(self) -> bool:
        return self.violation is not None


def run(cfg: Config, profile: str = "ci", seed_value: int | None = None, quiet: bool = True,
        max_examples: int | None = None, shrink: bool = True, steps: int | None = None) -> FuzzResult:
    """Search ``cfg`` with a profile; return the (shrunk) violation, or none within budget.

    With ``seed_value`` the run is randomized from that seed (even under ``ci``), so several
    seeds give independent searches -- what the benchmark's median time-to-bug needs.
    """
    base = PROFILES[profile]
    changes: dict = {"verbosity": Verbosity.quiet if quiet else Verbosity.normal}
    if seed_value is not None:
        changes["derandomize"] = False
    if max_examples is not None:
        changes["max_examples"] = max_examples
    if steps is not None:
        changes["stateful_step_count"] = steps
    if not shrink:
        changes["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
    chosen = settings(base, **changes)
    machine = machine_for(cfg)
    if seed_value is not None:
        machine = seed(seed_value)(machine)
    started = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=chosen)
    except PropertyViolation as v:
        return FuzzResult(cfg, profile, seed_value, time.perf_counter() - started, v)
    return FuzzResult(cfg, profile, seed_value, time.perf_counter() - started, None)


DURABILITY = ("committed_durable", "acked_durable", "replicas_consistent")
