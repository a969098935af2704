"""Hypothesis stateful search over the model: deeper than exhaustive search, and it shrinks.

The exhaustive checker (``properties.checkers.bfs``) sees every state but only of small
configurations.  Here the *same* actions (``model.registry.ACTIONS``) are the rules of a
Hypothesis ``RuleBasedStateMachine`` and the *same* properties (``properties.PROPERTIES``)
are its invariants, so the machine walks long random runs of configurations the BFS cannot
exhaust (5 brokers, several partitions, many records, epochs and crashes) and, when a
property breaks, Hypothesis shrinks the run to a short one that still breaks it.

* **Steps are actions.**  Each step (the machine's one rule, ``ModelMachine.step``) draws
  one of the actions enabled in the current state -- those for which some argument the
  action's enumerator offers gives a successor -- and then one of those arguments, so every
  step Hypothesis takes is a step the model allows (self-loops excluded, as in the BFS).
  The successors of a state are computed once and kept across runs (``successors``).
* **Invariants are properties.**  State properties are ``@invariant`` checks; transition
  properties (``epoch_monotonic``) are checked inside each step, where the step is known.
* **Tempo, not swarm.**  Hypothesis's own per-run switching off of rules is turned off
  (``_all_rules_on``) and each run instead draws a tempo (``TEMPOS``) under which faults,
  restarts and ISR lag timeouts happen less often than message handling, as in real time:
  the action of a step is drawn with odds in proportion to those rates.  Both were measured
  on the design's KAFKA-1211 loss, which Hypothesis finds and shrinks (``DESIGN_SEARCH``).
* **Readable failures.**  A violation raises ``PropertyViolation`` whose text is the
  numbered step list rendered by ``model.export.render.describe`` -- the same prose the BFS prints.

Profiles (kept here, not in a conftest, so ``epochal fuzz`` and the tests share them):
``ci`` is derandomized, bounded and database-free for the default test run; ``deep`` is
for long searches.  They are registered with Hypothesis as ``epochal-ci`` / ``epochal-deep``
so as not to replace Hypothesis's own built-in ``ci`` profile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from hypothesis.strategies._internal.featureflags import FeatureFlags

from model.actions import Step
from model.config import Config, named
from model.export.render import describe, state_text
from model.registry import EXPLORED, KNOBS, apply
from model.state import State, initial
from properties.safety import all_violations, transition_violation

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
    """Named configuration ``name`` at fuzzing scale (``SCALES``, else ``FUZZ_SCALE``), with overrides.

    Brokers and partitions go through ``model.config.named`` (its limits are the model's:
    broker sets and symmetry assume at most 5 brokers).  Records, epochs and crashes may go
    beyond the BFS's limits -- the walk does not enumerate states, so they cost nothing --
    up to 26 records (they print as letters) and 50 epochs.
    """
    o = {**SCALES.get(name, FUZZ_SCALE), **{k: v for k, v in overrides.items() if v is not None}}
    knobs = {k.field: o[k.field] for k in KNOBS if k.field in o}  # ranges checked by ``named``
    cfg = named(name, brokers=o["brokers"], partitions=o["partitions"], min_insync=overrides.get("min_insync"), **knobs)
    records, max_epoch = o["records"], o["max_epoch"]
    if not 0 <= records <= 26:
        raise ValueError("--records must be between 0 and 26")
    if not 1 <= max_epoch <= 50:
        raise ValueError("--max-epoch must be between 1 and 50")
    return replace(cfg, records=records, max_epoch=max_epoch)


# Where the design's data loss is searched for: the exhaustive checker's own bounds for
# ``design`` (2 brokers, 1 partition, 2 records, epochs up to 3, 2 crashes) and 30-step runs.
# KAFKA-1211 needs both crashes -- the follower in the window between the fetch that
# commits a record and its response, the leader before the restarted follower re-fetches
# -- so a run must keep the two crashes for that window; larger budgets do not make a run
# likelier to hit it (measured per walk: 1 in 180 here, 1 in 110 at 4 records, 4 crashes,
# epochs up to 8 and 60 steps, 1 in 500 at 3 brokers), they make each run dearer and
# each found run longer to shrink.  The loss takes 11 steps; 30 leave room for detours.
# The *fixed* protocol is searched at ``FUZZ_SCALE``, far beyond what the checker can exhaust.
DESIGN_SEARCH: dict[str, int] = dict(brokers=2, partitions=1, records=2, max_epoch=3, max_crashes=2)
DESIGN_STEPS = 30

SCALES: dict[str, dict[str, int]] = {"design": DESIGN_SEARCH}
"""The scale a configuration is fuzzed at when the command line names none, where it is not
``FUZZ_SCALE``: the design's loss is searched where it lives (``DESIGN_SEARCH``), so that a
plain ``epochal fuzz --config design`` finds it; at ``FUZZ_SCALE`` (5 brokers, 2 partitions)
a walk reaches it too seldom for any default budget."""
STEPS: dict[str, int] = {"design": DESIGN_STEPS}
"""Steps per run, where a configuration's own scale sets them rather than the profile."""
DESIGN_BUDGET = 3000
"""Runs the design's search gets at least.  Measured (seeds 1-8, ``deep``, shrinking off):
the first run that loses the record is run 40 to 1,306, 421 on average -- about one run in
400 -- so 3,000 runs find it from all but about 1 seed in 1,000, where the ``ci`` profile's
100 would find it from about 1 seed in 5."""
BUDGETS: dict[str, int] = {"design": DESIGN_BUDGET}
"""Runs per search at least, where a configuration's own search needs more than the profile
gives (a plain ``epochal fuzz --config design`` is to find the design's loss)."""


