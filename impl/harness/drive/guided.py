"""Model-guided fuzzing, to reach interleavings chaos does not: random schedules through the relay and step mode,
steered toward model states no run has visited yet.

A campaign is a sequence of runs, each on a fresh cluster (the driven cluster has no reset:
a run ends with its brokers' logs, epochs and ZooKeeper wherever the schedule left them).  A
run starts in the model's initial state, where the driven cluster starts
(:class:`~impl.harness.drive.network.SteerableCluster`), and at each point:

* the candidates are the model's enabled steps in the current model state
  (``model.registry.successors``) whose action the driver runs (``operations.OPERATIONS``);
* a candidate whose successor state no run of the campaign has reached yet is preferred;
  among the preferred ones -- or among all, when every successor was reached before -- the
  choice is a seeded random one (:class:`Steering`);
* the driver (:class:`~impl.harness.drive.driver.Driver`) performs the step on the real
  cluster and judges it exactly as ``epochal drive`` does: the trace judge over the whole
  trace so far, ZooKeeper, every replica's log and HW.  A step the implementation followed
  puts it in the model state the driver holds, and that state is *visited*.

A run ends after ``steps`` steps, where the model has no enabled step, or at the first
divergence or reproduced property violation -- which ends the campaign too, reported as
``epochal drive`` reports it and saved as a path ``epochal drive --path FILE`` replays.

The choice is a pure function of the seed and of what the implementation did: the same
seed, against an implementation that follows the model, drives the same schedules.

:func:`judged_states` maps a recorded trace to the model states the trace judge holds
possible after each of its events; the benchmark (``bench/bench_guided_fuzz.py``) counts
those for guided runs and for plain ``epochal chaos`` alike.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.judge.replay import judge
from conformance.spark.order import causal_order, split_groups
from impl.harness.drive.driver import DIVERGED, INTERRUPTED, REPRODUCED, Driver, DriveReport
from impl.harness.drive.operations import OPERATIONS
from impl.harness.drive.paths import ModelRun
from impl.harness.drive.zombie import with_own_steps
from impl.node.layout import DataDir
from model.actions import Step
from model.config import Config, named
from model.export.render import describe
from model.registry import successors
from model.state import UP, State, initial
from properties.safety import all_violations

DEFAULT_STEPS = 30
"""Steps per run: long enough that a run leaves the states every run starts through, short
enough that a run's judging (the whole trace after every step) stays cheap."""


Choice = tuple[Step, State]

LOOKAHEAD = 4
"""How far a steered run looks for a state not yet reached when no next step leads to one."""


