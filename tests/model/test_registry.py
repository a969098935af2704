"""The registry of actions (``model.registry``) is complete and true: every action of the model
is declared once, with a decision for every backend, and each decision is what the backend
really does -- the native search runs the C-supported actions, z3 encodes exactly the
z3-supported ones, the judge replays exported steps of the judged ones, and every backend
refuses a configuration that enables an action it does not run.  ``docs/actions.md`` is
what the registry generates.

Adding an action: this file names whatever is missing."""

from __future__ import annotations

import importlib
import inspect
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest

import model.actions
from model.config import Config, named
from model.registry import (
    ACTIONS,
    BACKENDS,
    EXPLORED,
    KNOBS,
    REPLAYED,
    Entry,
    Knob,
    Supported,
    Unsupported,
    successors,
    supported,
)
from model.registry.table import SECTIONS, markdown
from model.state import State, initial
from properties.checkers import native
from traces.vocabulary import KINDS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "actions.md"

WALKED = [  # configurations whose random walks take every explored action between them
    named("kip320", brokers=3, records=2),
    named("zombie"),
    named("unclean"),
    named("kip320", brokers=3, records=2, max_shutdowns=1),
    named("kip320", brokers=3, replication_factor=2, records=2, reassignments=1),
    named("kip320", brokers=3, records=2, max_expiries=1),
    # no crashes: a restarted Kafka broker waits for the controller's startup LeaderAndISR, a
    # silent step the judge takes just before the broker applies it -- too late when the ISR
    # moved in between (docs/kafka.md, "What the judge cannot place")
    named("kafka39", brokers=3, records=2, max_crashes=0),
]


ADMIN_WALKED = [named("unclean", preferred_elections=1), named("kip320", max_shutdowns=1, preferred_elections=1),
                named("kip320", deletions=1), named("kip320", reassignments=2, max_expiries=1),
                named("kip320", partition_changes=2, reuse_partition_ids=1)]
"""Beside ``WALKED``, where the native search's admin actions run: a knob it supports on."""


def _walks(cfg: Config, seeds: int = 12, length: int = 30) -> list[list]:
    """Deterministic random runs of the model: lists of (step, before, after)."""
    runs = []
    for seed in range(seeds):
        rnd = random.Random(seed)
        s, run = initial(cfg), []
        for _ in range(length):
            options = list(successors(s, cfg))
            if not options:
                break
            step, t = options[rnd.randrange(len(options))]
            run.append((step, s, t))
            s = t
        runs.append(run)
    return runs


# -- complete ------------------------------------------------------------------------------------


def test_every_action_has_a_decision_for_every_backend() -> None:
    missing = [f"{name}: {backend}" for name, e in ACTIONS.items() for backend in BACKENDS
               if not isinstance(getattr(e.coverage, backend), Supported | Unsupported)]
    assert not missing, f"actions without a coverage decision: {missing}"
    vague = [name for name, e in ACTIONS.items() for backend in BACKENDS
             if isinstance(getattr(e.coverage, backend), Unsupported) and not getattr(e.coverage, backend).reason.strip()]
    assert not vague, f"an Unsupported decision must say why: {vague}"


def test_every_action_function_of_the_model_is_in_the_registry() -> None:
    """A guard-and-effect function (``(s, cfg, ...) -> State | None``) in ``model.actions``
    that no entry names is an action someone forgot to register."""
    registered = {e.fn for e in ACTIONS.values()}
    forgotten = []
    for name, fn in vars(model.actions).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != "model.actions":
            continue
        params = list(inspect.signature(fn).parameters)
        if params[:2] == ["s", "cfg"] and fn.__annotations__.get("return") == "State | None" and fn not in registered:
            forgotten.append(name)
    assert not forgotten, f"model.actions functions with no registry entry: {forgotten}"
    assert all(e.name == e.fn.__name__ for e in ACTIONS.values())


def test_every_entry_declared_in_a_section_module_is_in_the_table() -> None:
    for m in model.actions.SECTIONS:
        declared = {v.name for v in vars(m).values() if isinstance(v, Entry)}
        listed = {e.name for e in m.ENTRIES}
        assert declared == listed, f"{m.__name__}: declared but not in ENTRIES: {sorted(declared - listed)}"
    assert [e.name for m in model.actions.SECTIONS for e in m.ENTRIES] == list(ACTIONS)


def test_every_knob_is_declared_in_a_section_module_and_is_a_config_field() -> None:
    declared = [v for m in model.actions.SECTIONS for v in vars(m).values() if isinstance(v, Knob)]
    assert set(declared) == set(KNOBS) and len(set(k.field for k in KNOBS)) == len(KNOBS)
    used = ({e.knob for e in ACTIONS.values() if e.knob} | {k for e in ACTIONS.values() for k in e.also_enabled_by}
            | {k for e in ACTIONS.values() for k in e.modifiers})
    assert used <= set(KNOBS), "an action is limited by a knob no section lists in KNOBS"
    for k in KNOBS:
        assert getattr(Config("x", "kip320"), k.field) == k.default
        with pytest.raises(ValueError, match=k.flag):
            named("kip320", **{k.field: k.low - 1})


def test_every_entry_names_a_design_section_and_an_implementation_method_that_exists() -> None:
    bad = [f"{name}: section {e.section!r}" for name, e in ACTIONS.items() if e.section not in SECTIONS]
    for name, e in ACTIONS.items():
        module, cls, method = e.impl.rsplit(".", 2)
        try:
            getattr(getattr(importlib.import_module(module), cls), method)
        except (ImportError, AttributeError) as exc:
            bad.append(f"{name}: {e.impl} ({exc})")
    assert not bad, bad


