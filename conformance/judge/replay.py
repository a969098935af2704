"""The trace judge: does a recorded execution take only steps the model allows?

``judge(events, config)`` checks one causally ordered ``(run, topic, partition)`` group of
trace events (``traces/SCHEMA.md``) against the model by *observation matching*, the
standard way to check a trace against a nondeterministic specification:

* the judge keeps the set of model states the system could be in (bounded, deduplicated);
* each event names the model action it is (``traces.vocabulary``) and the broker that took
  it; in every possible state the judge tries that action's candidate arguments, keeps the
  steps taken by that broker whose result agrees with every field the event observed
  (its params and post-state, as far as ``traces.schema`` defines them for the kind), and
  the results become the new set of possible states;
* an implementation does not trace every step: a fetch round trip that changes nothing is
  silent, so is an epoch lookup on an empty log.  Before an observed step the judge may
  take up to ``bound`` such *internal* steps, but only *silent* ones -- steps that change
  nothing the implementation would have recorded -- and only when no state explains the
  event without them (iterative deepening: the fewest unobserved steps first);
* every property of ``properties`` must hold in a surviving state; states that break one
  are dropped, and if every state breaks one the event is non-conforming, naming it;
* when no state survives, the event is non-conforming: the verdict says what was observed,
  what the model allowed instead, and shows the model's possible states.

The model starts before the partition's life: every broker that the trace shows
registering is down, there is no controller, and the partition's znode is not written yet.
Registrations, the controller election and the partition's first ``elect_leader`` (reason
``init``: the topic's creation) build the state the rest of the trace is judged from.  A
deletion is the model's ``delete_topic`` and each replica's ``stop_replica``; a re-creation
under the same name is ``create_topic`` (its leader epochs and znode versions renumbered onto
the model's, see ``_renumbering``).  A partition added to a topic (seed 000 H) starts its life
at its own first ``elect_leader`` like a new topic's, and its ``partitions_added`` is that
step seen again; a partition's removal is the model's ``remove_partitions`` and each
replica's ``stop_replica``, as a deletion.

``events_from_steps`` goes the other way: it exports a run of the model as a trace, so
that the model's own counterexamples (the design's KAFKA-1211 bug) can be fed to any
conformance tool, and so that the judge can be tested on traces whose truth is known.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from conformance.judge.compiled import stepper
from conformance.judge.compiled_batch import MAX_STATES as MAX_COMPILED_STATES
from conformance.judge.compiled_batch import (
    NO_STEP_ROW,
    ROW_FIELDS,
    CompiledSearch,
    group_ids,
    rows_tables,
)
from conformance.judge.compiled_batch import available as batch_available
from conformance.judge.compiled_batch import unsupported as batch_unsupported
from conformance.judge.export import design_bug_events, design_bug_steps, events_from_steps
from conformance.judge.memo import (
    MEMO_MAX_NODES,
    MEMO_STATS,
    Broke,
    Memo,
    MemoPath,
    NoMemo,
    Recalled,
)
from conformance.judge.observation import (
    HARNESS,
    Event,
    Observation,
    broker_ids,
    checkpoint_of,
    in_model_broker_epochs,
    observe,
    prelife_state,
    registration_epochs,
    replay_config,
    value_key,
)
from conformance.judge.search import (
    FREEZING,
    INTERNAL_ACTIONS,
    Hypothesis,
    Match,
    Search,
    Stepper,
    actor,
    advance,
    init_partition,
    may_break,
    model_view,
    ordered,
    violations,
)
from conformance.judge.words import DIFFERS, REFINEMENT, event_words, rule_words
from model.registry import REPLAYED, apply
from model.state import State
from model.text import state_text
from properties.safety import all_violations
from traces.events import RETENTION_MARK
from traces.vocabulary import KINDS

__all__ = [
    "DEFAULT_BOUND", "FREEZING", "IN_PYTHON", "Budget", "HARNESS", "INTERNAL_ACTIONS", "MAX_STATES", "MEMO_MAX_NODES",
    "MEMO_STATS",
    "SHOWN_STATES", "Event", "Hypothesis", "Memo", "Speculation", "TraceJudge", "Verdict", "actor", "broker_ids",
    "design_bug_events", "design_bug_steps", "events_from_steps", "init_partition", "judge", "judge_compiled",
    "judge_compiled_unmemoized", "judge_default", "judge_unmemoized",
    "may_break", "model_view", "observe", "prelife_state", "replay_config",
]

DEFAULT_BOUND = 2
"""Unobserved internal steps searched before each observed one."""


MAX_STATES = 200
"""Possible model states kept after each event (in a fixed order: judging is deterministic)."""


SHOWN_STATES = 3
"""Model states shown beside a non-conforming observation."""


IN_PYTHON: Counter[str] = Counter()
"""Per process, of the judgements whose runs of events went to C: the events the C judged
(``"in C"``) and, per kind, those left to the Python search -- no row, or declined.  An event
in Python costs a hundred in C and splits a run, so this says where a corpus's time goes
(``bench/bench_conformance.py`` prints it)."""


class Verdict(NamedTuple):
    """The judge's answer (the interface ``conformance.spark.verdict`` expects, as a dict)."""

    conforms: bool
    matched: int  # events matched before the first non-conforming one (all, if it conforms)
    total: int  # events in the group, informational ones included
    first_bad: int | None  # index into the events of the first non-conforming one
    reason: str | None  # what was observed there, and what the model allowed instead
    property: str | None  # why not: the safety property every surviving state broke, or REFINEMENT
    # (no step of the model matches the event); None only for a trace that conforms or is inconclusive
    possible_states: list[str]  # up to SHOWN_STATES model states (state_text) beside the observation
    bound: int  # unobserved internal steps searched before each observed one
    inconclusive: bool = False  # the budget ran out at event ``matched``: neither conforming nor not

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