def steps_for(name: str, profile: str) -> int:
    """Steps per run for configuration ``name`` under ``profile`` (``STEPS`` first)."""
    return STEPS.get(name, PROFILES[profile].stateful_step_count)


def examples_for(name: str, profile: str) -> int:
    """Runs for configuration ``name`` under ``profile``: the profile's, or ``BUDGETS``'s if more."""
    return max(PROFILES[profile].max_examples, BUDGETS.get(name, 0))

# -- the tempo of a run ---------------------------------------------------------------

# Relative rates of the actions that take *time* in a real cluster: a step picks among the
# enabled actions uniformly and keeps a pick with odds that turn the uniform pick into one
# weighted by these rates (``ModelMachine.keeps``; 1 for an action not listed), drawing
# again otherwise.  Every rate is positive, so every run is still a run of the model and
# every interleaving stays reachable; only how often it is sampled changes.  (Until the
# machine had one rule, a rejected pick was a no-op step: the same walk, with no-op steps
# in it.)
#
# Why these classes: messages (fetches, LeaderAndISR deliveries, ZK writes and the
# controller's reactions) take milliseconds; a crash or GC pause is a rare instant; a
# restart (process start, log recovery) and the ISR lag timeout (replica.lag.time.max.ms,
# 10-30 s) take seconds.  A uniform pick runs them all at one speed, so a follower is shrunk
# out of the ISR or a broker restarted within a step or two of anything happening, and the
# calm stretches in which replication commits records -- which a later fault then loses --
# almost never occur.  Why these numbers: the probability that a walk reaches the design's
# KAFKA-1211 loss was computed exactly (a Markov chain over all 181,721 states of ``design``
# at 2 brokers, 2 records, 2 crashes, kind chosen first): 1.0e-4 per walk at uniform rates,
# 2.6e-3 with every slow class at 1/5, 6.4e-3 with crashes at 1/4 and restarts and lag
# timeouts at 1/32 -- the best of a grid over the three rates, within 5% of its optimum.
# (Computed before the controller ran onBrokerStartup once per registration, which added a
# step after each restart and grew that space.  Measured side by side on the two models, 8
# seeded ``deep`` searches of ``DESIGN_SEARCH`` each, shrinking off: the first run that
# loses the record is now run ~600 on average, against ~1,400 before -- the tempo still
# serves.)
CALM: dict[str, float] = {
    "broker_crash": 1 / 4,
    "broker_pause": 1 / 4,
    "broker_stop": 1 / 4,
    "controlled_shutdown": 1 / 4,
    "broker_restart": 1 / 32,
    "broker_resume": 1 / 32,
    "shrink_isr": 1 / 32,
}
TEMPOS: dict[str, dict[str, float]] = {"calm": CALM, "uniform": {}}
TEMPO_DRAW = ("calm", "calm", "calm", "uniform")  # per run: calm 3 times in 4
ODDS = 32  # resolution of the tempo's draw: rates are multiples of 1/ODDS
MAX_REDRAWS = 64  # picks a step may reject before it takes the last one (rejection ends far sooner)

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
    """Base class; ``machine_for(cfg)`` makes one for a configuration.

    One rule, ``step``: it draws one of the enabled actions, as the run's tempo weights
    them, then one of that action's enabling arguments.  (One Hypothesis rule per action, as
    before, cost a filtered draw over every rule's precondition at each step -- two thirds
    of a run's time -- and turned the tempo's rejected picks into no-op steps that used up
    a run's length; here a rejected pick is drawn again within the step.)"""

    cfg: Config
    first_found: float | None = None  # when a run of this class first broke a property
    runs = 0  # runs (Hypothesis examples) started, shrinking included
    progress: Callable[[int], None] | None = None  # told of each run started (``run``)

    def __init__(self) -> None:
        super().__init__()
        cls = type(self)
        cls.runs += 1
        if cls.progress is not None:
            cls.progress(cls.runs)
        self.state = initial(self.cfg)
        self.before: State | None = None
        self.trail: list[tuple[Step, State, State]] = []  # (step, before, after): described on failure only
        self._enabled = successors(self.cfg, self.state)
        self.rates: dict[str, float] = CALM
        _all_rules_on(self)

    @initialize(tempo=st.sampled_from(TEMPO_DRAW))
    def tempo(self, tempo: str) -> None:
        """The run's tempo (``TEMPOS``), drawn once: ``calm`` (3 runs in 4) runs faults,
        restarts and lag timeouts at their real-time rates; ``uniform`` runs every action at
        one speed -- the unweighted walk, kept so that schedules in which slow things happen
        fast are still sampled often.  (``calm`` is drawn first, so shrinking prefers it.)"""
        self.rates = TEMPOS[tempo]

    def enabled(self, action: str) -> list[tuple[tuple, State]]:
        """(args, successor) for every argument that enables ``action`` here."""
        return self._enabled.get(action, [])

    def keeps(self, action: str, data: st.DataObject) -> bool:
        """Whether this pick of ``action`` stands, so that -- the pick being uniform among the
        enabled actions -- the actions taken follow the run's rates: a pick is kept with odds
        ``rate / top``, ``top`` the highest rate of an enabled action (rejection sampling; when
        only slow actions are enabled, one of them is taken at once).  The draw shrinks to 0,
        "keep"."""
        rate = self.rates.get(action, 1.0)
        if rate >= 1.0:
            return True
        top = max(self.rates.get(name, 1.0) for name in self._enabled)
        keep = round(ODDS * rate / top)
        return keep >= ODDS or data.draw(st.integers(0, ODDS - 1), label="tempo") < keep

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        """One step of the model: an enabled action, drawn uniformly and re-drawn while the
        tempo rejects it (``keeps``), then one of its arguments.  With nothing enabled
        (every record written, every message delivered) the state stays put.

        Why rejection rather than one draw weighted by the rates: Hypothesis's draws are not
        uniform (they lean toward small and boundary values and replay parts of earlier
        runs), so the two schemes differ in practice; measured on the design's loss (8
        seeded searches each), the rejection scheme needs about a third of the runs."""
        names = sorted(self._enabled)  # the order the rules had when each action was one
        if not names:
            return
        for _ in range(MAX_REDRAWS):
            action = data.draw(st.sampled_from(names), label="action")
            if self.keeps(action, data):
                break
        self.take(action, data)

    def take(self, action: str, data: st.DataObject) -> None:
        choices = self.enabled(action)
        i = data.draw(st.integers(0, len(choices) - 1), label=action) if len(choices) > 1 else 0
        args, t = choices[i]
        step = Step(action, args)
        self.trail.append((step, self.state, t))
        self.before, self.state, self._enabled = self.state, t, successors(self.cfg, t)
        bad = transition_violation(self.before, t)
        if bad is not None:
            self.fail(*bad)

    def fail(self, prop: str, message: str) -> None:
        if type(self).first_found is None:  # the first counterexample, before any shrinking
            type(self).first_found = time.perf_counter()
        also = [v for v in all_violations(self.before, self.state) if v[0] != prop]
        steps = [(step, describe(step, s, t)) for step, s, t in self.trail]
        raise PropertyViolation(prop, message, steps, self.state, also)

    @invariant()
    def properties_hold(self) -> None:
        for name, msg in all_violations(None, self.state):
            self.fail(name, msg)


