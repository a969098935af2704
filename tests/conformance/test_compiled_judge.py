"""The compiled judge's runs of events (``conformance/judge/compiled_batch.py``, ``judge.c``)
give the Python judge's verdicts.

``judge(..., compiled=True)`` hands runs of events to ``judge.c``, which matches most of them
over C states and declines the rest to the Python judge.  The verdicts -- reason, index and
states included -- must be the Python judge's on a sample of the benchmark's corpus (fresh
shapes, ``bench/bench_conformance.py``) and on the recorded traces, the traces that must fail
and mutants (``test_compiled_step.py`` holds those to it too, through ``_same_verdicts``).
Two more tests keep the C honest: it takes most events of the corpus itself (a judge that
declined everything would pass the first test), and every field the Python views of its
actions carry is one it compares.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import conformance.judge.compiled_batch as compiled_batch
import conformance.judge.replay as replay
import conformance.judge.search as search
from bench.bench_conformance import fresh_shape
from conformance.judge.compiled_batch import ACTIONS_TAKEN, KEYS
from conformance.judge.export import events_from_steps
from conformance.mutations import MUTATIONS
from conformance.spark.order import causal_order, split_groups
from model.actions import Step
from model.config import NAMED
from model.registry import ACTIONS, apply
from model.state import initial
from properties.checkers.native import NoCompiler
from traces.reader import read_traces
from traces.synthetic import generate_run

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


def groups_by_partition(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Per run, in causal order (``causal_order`` orders one run), per (topic, partition)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        runs.setdefault(e["run"], []).append(e)
    return [group for _, run in sorted(runs.items()) for group in split_groups(causal_order(run)[0]).values()]


def _built() -> None:
    """Skip only where there is no C compiler; a library that fails to build fails the test."""
    try:
        compiled_batch._entry()
    except NoCompiler as e:
        pytest.skip(f"no C compiler: the compiled judge is the Python one ({e})")


@pytest.fixture(scope="module")
def corpus() -> list[list[dict[str, Any]]]:
    """12 runs of the benchmark's corpus, and mutants of the first ones."""
    _built()
    runs = [generate_run(f"bench-{i:07d}", **fresh_shape(i)) for i in range(12)]
    groups = [g for run in runs for g in groups_by_partition(run)]
    for _, mutate in sorted(MUTATIONS.items()):
        for k, run in enumerate(runs[:3]):
            mutant = mutate(run, random.Random(k))
            if mutant is not None:
                groups += groups_by_partition(mutant)
    return groups


@pytest.fixture(scope="module")
def recorded() -> list[list[dict[str, Any]]]:
    _built()
    runs = sorted(p for p in (DATA / "recorded").iterdir() if p.is_dir())
    return groups_by_partition(read_traces(runs).events) + groups_by_partition(read_traces([DATA / "nonconforming"]).events)


def test_the_compiled_judge_gives_the_python_judges_verdicts_on_the_benchmark_corpus(corpus) -> None:
    verdicts = [replay.judge(g, memo=False) for g in corpus]
    assert any(not v["conforms"] for v in verdicts), "no group fails: the mutants did not bite"
    for group, python in zip(corpus, verdicts, strict=True):
        assert replay.judge(group, memo=False, compiled=True) == python, group[0]["run"]


def test_the_compiled_judge_gives_the_python_judges_verdicts_on_recorded_traces(recorded) -> None:
    for group in recorded:
        for config in ("kip320", "design"):
            python = replay.judge(group, config, memo=False)
            assert replay.judge(group, config, memo=False, compiled=True) == python, (group[0]["run"], config)


@pytest.fixture
def judged_in_python(monkeypatch) -> list[str]:
    """The kind of each event the Python judge takes (one the C does not match or declined)."""
    python: list[str] = []
    event = replay.TraceJudge._event

    def counted(self: replay.TraceJudge, i: int, e: dict[str, Any]) -> Any:
        python.append(e["kind"])
        return event(self, i, e)

    monkeypatch.setattr(replay.TraceJudge, "_event", counted)
    return python


def test_the_c_judges_most_events_of_the_corpus_itself(corpus, judged_in_python) -> None:
    """Events left to the Python judge: those of kinds the C does not match, and those it
    declined -- a few in a hundred, not most."""
    python = judged_in_python
    total = 0
    for group in corpus[:40]:
        replay.judge(group, memo=False, compiled=True)
        total += len(group)
    assert len(python) < total * 0.05, f"{len(python)} of {total} events judged in Python: {sorted(set(python))}"