class Budget(NamedTuple):
    """What one judgement may spend before it answers *inconclusive* instead of going on.

    ``bound`` and ``limit`` bound the work per event; a long trace with many possible
    states still adds up.  ``states`` caps the possible states carried into the model
    events, summed over the trace (deterministic: the same trace runs out at the same
    event on every machine); ``seconds`` caps the wall-clock time.  Each is checked before
    each model event, so a judgement overruns by at most one event's search.  None: no cap."""

    seconds: float | None = None
    states: int | None = None

    def spent(self, started: float, states: int) -> str | None:
        """What ran out, given the judgement's start (``time.monotonic``) and the states
        carried so far; None while the budget lasts."""
        if self.states is not None and states > self.states:
            return f"{states} possible states carried, over the budget of {self.states}"
        if self.seconds is not None and time.monotonic() - started > self.seconds:
            return f"over the budget of {self.seconds:g}s"
        return None


# ---------------------------------------------------------------------------------------
# The judge
# ---------------------------------------------------------------------------------------


_describe_event = event_words


def judge(events: list[Event], config: str = "kip320", bound: int = DEFAULT_BOUND,
          limit: int = MAX_STATES, fast: bool = True, memo: bool = True,
          on_states: Callable[[list[Hypothesis]], None] | None = None,
          budget: Budget | None = None, compiled: bool | None = False) -> dict[str, Any]:
    """Judge one causally ordered (run, topic, partition) group of events against the named
    model configuration.  See the module docstring for the method and ``Verdict`` for the
    answer's fields.

    ``fast`` (the default) takes the same steps for less work: candidate arguments built
    from the observed broker (``search._actor_args``), only the properties a step could
    break evaluated (``may_break``), no sorting or hashing of a single surviving state.
    Every shortcut is exact -- ``fast=False`` is the plain method, kept so that a test holds
    the two to the same verdicts (``tests/conformance/test_replay_fast_path.py``).

    ``memo`` (with ``fast``) remembers, per process, which states each matched event led to
    from which states (``Memo``): a step seen before is not searched again.  Exact, as the
    test holds too; ``MEMO_STATS`` counts how often it answered.

    ``on_states``, if given, sees the possible states after each model event: the model
    states a trace reached, as ``bench/bench_guided_fuzz.py`` counts them.

    ``budget``, if given, caps the judgement (``Budget``): when it runs out the answer is
    *inconclusive* (``inconclusive`` true, ``conforms`` false, ``first_bad`` None,
    ``matched`` the events judged before it ran out) -- not a verdict either way.

    ``compiled`` judges runs of events in C (``conformance.judge.compiled_batch``) and
    every other step with the compiled search's rules instead of the Python model's
    (``conformance.judge.compiled``): the same steps, so the same verdict.  ``None``: runs
    of events in C wherever the C can judge this configuration (``batch_unsupported``) and
    there is a C compiler, else the plain Python judge, memo and all -- what
    ``judge_default`` and the conformance job judge with."""
    return TraceJudge(events, config, bound, limit, fast, memo, on_states, budget, compiled).verdict().as_dict()