_BY_NAME = {a.name: a for a in EXPLORED}

SUCCESSOR_CACHE = 50_000
"""States whose successors are kept between runs (``successors``): runs start from one
initial state and keep passing through the same early states, so most steps find theirs
here.  Past this many the cache starts over, to bound its memory."""
_successor_cache: dict[tuple[Config, State], dict[str, list[tuple[tuple, State]]]] = {}


def successors(cfg: Config, state: State) -> dict[str, list[tuple[tuple, State]]]:
    """Action name -> (args, successor) for every argument that enables it in ``state``
    (self-loops excluded, as in the BFS); enabled actions only.  The model is pure, so the
    answer is kept for the next run that comes through ``state``."""
    key = (cfg, state)
    known = _successor_cache.get(key)
    if known is not None:
        return known
    out: dict[str, list[tuple[tuple, State]]] = {}
    for a in EXPLORED:
        found = []
        for args in a.args(state, cfg):
            t = apply(state, cfg, Step(a.name, args))
            if t is not None and t != state:
                found.append((args, t))
        if found:
            out[a.name] = found
    if len(_successor_cache) >= SUCCESSOR_CACHE:
        _successor_cache.clear()
    _successor_cache[key] = out
    return out


def _all_rules_on(machine: RuleBasedStateMachine) -> None:
    """Turn off Hypothesis's swarm over rules for this machine: every rule stays eligible.

    ``RuleBasedStateMachine`` draws, per run, ``FeatureFlags`` that switch each rule off
    with a probability itself drawn uniformly -- swarm testing.  With one rule per action
    (as this machine had), a run could only reach a bug whose steps use k different actions
    if none of those k rules was switched off, which happens in 1/(k+1) of runs, and a run
    that reached a state where every enabled rule was switched off was thrown away as
    invalid.  KAFKA-1211 needs eight actions; measured (design, 2 brokers, 2 records, 2
    crashes, 40 steps, seeds 1-4): with the swarm, most runs ended invalid within 5 steps
    and none of ~31,000 found the loss; without it, 1 in ~300-2,500 runs did.  With the one
    ``step`` rule the swarm could only switch that rule off, which would end every such run
    at once.  The per-run ``tempo`` plays the swarm's part instead, by rates that model real
    time rather than by switching actions off.

    Hypothesis has no setting for this, so the flags strategy is replaced on the machine's
    own rule strategy (private API; ``test_rule_swarm_is_off`` fails if it moves).
    """
    rules = getattr(machine, "_rules_strategy", None)
    if rules is not None and hasattr(rules, "enabled_rules_strategy"):
        rules.enabled_rules_strategy = st.just(FeatureFlags())