def test_every_field_of_the_views_of_the_c_actions_is_one_the_c_compares(corpus, recorded, monkeypatch) -> None:
    """A field the C did not compare would let it match an event the Python judge refuses.
    The corpus has no controlled shutdown: a recorded run's (its controller's moves, its
    brokers' StopReplica and clean stops, an ISR expansion before) has the rest."""
    keys: dict[str, set[str]] = {}
    view = search.model_view

    def noting(step: Any, before: Any, after: Any) -> dict[str, Any]:
        out = view(step, before, after)
        keys.setdefault(step.action, set()).update(out)
        return out

    monkeypatch.setattr(search, "model_view", noting)
    init_view = search._init_view  # the topic's creation: the partition's first znode

    def noting_init(after: Any) -> dict[str, Any]:
        out = init_view(after)
        keys.setdefault("create_topic", set()).update(out)
        return out

    monkeypatch.setattr(search, "_init_view", noting_init)
    stopping = min((g for g in recorded if {"broker_stop", "expand_isr"} <= {e["kind"] for e in g}
                    and any(e["params"].get("reason") == "controlled_shutdown" for e in g)), key=len)
    for group in [*corpus[:20], stopping]:
        replay.judge(group, memo=False)
    assert set(ACTIONS_TAKEN) - {"broker_restart"} <= keys.keys(), "the corpus takes every action the C matches"
    for action in ACTIONS_TAKEN:
        assert keys.get(action, set()) - {"value"} <= KEYS.keys(), action


def test_a_state_the_c_cannot_hold_is_judged_in_python(corpus, monkeypatch) -> None:
    """``run`` answers None for states past the C's arrays: the judge goes on in Python."""
    monkeypatch.setattr(compiled_batch, "MAX_STATES", 0)
    group = corpus[0]
    assert replay.judge(group, memo=False, compiled=True) == replay.judge(group, memo=False)


def test_the_c_takes_the_controllers_silent_controlled_shutdown_before_it_follows() -> None:
    """Before a freezing event the judge keeps the states where its broker first took silent
    steps (``search._before_freeze``).  A controller may silently stop a follower outside the
    ISR (``controlled_shutdown`` writing nothing): here broker 0 restarts outside the ISR
    and controller 1 then follows the new leader 2.  The event repeated after it is no step,
    and its verdict counts the states the follow left -- the C's must be the Python judge's."""
    _built()
    cfg = replace(NAMED["kip320"], brokers=3)
    steps = [Step("broker_crash", (0,)), Step("controller_elect", (1,)), Step("elect_leader", (1, 0, 2)),
             Step("broker_restart", (0,))]
    s = initial(cfg)
    for step in steps:
        s = apply(s, cfg, step)
    follow = Step("become_follower", (next(m for m in s.leader_and_isr if m.to == 1),))
    shutdown, stopping = ACTIONS["controlled_shutdown"], replace(cfg, max_shutdowns=1)  # as the judge's
    assert any(shutdown.silent(args, s, t) for args in shutdown.args(s, stopping)
               if (t := apply(s, stopping, Step("controlled_shutdown", args))) is not None), \
        "the controller may stop broker 0 silently before it follows"
    events = events_from_steps(cfg, [*steps, follow])
    last = events[-1]
    events.append({**last, "seq": last["seq"] + 1, "clock": last["clock"] + 1})
    for config in ("kip320", "design"):
        python = replay.judge(events, config, memo=False)
        assert python["first_bad"] == len(events) - 1
        assert replay.judge(events, config, memo=False, compiled=True) == python, config


def test_the_c_searches_exactly_the_python_judges_internal_steps() -> None:
    """``judge.c``'s ``internal_steps`` names every action the Python judge may take between
    two events (``search.INTERNAL_ACTIONS``, and before a kill -9 ``CUT_SHORT_ACTIONS``) and
    no other -- those it declines named in its comment: an action that gains a trace kind
    leaves the list, one that loses it joins, and the C must follow or its states differ."""
    import re

    source = (Path(compiled_batch.__file__).resolve().parents[2] / "properties" / "checkers" / "native"
              / "judge.c").read_text()
    body = source[source.index("static int internal_steps("):]
    body = body[: body.index("\n}\n")]
    declined = re.search(r"/\* declined, the Python judge's to take: ([a-z_, ]+) \*/", body)
    assert declined is not None
    named = set(re.findall(r'"([a-z_]+)"', body)) | {n.strip() for n in declined.group(1).split(",")}
    assert named == set(search.INTERNAL_ACTIONS) | set(search.CUT_SHORT_ACTIONS)