class Speculation:
    """The judge's doubt about a kill -9.

    A kill -9 may cut a step short between its effect and its trace line, so the search
    also keeps states that assume it did (``Hypothesis.speculative``, ``search._before_freeze``).
    When at some event only such states keep every property -- every state assuming no
    such step broke one -- the trace conforms only if the speculation holds.  The first
    such event is the *suspect*: if a later event refutes the speculation (no state
    survives it), the verdict names the property broken at the suspect, not the later event."""

    __slots__ = ("suspect",)

    def __init__(self) -> None:
        self.suspect: tuple[int, Broke] | None = None

    @staticmethod
    def weigh(survivors: list[Match], kept: list[Hypothesis], broken: dict[str, str],
              shown: list[int]) -> Broke | None:
        """What the plain states broke at a step, if only speculative states (``kept``, the
        survivors that break no property) keep every property; None otherwise."""
        if not broken or not all(h.speculative for h in kept):
            return None
        plain = ordered(m.after for m in survivors if not m.after.speculative)[:SHOWN_STATES]
        if not plain:
            return None
        name, msg = next(iter(broken.items()))
        return name, msg, [state_text(h.state, shown) for h in plain]

    def note(self, i: int, broke: Broke | None) -> None:
        """Event ``i`` broke ``broke`` unless the speculation holds: the first such is the suspect."""
        if broke is not None and self.suspect is None:
            self.suspect = (i, broke)

    def refuted(self, verdict: Verdict, events: list[Event]) -> Verdict:
        """``verdict``, a failure, as the suspect's if there is one: the failing event
        refutes the speculation that kept the trace conforming there."""
        if self.suspect is None:
            return verdict
        at, (name, msg, states) = self.suspect
        j = verdict.first_bad
        assert j is not None
        return Verdict(False, at, verdict.total, at,
                       f"{_describe_event(events[at])} leads only to states that break {name}: {msg} -- unless a "
                       f"kill -9 cut short a step nobody recorded, which event {j} ({events[j]['kind']}) rules out",
                       name, states, verdict.bound)