class Steering:
    """Which step to take next: the model's enabled steps the driver runs, those leading to
    a state not yet visited first, then a seeded random choice.  ``guided=False`` is the
    plain random walk over the same steps (the baseline the tests compare with).

    ``moves`` gives the enabled steps of a state; by default the model's
    (``model.registry.successors``) restricted to the actions the driver runs."""

    def __init__(self, cfg: Config, seed: int, guided: bool = True,
                 moves: Callable[[State], Iterable[Choice]] | None = None,
                 start: State | None = None) -> None:
        self.cfg = cfg
        self.guided = guided
        self.rng = random.Random(seed)
        self.moves = moves or self._driven
        self.visited: set[State] = {initial(cfg) if start is None else start}
        # states a step was taken toward and the implementation did not reach (it diverged
        # there): not visited, but no longer preferred -- every later run would steer back
        # into the same divergence
        self.tried: set[State] = set()

    def _driven(self, s: State) -> Iterable[Choice]:
        # a step's successor with the steps the implementation takes on its own after it (a
        # resumed broker re-registers); a named configuration freezes no controller inside an
        # election (its one pause is its only failure), so no zombie waits (drive.zombie)
        return ((step, with_own_steps(step, t, self.cfg, frozenset())) for step, t in successors(s, self.cfg)
                if step.action in OPERATIONS and drivable(step, s))

    def candidates(self, s: State) -> list[Choice]:
        """The enabled steps, in a fixed order (the choice must not depend on the order
        ``successors`` happens to yield them in)."""
        return sorted(self.moves(s), key=lambda c: (c[0].action, repr(c[0].args)))

    def new(self, t: State) -> bool:
        return t not in self.visited and t not in self.tried

    def choose(self, s: State) -> Choice | None:
        """The next step, or None to end the run: no step is enabled or -- steered -- no
        state within ``LOOKAHEAD`` steps is new (a run that only goes round states already
        reached is better ended, and a fresh cluster started)."""
        options = self.candidates(s)
        if not options:
            return None
        if self.guided:
            fresh = [c for c in options if self.new(c[1])]
            options = fresh or self._toward_new(s, options)
            if not options:
                return None
        return options[self.rng.randrange(len(options))]

    def _toward_new(self, s: State, options: list[Choice]) -> list[Choice]:
        """The first steps of the shortest paths (up to ``LOOKAHEAD`` steps) from ``s`` to a
        state no run has reached; none if there is no such path."""
        seen = {s} | {t for _, t in options}
        frontier = [(t, c) for c in options for t in (c[1],)]
        for _ in range(LOOKAHEAD - 1):
            hits: list[Choice] = []
            ahead: list[tuple[State, Choice]] = []
            for u, first in frontier:
                for _, t in self.candidates(u):
                    if self.new(t):
                        if first not in hits:
                            hits.append(first)
                    elif t not in seen:
                        seen.add(t)
                        ahead.append((t, first))
            if hits:
                return hits
            frontier = ahead
        return []

    def reached(self, s: State) -> bool:
        """Mark ``s`` visited; whether it was new."""
        if s in self.visited:
            return False
        self.visited.add(s)
        return True


def drivable(step: Step, s: State) -> bool:
    """Whether the driver can perform ``step`` in ``s``, beyond having an operation for its
    action.  One case found by this fuzzing: the model lets a follower send a fetch to a
    leader that is down (the message is lost); on a real cluster the follower's connection
    to a dead broker fails, nothing reaches the relay, and the driver, which waits for the
    relay to hold the fetch, times out."""
    if step.action == "send_fetch":
        f, p = step.args
        leader = s.brokers[f].replicas[p].leader
        return 0 <= leader < len(s.brokers) and s.brokers[leader].status == UP
    return True


def walk(steer: Steering, start: State, steps: int, per_run: int,
         ends: Callable[[State, State], bool] | None = None) -> Steering:
    """The campaign without a cluster, every step followed: what the steering does when the
    implementation follows the model, in milliseconds.  ``steps`` steps in all, in runs that
    each start in ``start`` and end after ``per_run`` steps, when the steering ends them, or
    at a step that ``ends`` (by default: one that breaks a property, where a real run ends
    too)."""
    stop = ends or (lambda s, t: bool(all_violations(s, t)))
    taken = 0
    while taken < steps:
        s = start
        for _ in range(min(per_run, steps - taken)):
            c = steer.choose(s)
            if c is None:
                break
            taken += 1
            t = c[1]
            steer.reached(t)
            if stop(s, t):
                break
            s = t
        else:
            continue
        if s is start and c is None:
            break  # nothing to do from the start: the campaign is over
    return steer


# -- one real run ----------------------------------------------------------------------------------


class _ChosenSteps:
    """A run's steps, chosen one at a time in the state the driver has reached: the driver's
    loop asks for the next step only after the previous one was followed, so the choice is
    made in the model state the implementation was just judged to be in (older requests the
    driver delivered first included).  Before the cluster is up (the driver's check that
    every action has a driver) it yields nothing: every chosen action has one by
    construction."""

    def __init__(self, steer: Steering, bound: int) -> None:
        self.steer = steer
        self.bound = bound
        self.driver: Driver | None = None
        self.taken: list[tuple[Step, State]] = []  # each chosen step, with the state it was chosen in
        self.target: State | None = None  # the state the last chosen step leads to in the model
        self.new_states = 0

    def __len__(self) -> int:
        return self.bound

    def __iter__(self) -> Iterator[tuple[str, Callable[[State], tuple]]]:
        d = self.driver
        if d is None or d.s is None:
            return
        while True:
            if self.steer.reached(d.s):  # the state the last step was judged to reach
                self.new_states += 1
            if len(self.taken) >= self.bound:
                return
            c = self.steer.choose(d.s)
            if c is None:
                return
            step, self.target = c
            self.taken.append((step, d.s))
            yield step.action, (lambda _s, args=step.args: args)


