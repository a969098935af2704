"""The judge's compiled step is held to the Python model.

``judge(..., compiled=True)`` takes each step with the native search's C rules
(``properties.checkers.native_step``) instead of ``model.registry.apply``.  Two tests hold it
to the model: every step the judge takes over a corpus -- recorded runs, the traces that
must fail, synthetic runs of varied shapes and their mutants -- gives the model's state (or
the model's "not enabled"), and the two judges give the same verdicts, reason, index and
states included.  A third shows the first would catch a C rule that differs: a library built
from sources with one rule changed is found out.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import conformance.judge.replay as replay
from conformance.judge.compiled import compiled_step
from conformance.mutations import MUTATIONS
from model.actions import Step
from model.config import NAMED, Config
from model.registry import apply, successors
from model.state import State, initial
from properties.checkers.native import SOURCE_DIR, NoCompiler
from properties.checkers.native_step import CompiledStep, library
from tests.conformance.test_replay_fast_path import _groups
from traces.reader import read_traces
from traces.synthetic import generate_run

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


QUICK = ("leader-kill", "preferred-election")
"""The recorded runs of the default suite (the slow one judges them all)."""


def _cases(full: bool) -> list[tuple[str, list[dict[str, Any]]]]:
    """Recorded runs, the nonconforming ones, synthetic runs of varied shapes, and mutants."""
    recorded = sorted(p for p in (DATA / "recorded").iterdir() if p.is_dir() and (full or p.name in QUICK))
    cases = _groups(read_traces(recorded).events)
    cases += _groups(read_traces([DATA / "nonconforming"]).events)
    runs = [generate_run(f"cs{i}", partitions=1 + i % 3, records=3 + (5 * i) % 11, brokers=2 + i % 3,
                         kill_leader=i % 2 == 0, seed=7000 + i) for i in range(6 if full else 3)]
    for run in runs:
        cases += _groups(run)
    for name, mutate in MUTATIONS.items():
        mutant = mutate(runs[0], random.Random(1))
        if mutant is not None:
            cases += [(f"{name} {key}", g) for key, g in _groups(mutant)]
    cases.append(("design-kafka-1211", replay.design_bug_events()))
    return cases


@pytest.fixture(scope="module")
def cases() -> list[tuple[str, list[dict[str, Any]]]]:
    try:
        library()
    except NoCompiler as e:
        pytest.skip(str(e))
    return _cases(full=False)


@pytest.fixture(scope="module")
def every_case(cases) -> list[tuple[str, list[dict[str, Any]]]]:
    return _cases(full=True)


class Comparing:
    """A judge's step that takes the Python model's step and the compiled one, and notes
    every step where they differ."""

    def __init__(self, step: CompiledStep) -> None:
        self.step = step
        self.differ: list[tuple[Step, State | None, State | None]] = []
        self.compiled = 0

    def __call__(self, s: State, cfg: Config, step: Step) -> State | None:
        model = apply(s, cfg, step)
        native = self.step.compiled(s, cfg, step)
        if native is not False:
            self.compiled += 1
            if native != model:
                self.differ.append((step, model, native))
        return model


def _judge_every_step(cases: list[tuple[str, list[dict[str, Any]]]], step: CompiledStep,
                      monkeypatch: pytest.MonkeyPatch) -> Comparing:
    comparing = Comparing(step)
    monkeypatch.setattr(replay, "stepper", lambda cfg: comparing)
    # step by step: runs of events in C (test_compiled_judge.py) take no step through the stepper
    monkeypatch.setattr(replay, "batch_available", lambda: False)
    for _, group in cases:
        replay.judge(group, "kip320", memo=False, compiled=True)
    return comparing


def test_every_step_the_judge_takes_compiled_is_the_models(cases, monkeypatch) -> None:
    _every_step_is_the_models(cases, monkeypatch, 3_000)


@pytest.mark.slow
def test_every_step_the_judge_takes_compiled_is_the_models_on_every_recorded_run(every_case, monkeypatch) -> None:
    _every_step_is_the_models(every_case, monkeypatch, 10_000)


def _every_step_is_the_models(cases: list[tuple[str, list[dict[str, Any]]]], monkeypatch: pytest.MonkeyPatch,
                              least: int) -> None:
    comparing = _judge_every_step(cases, compiled_step(), monkeypatch)
    assert not comparing.differ, (f"{len(comparing.differ)} steps differ, of "
                                  f"{sorted({step.action for step, _, _ in comparing.differ})}; the first: {comparing.differ[0]}")
    assert comparing.compiled > least, "the compiled step took too few of the judge's steps to say anything"


def _varied(step: Step, brokers: int) -> list[Step]:
    """The step, the step with one of its int arguments another of -1 .. brokers - 1, and
    a produce or fetch without a hold with each (``with_holds`` adds them where they may hold)."""
    out = [step]
    if step.action in ("produce", "handle_fetch") and len(step.args) == (2 if step.action == "produce" else 1):
        out += [step._replace(args=(*step.args, h)) for h in range(brokers)]
    for k, a in enumerate(step.args):
        if isinstance(a, int) and not isinstance(a, bool):
            out += [step._replace(args=(*step.args[:k], v, *step.args[k + 1:])) for v in range(-1, brokers) if v != a]
    return out


SEARCHED = {
    "kafka26": (NAMED["kafka26"], {("produce", 3), ("handle_fetch", 2), ("elect_leader", 4), ("broker_restart", 2)}),
    "kafka39-unclean": (NAMED["kafka39-unclean"], {("propose_isr", 3), ("alter_partition", 2), ("apply_isr", 1)}),
    "kip320-reassign": (replace(NAMED["kip320"], reassignments=1, max_expiries=1),
                        {("reassign_start", 3), ("reassign_complete", 3), ("broker_expire", 1),
                         ("reject_leader_and_isr", 1)}),
}
"""Configurations whose steps the recorded runs above do not take, and those steps."""


@pytest.mark.parametrize("config", sorted(SEARCHED))
def test_every_step_of_other_configurations_compiled_is_the_models(config: str, cases) -> None:
    """Kafka's rules -- produce and fetch with the HW held outside the ISR, the broker start
    with a checkpointed HW, the controller's write of a dead replica, AlterPartition -- and
    reassignments, session expiries and refused LeaderAndISR: from the first states of a
    breadth-first search, every step enabled there, each with any one of its int arguments
    changed to another broker or -1 (and a hold added), every refusal of a LeaderAndISR, and
    every step enabled in the state's parent (most of these not enabled here), compiled, is
    the model's."""
    cfg, taken = SEARCHED[config]
    step = CompiledStep()
    start = initial(cfg)
    parents: dict[State, State] = {start: start}
    queue = [start]
    compiled: dict[tuple[str, int], int] = {}
    differ = []
    for s in queue:
        enabled = list(successors(s, cfg))
        tried = [*(v for x, _ in enabled for v in _varied(x, cfg.brokers)),
                 *(Step("reject_leader_and_isr", (m,)) for m in s.leader_and_isr),
                 *(x for x, _ in successors(parents[s], cfg))]
        for x in tried:
            native = step.compiled(s, cfg, x)
            if native is False:  # a message not in flight here: the Python model's step
                continue
            compiled[x.action, len(x.args)] = compiled.get((x.action, len(x.args)), 0) + 1
            if native != apply(s, cfg, x):
                differ.append(x)
        for _, t in enabled:
            if t not in parents and len(parents) < 1_500:
                parents[t] = s
                queue.append(t)
    assert not differ, f"{len(differ)} steps differ; the first: {differ[0]}"
    assert taken <= compiled.keys(), f"not taken: {taken - compiled.keys()}"