class TraceJudge:
    """One judgement: the possible states, carried event by event through the trace.

    Each model event is answered by the memo if a step from these states was matched
    before (``MemoPath``), else searched (``advance``: the observed step, after the fewest
    silent internal steps that give one) and checked against every property; the kill -9
    speculation the search may rest on is the ``Speculation``'s to track."""

    def __init__(self, events: list[Event], config: str, bound: int, limit: int, fast: bool, memo: bool,
                 on_states: Callable[[list[Hypothesis]], None] | None, budget: Budget | None = None,
                 compiled: bool | None = False) -> None:
        self.events = events
        self.budget, self.started, self.carried = budget, time.monotonic(), 0
        self.bound, self.limit, self.on_states = bound, limit, on_states
        # the broker-id map, and the registrations' real broker epochs (for a refusal's); when
        # compiled, read by the rows' C in one pass, wherever it reads the events as Python does
        read = group_ids(events) if compiled is not False else None
        self.ids, self.registrations = read if read is not None else (broker_ids(events), registration_epochs(events))
        self.shown = sorted(self.ids, key=self.ids.__getitem__)  # model broker b is the trace's broker shown[b]
        self.cfg = replay_config(config, len(self.ids))
        self.hyps = [Hypothesis(prelife_state(self.cfg, events, self.ids))]
        # may_break assumes the state before each step holds every property; survivors do,
        # the state before the partition's life is checked here once.
        self.fast = fast and _holds(self.hyps[0].state)
        # compiled (True or None): runs of events judged in C, the others by the Python
        # model's step; where the C cannot judge at all, every step by the compiled step
        # (``compiled.stepper``) if True, by the Python model's with its memo if None
        self.batch = (CompiledSearch(self.cfg, limit, bound) if compiled is not False and self.fast and on_states is None
                      and budget is None and limit <= MAX_COMPILED_STATES and batch_unsupported(self.cfg) is None
                      and batch_available() else None)
        self.take: Stepper = stepper(self.cfg) if compiled is True and self.batch is None else apply
        self.memo: MemoPath | NoMemo = (MemoPath(Memo.scope(config, bound, limit, self.ids), self.hyps)
                                        if self.fast and memo and self.batch is None else NoMemo())
        self.speculation = Speculation()
        self.values: dict[Any, set[int]] = {}  # trace value -> the model values it may be
        self.shift = _NO_SHIFT  # (leader epochs, znode versions) of the current incarnation: see _renumbering
        self.key = next(((e["topic"], e["partition"]) for e in events if e.get("topic") is not None), None)

    def verdict(self) -> Verdict:
        if self.batch is not None:
            return self._verdict_in_runs(self.batch)
        for i, e in enumerate(self.events):
            failed = self._event(i, e)
            if failed is not None:
                return failed
        return Verdict(True, len(self.events), len(self.events), None, None, None, [], self.bound)

    def _event(self, i: int, e: Event) -> Verdict | None:
        """Judge event ``i``: the states after it kept, or the verdict if it fails."""
        values, on_states = self.values, self.on_states
        kind = KINDS.get(e["kind"])
        if kind is None:
            return self._fails(i, f"unknown event kind {e['kind']!r}")
        if RETENTION_MARK in (e.get("params") or {}):
            return self._fails(i, "recorded with log retention on (a follower started at its leader's log "
                               "start offset): the model knows no retention, so a judged run keeps "
                               "retention_bytes and retention_ms at -1")
        if e["kind"] not in REPLAYED or (e["kind"] in _SCOPED and not _concerns(e, self.key)):
            return None  # informational (validated and ordered upstream), or another partition's change
        if self.budget is not None:
            self.carried += len(self.hyps)
            spent = self.budget.spent(self.started, self.carried)
            if spent is not None:
                return self._inconclusive(i, spent)
        if e["kind"] == "elect_leader" and (e.get("params") or {}).get("reason") == "init":
            self.shift = _renumbering(self.hyps[0].state, e, self.shift)
        e = self._in_model_terms(e, self.shift)
        step = self.memo.recall(e, values)
        if step is None:
            step = self._search(i, e)
            if step is None:
                return None  # recorded for people, subsumed by the model step that follows
            if isinstance(step, Verdict):
                return self.speculation.refuted(step, self.events)
        hyps, produced, broke = step
        self.hyps = hyps
        if on_states is not None:
            on_states(hyps)
        if produced:  # a fetched record of the produced value may be any of these model values
            values.setdefault(value_key(e["params"].get("value")), set()).update(produced)
        if broke is not None:
            self.speculation.note(i, broke)
        return None

    def _row(self, i: int, e: Event, batch: CompiledSearch) -> list[int] | None:
        """Event ``i`` as the compiled search reads it, or None where ``_event`` must judge it
        (every check ``_event`` makes first is done here the same way; an event whose numbers
        are read against the states before it is left to ``_event``)."""
        how = _ROW_KINDS.get(e["kind"], _BY_EVENT)
        params = e.get("params") or {}
        if how == _BY_EVENT or RETENTION_MARK in params:
            return None
        if how == _NO_STEP or (how == _SCOPED_STEP and not _concerns(e, self.key)):
            return NO_STEP_ROW
        if self.shift != _NO_SHIFT:
            # renumbered as ``_in_model_terms`` does, unless the states before it show a
            # zombie's act on an older incarnation: the rows of a run are built before the
            # run reaches them, so such a row says so and judge.c checks it there
            e = _shifted(e, self.shift)
            params = e["params"]
        row = batch.event_row(e, params, self.ids)
        row = row if row is not None else batch.row(observe(i, e, self.ids))
        return batch.current(row) if self.shift != _NO_SHIFT and e["kind"] in _REPLICA_KINDS else row

    def _verdict_in_runs(self, batch: CompiledSearch) -> Verdict:
        """``verdict`` with runs of events judged by the compiled search (``compiled_batch``),
        and each event it does not take, or declines, by ``_event``."""
        events, i, at = self.events, 0, batch.at
        tables = rows_tables(_ROWS_IN_C, self.ids)
        while i < len(events):
            end = i
            while end < len(events):
                if end == len(at) and self.shift == _NO_SHIFT:  # (renumbered rows: ``_row``'s)
                    end = batch.write_rows(events, end, tables)  # (a row written in C is never -1)
                    if end == len(events):
                        break
                k = at[end] if end < len(at) else batch.add(self._row(end, events[end], batch))
                if k < 0:
                    break
                end += 1
            ran = batch.run(self.hyps, i, end, self.values, end == len(events)) if end > i else None
            if ran is not None:
                judged, self.hyps = ran
                i += judged
                IN_PYTHON["in C"] += judged
            if i < len(events):
                IN_PYTHON[events[i]["kind"]] += 1
                shift = self.shift
                failed = self._event(i, events[i])
                if failed is not None:
                    return failed
                if self.shift != shift:
                    batch.forget_after(i)
                i += 1
        return Verdict(True, len(events), len(events), None, None, None, [], self.bound)

    def _in_model_terms(self, e: Event, shift: tuple[int, int]) -> Event:
        """``e`` with the trace's numbers read as the model's: the current incarnation's
        leader epochs and znode versions renumbered (an act on an older incarnation's
        replica keeps its own), a refusal's max broker epoch as the model's broker epoch."""
        if shift != _NO_SHIFT and not _of_older_incarnation(self.hyps[0].state, e, self.ids):
            e = _shifted(e, shift)
        if e["kind"] == "reject_leader_and_isr":
            e = in_model_broker_epochs(e, self.registrations)
        elif e["kind"] == "broker_restart":
            e = checkpoint_of(e, self.key)
        return e

    def _search(self, i: int, e: Event) -> Recalled | Verdict | None:
        """The step event ``i`` is, searched (and remembered in the memo): the states it
        leads to, what its produce appended and what it broke (``Recalled``); the verdict
        if there is no such step; None if the event is no model step of its own."""
        obs = observe(i, e, self.ids)
        if not obs.action:
            self.memo.stay()
            return None
        res = advance(self.hyps, obs, self.cfg, self.values, self.bound, self.limit, self.fast, self.take)
        if not res.survivors:
            return self._no_step(i, e, obs, res)
        kept, broken = self._keeping(res.survivors)
        if not kept:
            name, msg = next(iter(broken.items()))
            states = ordered(m.after for m in res.survivors)[:SHOWN_STATES]
            return self._fails(i, f"{_describe_event(e)} leads only to states that break {name}: {msg}",
                               name, states)
        broke = Speculation.weigh(res.survivors, kept, broken, self.shown)
        produced = tuple(h.state.brokers[obs.actor].replicas[0].log[-1].value for h in kept) \
            if obs.action == "produce" else ()
        hyps = kept if self.fast and len(kept) == 1 else ordered(kept)[: self.limit]
        self.memo.learn(hyps, produced, broke)
        return hyps, produced, broke

    def _keeping(self, survivors: list[Match]) -> tuple[list[Hypothesis], dict[str, str]]:
        """The survivors' states that break no property, and what the others break
        (property -> message, the first message of each)."""
        kept: list[Hypothesis] = []
        broken: dict[str, str] = {}
        for match in survivors:
            bad = violations(match.before, match.after.state, self.fast)
            if bad:
                for name, msg in bad:
                    broken.setdefault(name, msg)
            else:
                kept.append(match.after)
        return kept, broken

    def _no_step(self, i: int, e: Event, obs: Observation, res: Search) -> Verdict:
        broken = f"{_describe_event(e)} breaks {rule_words(e['kind'])}"
        if res.misses:
            allowed = " -- or ".join(list(dict.fromkeys(res.misses))[:3])
            reason = f"{broken}{DIFFERS}{allowed}"
        elif obs.actor < 0:
            reason = f"{broken}: it names no broker"
        else:
            reason = (f"{broken}: it is not enabled in any of the {len(res.frontier)} possible model states "
                      f"(the rule's guard holds in none of them, searching up to {res.depth} unobserved "
                      "internal steps before it)")
        return self._fails(i, reason, REFINEMENT, res.frontier[:SHOWN_STATES])

    def _inconclusive(self, i: int, spent: str) -> Verdict:
        """The budget ran out before event ``i``: the events before it matched, no more is known."""
        return Verdict(False, i, len(self.events), None,
                       f"inconclusive: {spent} before event {i} ({self.events[i]['kind']})", None,
                       [state_text(h.state, self.shown) for h in ordered(self.hyps)[:SHOWN_STATES]],
                       self.bound, inconclusive=True)

    def _fails(self, i: int, reason: str, prop: str = REFINEMENT, states: Sequence[Hypothesis] = ()) -> Verdict:
        """Event ``i`` does not conform, for ``reason``, beside (some of) the possible ``states``:
        it breaks ``prop``, a safety property, or ``REFINEMENT`` when no step matches it."""
        return Verdict(False, i, len(self.events), i, reason, prop,
                       [state_text(h.state, self.shown) for h in states], self.bound)