@dataclass
class RunRecord:
    n: int
    verdict: str
    steps: int  # steps chosen (the last one diverged, if the run did)
    transitions: int  # model steps the implementation took (older requests delivered first included)
    new_states: int  # model states this run reached first
    seconds: float
    setup_seconds: float
    divergence: dict[str, Any] | None = None
    property: str | None = None
    path: str | None = None  # the saved schedule, when the run diverged or reproduced a violation


@dataclass
class GuidedReport:
    config: str
    brokers: int
    seed: int
    budget_s: float
    steps_per_run: int
    runs: list[RunRecord] = field(default_factory=list)
    states: int = 0  # distinct model states the implementation was judged to reach
    seconds: float = 0.0
    exit_code: int = 0
    failures: list[DriveReport] = field(default_factory=list)  # runs that diverged or reproduced a violation

    def states_per_minute(self) -> float:
        return round(60 * self.states / self.seconds, 1) if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.config, "brokers": self.brokers, "seed": self.seed, "budget_s": self.budget_s,
                "steps_per_run": self.steps_per_run, "runs": [vars(r) for r in self.runs],
                "states": self.states, "seconds": round(self.seconds, 1),
                "states_per_minute": self.states_per_minute(),
                "transitions": sum(r.transitions for r in self.runs),
                "failures": [{**f.as_dict(), "path": r.path} for f, r in
                             zip(self.failures, [r for r in self.runs if r.path], strict=True)],
                "exit_code": self.exit_code}


def path_json(cfg: Config, steps: list[tuple[Step, State]], note: str) -> dict[str, Any]:
    """A schedule as ``epochal drive --path`` reads it (the shape of ``check --json``'s
    counterexample steps, with the configuration's bounds)."""
    return {"config": {"name": cfg.name, "brokers": cfg.brokers, "partitions": cfg.partitions,
                       "records": cfg.records, "max_epoch": cfg.max_epoch, "max_crashes": cfg.max_crashes,
                       "max_pauses": cfg.max_pauses,
                       **({"fetch_max_records": cfg.fetch_max_records} if cfg.fetch_max_records else {})},
            "note": note,
            "steps": [{"n": i, "action": step.action, "args": _plain(step.args), "description": _text(step, s, cfg)}
                      for i, (step, s) in enumerate(steps, 1)]}


def _text(step: Step, s: State, cfg: Config) -> str:
    t = next((t for st, t in successors(s, cfg) if st == step), None)
    return describe(step, s, t) if t is not None else step.action


def _plain(x: Any) -> Any:
    if hasattr(x, "_asdict"):
        return {k: _plain(v) for k, v in x._asdict().items()}
    if isinstance(x, tuple | list):
        return [_plain(v) for v in x]
    return x