def test_the_compiled_judge_gives_the_python_judges_verdicts(cases) -> None:
    _same_verdicts(cases, ("kip320",))


@pytest.mark.slow
def test_the_compiled_judge_gives_the_python_judges_verdicts_on_every_recorded_run(every_case) -> None:
    _same_verdicts(every_case, ("kip320", "design"))


def _same_verdicts(cases: list[tuple[str, list[dict[str, Any]]]], configs: tuple[str, ...]) -> None:
    assert any(not replay.judge(g, memo=False)["conforms"] for _, g in cases), "no case fails: a weak corpus"
    for name, group in cases:
        for config in configs:
            python = replay.judge(group, config, memo=False)
            compiled = replay.judge(group, config, memo=False, compiled=True)
            assert compiled == python, f"{name} ({config})"


def test_a_compiled_rule_that_differs_from_the_model_is_caught(cases, monkeypatch, tmp_path) -> None:
    """A library whose produce appends the value after the model's is found out step by
    step -- though the verdicts alone would not show it (the judge maps record values)."""
    altered = tmp_path / "native"
    shutil.copytree(SOURCE_DIR, altered)
    rules = altered / "rules.c"
    text = rules.read_text()
    assert text.count("int value = s->produced + 1;") == 1
    rules.write_text(text.replace("int value = s->produced + 1;", "int value = s->produced + 2;"))
    synthetic = [(name, g) for name, g in cases if name.startswith("cs")]
    comparing = _judge_every_step(synthetic, CompiledStep(library(altered)), monkeypatch)
    assert {step.action for step, _, _ in comparing.differ} == {"produce"}