_SCOPED = frozenset({"topic_deleted", "partitions_added", "partitions_removed"})
"""Kinds whose event may be another topic's or partition's change (see ``_concerns``)."""

_BY_EVENT, _NO_STEP, _SCOPED_STEP, _STEP = range(4)
_ROW_KINDS = {kind: _NO_STEP if kind not in REPLAYED else _SCOPED_STEP if kind in _SCOPED
              else _BY_EVENT if kind == "reject_leader_and_isr" else _STEP for kind in KINDS}
"""How ``_row`` takes an event of each kind: as ``_event`` only (an unknown kind, and a
refusal, whose numbers are read against the states before it), as no step (informational),
as no step unless it concerns the group's partition (``_SCOPED``), as a step."""
_ROWS_IN_C = {kind: None if how == _NO_STEP else ROW_FIELDS[kind] for kind, how in _ROW_KINDS.items()
              if how == _NO_STEP or (how == _STEP and kind in ROW_FIELDS)}
"""The kinds whose rows ``CompiledSearch.write_rows`` writes as ``_row`` does: no step, or
a step of a fixed action (``ROW_FIELDS``); the others' rows are ``_row``'s."""


def _concerns(e: Event, key: tuple[str, int] | None) -> bool:
    """Whether an event of a ``_SCOPED`` kind is a step of the group's partition ``key``:
    another topic's deletion, another partition added or removed, is no step of its model."""
    if e["kind"] == "topic_deleted":
        return key is not None and (e.get("params") or {}).get("topic") == key[0]
    return _names_partition(e, key)