def fuzz(config: str, budget_s: float, seed: int = 0, brokers: int = 2, steps: int = DEFAULT_STEPS,
         data_dir: Path | None = None, step_timeout: float = 20.0,
         progress: Callable[[str], None] | None = None, keep: bool = False,
         on_run: Callable[[Path, DriveReport], None] | None = None) -> GuidedReport:
    """Runs, each on a fresh cluster, until ``budget_s`` is spent (a run is started only
    while the budget lasts).  A run that diverges or reproduces a violation is saved as a
    path (``guided-SEED-run-N.json`` in the campaign's directory) and the campaign goes on,
    no longer steering toward the state it failed to reach.  ``on_run`` sees each run's
    directory (its traces) before it is removed (unless ``keep``; a failed run's is kept);
    its time is not the campaign's (neither the budget's nor ``seconds``)."""
    say = progress or (lambda m: None)
    start = time.monotonic()
    cfg = named(config, brokers=brokers)
    steer = Steering(cfg, seed)
    root = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="epochal-guided-"))
    root.mkdir(parents=True, exist_ok=True)
    report = GuidedReport(config, brokers, seed, budget_s, steps)
    n = 0
    aside = 0.0  # seconds spent in on_run: the caller's, not the campaign's
    while time.monotonic() - start - aside < budget_s:
        n += 1
        chosen = _ChosenSteps(steer, steps)
        run = ModelRun(f"guided-{seed}-{n}", chosen, brokers, f"guided run {n} of seed {seed}")  # type: ignore[arg-type]
        run_dir = root / f"run-{n}"
        driver = Driver(config, data_dir=run_dir, step_timeout=step_timeout)
        chosen.driver = driver
        r = driver.run(run)
        rec = RunRecord(n, r.verdict, len(chosen.taken), r.transitions, chosen.new_states,
                        round(r.seconds, 1), round(r.setup_seconds, 1), r.divergence, r.property)
        report.runs.append(rec)
        say(f"run {n}: {r.verdict}, {len(chosen.taken)} steps, {chosen.new_states} new states "
            f"({len(steer.visited)} in all) in {r.seconds:.1f}s")
        if on_run is not None:
            t0 = time.monotonic()
            on_run(run_dir, r)
            aside += time.monotonic() - t0
        if r.verdict in (DIVERGED, REPRODUCED):
            what = r.divergence or {}
            saved = root / f"guided-{seed}-run-{n}.json"
            note = (f"epochal drive --generate guided --seed {seed}, run {n}: {r.verdict} at step "
                    f"{what.get('step')} ({what.get('action')})")
            saved.write_text(json.dumps(path_json(cfg, chosen.taken, note), indent=1) + "\n")
            rec.path = str(saved)
            report.failures.append(r)
            report.exit_code = 1
            if chosen.target is not None:
                steer.tried.add(chosen.target)
            say(f"run {n}: {r.verdict} at step {what.get('step')} ({what.get('action')}): "
                f"{what.get('implementation_did')}; the model allowed: {what.get('model_allowed')}")
            say(f"run {n}: its schedule is saved: epochal drive --config {config} --path {saved}")
        elif not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        if r.verdict == INTERRUPTED:
            say(f"run {n}: interrupted by Ctrl-C; the report covers the runs so far")
            if report.exit_code != 1:  # a failure found before is still the answer
                report.exit_code = 3
            break
        if not chosen.taken:
            break  # the model has no step the driver runs: nothing more to steer
    report.states = len(steer.visited)
    report.seconds = time.monotonic() - start - aside
    return report


# -- model states from traces ----------------------------------------------------------------------


def judged_states(trace_dir: Path, config: str) -> set[State]:
    """The model states the trace judge holds possible after each model event of one run's
    traces, over every (topic, partition) group (each group judged alone, as ``epochal
    conform`` does; a group that stops conforming counts its states up to there)."""
    from traces.reader import read_traces

    out: set[State] = set()
    events = read_traces([Path(trace_dir)]).events
    ordered, _ = causal_order(events)
    for group in split_groups(ordered).values():
        judge(group, config, on_states=lambda hyps: out.update(h.state for h in hyps))
    return out


def within_bounds(s: State, cfg: Config) -> bool:
    """Whether a judged state lies within the bounds of the model configuration ``cfg`` --
    records produced, leader epochs, crashes, pauses and controlled shutdowns -- the state
    graph ``epochal check`` explores.  A real run writes on and on: past its first records
    every write is a state no bounded search has, which says more about the workload than
    about the schedules.  Leader epochs are the trace's (the implementation's first is 0
    where the model's is 1)."""
    g = s.ghost
    if g.produced > cfg.records or g.crashes > cfg.max_crashes or g.pauses > cfg.max_pauses \
            or g.shutdowns > cfg.max_shutdowns:
        return False
    epochs = [p.leader_epoch for p in s.zk.partitions]
    epochs += [r.leader_epoch for b in s.brokers for r in b.replicas]
    return max(epochs, default=0) < cfg.max_epoch


def run_trace_dir(run_dir: Path) -> Path:
    """Where a driven run's cluster writes its traces."""
    return DataDir.of(run_dir).traces