def test_the_c_judges_most_events_of_the_recorded_traces_itself(recorded, judged_in_python) -> None:
    """A recorded run ends in controlled shutdowns (the controller's moves, StopReplica, clean
    stops) and has truncations and ISR expansions the corpus lacks: the C takes those too,
    and a re-created topic's events, renumbered onto the model's: it leaves to Python a few
    in a hundred, the broker lifecycle's kinds and the elections on a broker change."""
    python = judged_in_python
    runs = sorted(p for p in (DATA / "recorded").iterdir() if p.is_dir())
    groups = groups_by_partition(read_traces(runs).events)
    for group in groups:
        replay.judge(group, memo=False, compiled=True)
    total = sum(len(g) for g in groups)
    assert len(python) < total * 0.03, f"{len(python)} of {total} events judged in Python: {sorted(set(python))}"


_CHANGES = [("stop_replica", None, "delete", lambda v: not v), ("truncate", None, "truncated_to", lambda v: v + 1),
            ("expand_isr", None, "zk_version", lambda v: v + 1),
            ("elect_leader", "controlled_shutdown", "leader_epoch", lambda v: v + 1),
            ("elect_leader", "broker_change", "isr", lambda v: v[:-1]), ("broker_stop", None, "broker", lambda v: (v + 1) % 3)]
"""Per kind (and reason) the C matches only in recorded runs, an observed field and a change of it."""


def test_the_c_refuses_the_steps_of_a_controlled_shutdown_the_python_judge_refuses(recorded) -> None:
    """Each event of a recorded run's kinds the corpus lacks -- a StopReplica, a truncation,
    an ISR expansion, a controller's election and controlled shutdown's move, a clean stop --
    with one observed field changed, or left out, gives the Python judge's verdict, reason
    and states."""
    group = min((g for g in recorded if {"broker_stop", "expand_isr"} <= {e["kind"] for e in g}
                 and {"controlled_shutdown", "broker_change"} <= {e["params"].get("reason") for e in g}), key=len)
    mutants = []
    for kind, reason, name, change in _CHANGES:
        at = [i for i, e in enumerate(group) if e["kind"] == kind and name in e["params"]
              and (reason is None or e["params"].get("reason") == reason)]
        e = group[at[0]]
        mutants.append([*group[:at[0]], {**e, "params": {**e["params"], name: change(e["params"][name])}},
                        *group[at[0] + 1:]])
        if kind == "stop_replica":
            mutants.append(group[:at[0]] + group[at[0] + 1:])
    verdicts = [replay.judge(m, memo=False) for m in mutants]
    assert sum(not v["conforms"] for v in verdicts) >= len(_CHANGES), f"the changes did not bite: {verdicts}"
    for k, (mutant, python) in enumerate(zip(mutants, verdicts, strict=True)):
        assert replay.judge(mutant, memo=False, compiled=True) == python, k


INCARNATION = Path(__file__).resolve().parent / "fixtures" / "incarnation"


@pytest.mark.parametrize("case, config", [("refused-stop", "kip320"), ("zombie-append", "zombie"),
                                          ("zombie-leads", "zombie")])
def test_the_c_judges_a_recreated_topic_as_the_python_judge_and_leaves_it_a_zombies_act(
        case: str, config: str, monkeypatch) -> None:
    """After a re-creation the judge renumbers the trace's leader epochs and znode versions
    onto the model's -- except a broker's act on a replica of the deleted incarnation (a
    zombie leader's append, ``replay._of_older_incarnation``), read as it is.  The C judges
    the renumbered rows and declines such an act, which the states before it show: the
    zombie's produce is the Python judge's, and the verdicts are its own."""
    _built()
    group = split_groups(causal_order(read_traces([INCARNATION / case]).events)[0])[("t", 0)]
    python: list[str] = []
    event = replay.TraceJudge._event

    def counted(self: replay.TraceJudge, i: int, e: dict[str, Any]) -> Any:
        python.append(e["kind"])
        return event(self, i, e)

    verdict = replay.judge(group, config, memo=False)
    monkeypatch.setattr(replay.TraceJudge, "_event", counted)
    assert replay.judge(group, config, memo=False, compiled=True) == verdict
    assert len(python) < len(group) / 2
    if case == "zombie-append":
        assert "produce" in python, "the zombie's append judged in C"