# -- true: native C ------------------------------------------------------------------------------


@pytest.mark.integration
def test_the_native_search_takes_every_step_of_the_c_supported_actions() -> None:
    """For each C-supported action, steps of it from walked states are among the native
    search's successors of those states (a self-loop no search takes, as
    ``reject_leader_and_isr``, is held to the model in tests/properties/test_native_reassign.py)."""
    want = {name for name in supported("native") if ACTIONS[name].explored or ACTIONS[name].knob is not None}
    seen: set[str] = set()
    for cfg in WALKED + ADMIN_WALKED:
        if native.unsupported(cfg) is not None:
            continue
        cases: list[tuple[str, State, State]] = []
        for run in _walks(cfg, seeds=6):
            for _, s, _ in run:
                for other, t in successors(s, cfg):
                    if other.action in want and (other.action not in seen or len(cases) < 40):
                        cases.append((other.action, s, t))
                        seen.add(other.action)
        states = list(dict.fromkeys(s for _, s, _ in cases))
        expanded = native.native_expansions(cfg, [native.encode(s) for s in states], symmetry=False)  # builds it: a compile error fails here
        succ = {s: set(row[3]) for s, row in zip(states, expanded, strict=True)}
        for action, s, t in cases:
            assert native.key_bytes(t, cfg, False, False) in succ[s], f"the native search does not take this {action} step"
    assert seen == want, f"no walked state enables {sorted(want - seen)}"


def test_the_native_rules_have_no_port_of_the_actions_they_do_not_support() -> None:
    """The actions ported to C are the functions of its units that take a state to change
    (``int name(S *s, ...)``: rules.c); the ones named after a registry action are exactly
    the native-supported ones."""
    source = "\n".join(p.read_text() for p in native.sources() if p.suffix == ".c")
    ported = set(re.findall(r"^(?:static )?int (\w+)\(S \*s", source, re.M))
    ported = {"truncate" if name == "truncate_log" else name for name in ported} & set(ACTIONS)
    assert ported == set(supported("native")), (
        f"the native search ports {sorted(ported - set(supported('native')))} not marked native-supported, "
        f"and lacks {sorted(set(supported('native')) - ported)}")


# -- true: z3 ------------------------------------------------------------------------------------


def test_the_z3_encoding_has_cases_for_exactly_the_z3_supported_actions() -> None:
    from properties.checkers import symbolic

    shape = symbolic.Shape(2, 2, topic=True, reassign=True)  # a configuration's with deletions and reassignments
    cases = symbolic.Encoding(shape, symbolic.Params("kip320")).disjuncts(shape.fresh("s"))
    assert {d.action for d in cases} == set(supported("z3")) == set(symbolic.COVERED)


# -- true: every backend refuses what it does not run ----------------------------------------------


@pytest.mark.parametrize("backend", ["native", "z3"])
def test_a_backend_refuses_a_configuration_that_enables_an_action_it_does_not_run(backend: str) -> None:
    if backend == "native":
        from properties.checkers.native import unsupported
    else:
        from properties.checkers.symbolic import unsupported
    for name, e in ACTIONS.items():
        if getattr(e.coverage, backend).supported:
            continue
        if e.knob is None:  # never fires in a search: a self-loop no search takes
            assert not e.explored, f"{name}: {backend} does not run it, yet every search tries it"
            continue
        for knob in (e.knob, *e.modifiers):  # the knob, and each knob that changes its rule
            cfg = replace(named("kip320", brokers=3, records=2), **{e.knob.field: 1, knob.field: 1})
            assert knob.feature in (unsupported(cfg) or ""), f"{backend} runs {cfg} without {name}"


# -- true: the judge -------------------------------------------------------------------------------


def test_trace_kinds_agree_with_the_vocabulary() -> None:
    """Every kind an action is traced as is one of the format's (``traces.vocabulary``), and
    a recorded action is replayed by the judge or decided silent."""
    for name, e in ACTIONS.items():
        if e.trace is None:
            assert e.silent is not None, f"{name} is never recorded, so the judge can only insert it as silent"
            continue
        assert e.trace.kind in KINDS, f"{name}: trace kind {e.trace.kind!r} is not in traces.vocabulary"
    assert set(REPLAYED) <= set(KINDS) and set(REPLAYED.values()) <= set(ACTIONS)


def test_the_judge_accepts_exported_runs_of_every_judged_action() -> None:
    from conformance.judge.replay import events_from_steps, judge

    want = {name for name, e in ACTIONS.items() if e.coverage.judge.supported and e in EXPLORED} | {
        "reassign_start", "reassign_complete"}
    seen: set[str] = set()
    for cfg in WALKED:
        for run in _walks(cfg, seeds=8, length=25):
            steps = [step for step, _, _ in run]
            verdict = judge(events_from_steps(cfg, steps), cfg.name)
            assert verdict["conforms"], (cfg.name, verdict["reason"])
            seen |= {step.action for step in steps}
    assert want <= seen, f"no walk took {sorted(want - seen)}"


# -- docs/actions.md -------------------------------------------------------------------------------


def test_docs_actions_md_is_what_the_registry_generates() -> None:
    assert DOCS.exists() and DOCS.read_text() == markdown(), (
        "docs/actions.md differs from the registry; regenerate it with: "
        ".venv/bin/python -m model.registry --markdown > docs/actions.md")