def _names_partition(e: Event, key: tuple[str, int] | None) -> bool:
    """Whether a ``partitions_added`` / ``partitions_removed`` event (seed 000 H) names the
    group's own partition ``key``: the added ones are a map partition -> AR, the removed
    ones a list."""
    params = e.get("params") or {}
    if key is None or params.get("topic") != key[0]:
        return False
    named = params.get("partitions") or ()
    return key[1] in named or str(key[1]) in named


_NO_SHIFT = (0, 0)


def _renumbering(s: State, e: Event, shift: tuple[int, int]) -> tuple[int, int]:
    """How far the model's numbers are from the trace's in the incarnation ``e`` creates.

    A re-created topic's partition is a new znode: ZooKeeper starts its version at 0 and
    Kafka its leader epochs at 0.  The model's ``create_topic`` writes leader epoch 1 (its
    deleted replicas forget theirs to 0) and keeps the znode's version counting from the
    deleted one's.  Only the order of these numbers within an incarnation matters to the
    protocol, so the judge renumbers the trace's: every leader epoch and znode version of
    the new incarnation is shifted onto the model's.  The topic's first creation needs
    none: the state before the partition's life takes the trace's numbers as they are."""
    zn = s.zk.partitions[0]
    params = e.get("params") or {}
    epoch, version = params.get("leader_epoch"), params.get("zk_version")
    if zn.ar or not isinstance(epoch, int) or not isinstance(version, int):
        return shift  # the first creation (or a second init of a live topic: no step matches it)
    return 1 - epoch, zn.zk_version + 1 - version