def machine_for(cfg: Config) -> type[ModelMachine]:
    """A ``RuleBasedStateMachine`` class over ``cfg``'s model (its actions: ``EXPLORED``)."""
    return type(f"Model_{cfg.name}", (ModelMachine,), {"cfg": cfg})


# -- running it -------------------------------------------------------------------------


@dataclass
class FuzzResult:
    config: Config
    profile: str
    seed: int | None
    seconds: float
    violation: PropertyViolation | None
    first_seconds: float | None = None  # to the first counterexample, before shrinking
    runs: int = 0  # runs started (shrinking's included)
    interrupted: bool = False  # Ctrl-C stopped the search (a counterexample still shrinking is lost)

    @property
    def found(self) -> bool:
        return self.violation is not None


@dataclass(frozen=True)
class FuzzOptions:
    """How one fuzzing run searches -- everything but the configuration it explores, as
    ``properties.checkers.bfs.SearchOptions`` is for the exhaustive search.

    * ``profile``: the budget and seeding of ``PROFILES`` (``ci`` is derandomized).
    * ``seed``: randomize the run from this seed (even under ``ci``), so several seeds give
      independent searches -- what the benchmark's median time-to-bug needs.
    * ``max_examples``, ``steps``: override the profile's runs and steps per run.
    * ``shrink``: shrink a counterexample (Hypothesis, then ``minimize``); off, the first
      one is reported as found.
    * ``quiet``: keep Hypothesis's own output off.
    * ``progress``: called as ``progress(runs, seconds, phase)`` at most every ``every``
      seconds; ``phase`` is ``searching`` until the first counterexample, then ``shrinking``
      (Hypothesis's runs), then once ``minimizing`` (``minimize``) before it returns.
    """

    profile: str = "ci"
    seed: int | None = None
    max_examples: int | None = None
    steps: int | None = None
    shrink: bool = True
    quiet: bool = True
    progress: Callable[[int, float, str], None] | None = None
    every: float = 10.0


