"""Exporting model runs as traces: ``events_from_steps`` turns a run of the model into the
events an implementation would have recorded, so that the model's own counterexamples (the
design's KAFKA-1211 bug) can be fed to any conformance tool, and so that the judge can be
tested on traces whose truth is known.  What each step exports as is declared with its
action in ``model.registry``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from conformance.judge.observation import Event
from model.actions import Step
from model.actions.views import replica_post
from model.config import Config, named
from model.registry import ACTIONS, apply
from model.state import State, initial
from traces import SCHEMA_ID
from traces.vocabulary import KINDS


class _Exporter:
    def __init__(self, run: str, topic: str) -> None:
        self.run, self.topic = run, topic
        self.events: list[Event] = []
        self.seq: dict[int, int] = {}
        self.zxid = 0

    def emit(self, node: int, kind: str, params: dict[str, Any], post: dict[str, Any] | None = None,
             zk: bool = False) -> None:
        scope = KINDS[kind].scope
        seq = self.seq.get(node, 0)
        self.seq[node] = seq + 1
        if zk:
            self.zxid += 1
        self.events.append({
            "schema": SCHEMA_ID, "run": self.run, "node": node, "seq": seq, "clock": len(self.events) + 1,
            "zxid": self.zxid if zk else None, "kind": kind,
            "topic": self.topic if scope == "partition" else None, "partition": 0 if scope == "partition" else None,
            "params": params, "post": post or {},
            "_file": f"{self.run}/{node}.jsonl", "_line": seq + 1,
        })


def _event_of(x: _Exporter, step: Step, before: State, after: State) -> None:
    """The event a step exports as (``model.registry``: each entry's ``event`` and trace
    kind); none for a silent action, which implementations do not record."""
    entry = ACTIONS[step.action]
    emitted = entry.event(step.args, before, after)
    if emitted is None or entry.trace is None:
        return
    x.emit(emitted.node, entry.trace.kind, emitted.params, emitted.post, zk=emitted.zk)


def _prologue(x: _Exporter, cfg: Config, s: State) -> None:
    """Events that build ``model.state.initial``: every broker registers, broker 0 becomes
    controller, the partition's leader is initialised and every replica applies it."""
    for b in range(cfg.brokers):
        x.emit(b, "broker_restart", {"broker": b, "broker_epoch": b + 1}, zk=True)
    x.emit(0, "controller_elect", {"controller_epoch": s.zk.controller_epoch}, zk=True)
    zn = s.zk.partitions[0]
    x.emit(0, "elect_leader", {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr),
                               "zk_version": zn.zk_version, "controller_epoch": s.zk.controller_epoch,
                               "reason": "init", "replicas": list(zn.ar), "unclean": False}, zk=True)
    for b in zn.ar:
        kind = "become_leader" if b == zn.leader else "become_follower"
        r = s.brokers[b].replicas[0]
        x.emit(b, kind, {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr),
                         "zk_version": zn.zk_version, "controller_epoch": s.zk.controller_epoch, "truncated_to": None},
               replica_post(r))


def events_from_steps(cfg: Config, steps: Sequence[Step], run: str | None = None, topic: str = "t") -> list[Event]:
    """A trace (one causally ordered group, as ``judge`` takes it) of the model run that
    takes ``steps`` from ``model.state.initial(cfg)`` (partition 0 only).  Each step is one
    event of its actor, with every field the schema defines; a prologue of registrations,
    the controller election and the partition's initialisation comes first.  Raises
    ``ValueError`` on a step the model does not allow."""
    if cfg.partitions != 1:
        cfg = replace(cfg, partitions=1)
    x = _Exporter(run or f"model-{cfg.name}", topic)
    s = initial(cfg)
    _prologue(x, cfg, s)
    for i, step in enumerate(steps, 1):
        t = apply(s, cfg, step)
        if t is None:
            raise ValueError(f"step {i} ({step.action}{step.args}) is not enabled in {cfg.name}")
        _event_of(x, step, s, t)
        s = t
    return x.events


def _lai_for(broker: int) -> Callable[[State], Step]:
    def choose(s: State) -> Step:
        epoch = s.zk.partitions[0].leader_epoch
        m = next(m for m in s.leader_and_isr if m.to == broker and m.leader_epoch == epoch)
        return Step("become_leader" if m.leader == broker else "become_follower", (m,))

    return choose


def design_bug_steps() -> list[Step]:
    """KAFKA-1211 as the design (seed 000) allows it, from ``model.scenarios``: a follower
    restarts, truncates the committed record ``a`` to its stale HW and is elected leader --
    and then becomes leader, so the loss is visible in the trace (its LEO is 0)."""
    from properties.checkers.scenarios import play

    cfg = named("design")
    out = play("kafka_1211", cfg)
    steps = [step for step, _ in out.steps]
    last = out.states[-1]
    tail = _lai_for(last.zk.partitions[0].leader)(last)
    return [*steps, tail]


def design_bug_events() -> list[Event]:
    """The design bug's counterexample exported as a trace: a nonconforming run the judge must name."""
    return events_from_steps(named("design"), design_bug_steps(), run="design-kafka-1211")