_REPLICA_KINDS = frozenset({"produce", "send_fetch", "handle_fetch", "receive_fetch", "truncate", "shrink_isr",
                            "expand_isr", "isr_update_failed", "propose_isr", "apply_isr"})
"""Kinds a broker records of its own replica's life, numbered in its replica's incarnation
(a LeaderAndISR's and a controller's numbers are those of the request, the znode)."""


def _of_older_incarnation(s: State, e: Event, ids: dict[int, int]) -> bool:
    """Whether ``e`` is a broker's act on a replica of an incarnation older than the
    partition's now: a zombie leader, paused through the deletion and the re-creation,
    appending to the deleted topic's log.  Its numbers are that incarnation's, which the
    model kept as they were: they are not renumbered (``_renumbering``)."""
    b = ids.get(e["node"])
    if e["kind"] not in _REPLICA_KINDS or b is None:
        return False
    return s.brokers[b].replicas[0].topic_id < s.zk.partitions[0].topic_id


def _shifted(e: Event, shift: tuple[int, int]) -> Event:
    """``e`` with its leader epochs and znode versions renumbered (``_renumbering``)."""
    d_epoch, d_version = shift
    params, post = dict(e.get("params") or {}), dict(e.get("post") or {})
    for name, d in (("leader_epoch", d_epoch), ("zk_version", d_version), ("expected_zk_version", d_version)):
        v = params.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            params[name] = v + d
    if isinstance(params.get("records"), list):
        params["records"] = [[r[0], r[1] + d_epoch, *r[2:]] if isinstance(r, list) and len(r) >= 2
                             and isinstance(r[1], int) else r for r in params["records"]]
    for name in ("leader_epoch", "log_end_epoch"):
        v = post.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            post[name] = v + d_epoch
    return {**e, "params": params, "post": post}


_HOLDS: dict[State, bool] = {}


def _holds(s: State) -> bool:
    """Whether a state before a partition's life breaks no property (cached: traces of one
    cluster start from a handful of such states)."""
    ok = _HOLDS.get(s)
    if ok is None:
        if len(_HOLDS) > 10_000:
            _HOLDS.clear()
        ok = _HOLDS[s] = not all_violations(None, s)
    return ok


def judge_unmemoized(events: list[Event], config: str = "kip320") -> dict[str, Any]:
    """``judge`` without the memo (``MODULE:FUNC`` for ``epochal conform``'s judge option and
    the benchmark's figures on work that is never repeated)."""
    return judge(events, config, memo=False)


def judge_default(events: list[Event], config: str = "kip320") -> dict[str, Any]:
    """``judge`` as the conformance job runs it (``conformance.judge.diagnose``): runs of
    events in C where there is a C compiler and the C judges the configuration, else the
    Python judge with its memo (``compiled=None``)."""
    return judge(events, config, compiled=None)


def judge_compiled(events: list[Event], config: str = "kip320") -> dict[str, Any]:
    """``judge`` with the compiled step (``conformance.judge.compiled``), memo on."""
    return judge(events, config, compiled=True)


def judge_compiled_unmemoized(events: list[Event], config: str = "kip320") -> dict[str, Any]:
    """``judge`` with the compiled step and without the memo: the compiled step's figure on
    work that is never repeated."""
    return judge(events, config, memo=False, compiled=True)