def _settings(o: FuzzOptions) -> settings:
    """The profile's Hypothesis settings with ``o``'s changes: a seed makes the run random
    (from that seed) even under ``ci``; without shrinking the shrink phase is left out."""
    changes: dict = {"verbosity": Verbosity.quiet if o.quiet else Verbosity.normal}
    if o.seed is not None:
        changes["derandomize"] = False
    if o.max_examples is not None:
        changes["max_examples"] = o.max_examples
    if o.steps is not None:
        changes["stateful_step_count"] = o.steps
    if not o.shrink:
        changes["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(PROFILES[o.profile], **changes)


def run(cfg: Config, options: FuzzOptions = FuzzOptions()) -> FuzzResult:
    """Search ``cfg`` as ``options`` say; return the violation -- shrunk by Hypothesis, then
    made 1-minimal (``minimize``) unless ``options.shrink`` is off -- or none within budget."""
    o = options
    chosen = _settings(o)
    machine = machine_for(cfg)
    if o.seed is not None:
        machine = seed(o.seed)(machine)
    started = time.perf_counter()
    if o.progress is not None:
        report, last = o.progress, [started]

        def tick(runs: int) -> None:
            now = time.perf_counter()
            if now - last[0] >= o.every:
                last[0] = now
                report(runs, now - started, "searching" if machine.first_found is None else "shrinking")

        machine.progress = tick
    found: PropertyViolation | None = None
    first: float | None = None
    interrupted = False
    try:
        run_state_machine_as_test(machine, settings=chosen)
    except PropertyViolation as v:
        first = None if machine.first_found is None else machine.first_found - started
        if o.shrink and o.progress is not None:
            o.progress(machine.runs, time.perf_counter() - started, "minimizing")
        found = minimize(cfg, v) if o.shrink else v
    except KeyboardInterrupt:  # the caller reports how far the search got
        interrupted = True
    return FuzzResult(cfg, o.profile, o.seed, time.perf_counter() - started, found, first, machine.runs, interrupted)


def _first_violation(cfg: Config, steps: list[Step], prop: str) -> tuple[int, State, State, str] | None:
    """Replay ``steps`` from the initial state; where ``prop`` first breaks: (steps taken,
    state before the last, state after it, message).  None if a step does not apply (or
    does nothing) or ``prop`` never breaks."""
    s = initial(cfg)
    for n, step in enumerate(steps, 1):
        t = apply(s, cfg, step)
        if t is None or t == s:
            return None
        bad = transition_violation(s, t)
        bad = bad if bad is not None and bad[0] == prop else next((v for v in all_violations(None, t) if v[0] == prop), None)
        if bad is not None:
            return n, s, t, bad[1]
        s = t
    return None


def minimize(cfg: Config, v: PropertyViolation) -> PropertyViolation:
    """Hypothesis's shrunk run, made 1-minimal in the model's own terms: each step whose
    removal leaves a run of the model that still breaks the same property is removed, until
    none is.  (Hypothesis shrinks the choices that made the run, and a choice means another
    step once an earlier step is gone, so it can stop a step or two above the shortest.)"""
    steps = [step for step, _ in v.steps]
    found = _first_violation(cfg, steps, v.property)
    if found is None:  # not replayable as it stands: leave it as Hypothesis gave it
        return v
    for _ in range(len(steps)):  # each round removes a step, or ends
        for i in range(len(steps)):
            trial = _first_violation(cfg, steps[:i] + steps[i + 1:], v.property)
            if trial is not None:
                steps, found = (steps[:i] + steps[i + 1:])[:trial[0]], trial
                break
        else:
            break
    n, before, after, message = found
    states = [initial(cfg)]
    for step in steps:
        states.append(apply(states[-1], cfg, step))
    described = [(step, describe(step, states[k], states[k + 1])) for k, step in enumerate(steps)]
    also = [x for x in all_violations(before, after) if x[0] != v.property]
    return PropertyViolation(v.property, message, described, after, also)


DURABILITY = ("committed_durable", "acked_durable", "replicas_consistent")
