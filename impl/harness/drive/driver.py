"""The driver: execute a run of the model step by step against a real cluster, and judge
every step.

For each step of the run the driver takes the model's step (``model.registry.apply``: the
state it expects next), performs the harness operation of ``operations.OPERATIONS`` that
makes the implementation take the same step, waits (bounded) for the implementation to
record it, and then compares:

* the whole trace so far, judged by the trace judge (``conformance.judge.replay.judge``,
  the same judge ``epochal conform`` uses): does every recorded event match a step the
  model allows, and does the state it leads to keep every property?
* ZooKeeper against the model's ZooKeeper: the controller, the live brokers, and of
  every partition created and not removed its leader, leader epoch, ISR and AR;
* every replica's log and HW on disk, of every partition id, against the model's.

The first step at which either disagrees is the divergence, reported as conformance reports
one: the step, what the implementation did, what the model allowed.  A property the model's
own run breaks at a step, and that the judge finds the implementation broke there too, is a
*reproduced* violation.

The implementation's channels send one request at a time: a LeaderAndISR the model delivers
may wait behind an older one to the same broker.  The driver then delivers the older one
first, and takes the model step it is (an ``inserted`` step in the report), so that the
model keeps describing what the implementation did.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.judge.replay import judge
from conformance.judge.words import DIFFERS, REFINEMENT
from conformance.spark.order import causal_order, split_groups
from impl.harness.drive.answers import (
    RECEIPTS,
    TAKEN,
    Answer,
    answer_mismatch,
    expected_answer,
)
from impl.harness.drive.network import PARTITION, TOPIC, SteerableCluster, answer_bytes
from impl.harness.drive.operations import OPERATIONS, Divergence
from impl.harness.drive.paths import ModelRun, brokers_needed, step_of
from impl.harness.drive.zombie import Waiting, on_its_own, waiting_after
from impl.harness.relay import Frame
from model.actions import Step, repeats_held_decision
from model.config import Config, named
from model.export.render import describe
from model.registry import apply
from model.state import UP, LeaderAndIsr, State, StopReplica, initial
from properties.safety import all_violations

FOLLOWED, DIVERGED, REPRODUCED, REFUSED = "followed", "diverged", "reproduced", "model_refused"
INTERRUPTED = "interrupted"
"""Ctrl-C stopped the run: the report covers the steps driven before it (exit 3, inconclusive)."""


class DriveError(ValueError):
    """A run the driver cannot execute (unknown action, no driver for it): bad input."""


@dataclass
class StepReport:
    n: int
    action: str
    args: str
    description: str
    operation: str
    outcome: str  # followed, diverged, reproduced, inserted, model_refused
    events: list[str] = field(default_factory=list)  # what the implementation recorded
    zookeeper: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    note: str | None = None


@dataclass
class DriveReport:
    run: str
    config: str
    brokers: int
    truncation: str
    verdict: str  # followed, diverged, reproduced, model_refused, interrupted
    exit_code: int
    steps: list[StepReport] = field(default_factory=list)
    divergence: dict[str, Any] | None = None  # step, implementation_did, model_allowed
    property: str | None = None
    model_violation: str | None = None  # what the model's own run breaks, if anything
    transitions: int = 0  # model steps driven (inserted ones included)
    seconds: float = 0.0
    setup_seconds: float = 0.0
    data_dir: str | None = None

    def transitions_per_minute(self) -> float:
        driven = self.seconds - self.setup_seconds
        return round(60 * self.transitions / driven, 1) if driven > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "transitions_per_minute": self.transitions_per_minute()}


def check_drivable(run: ModelRun) -> None:
    """Every action of the run has a driver; else the one-line reason (bad input, exit 2)."""
    from model.registry import ACTIONS

    for action, _ in run.steps:
        if action not in OPERATIONS:
            why = getattr(ACTIONS[action].coverage.driver, "reason", "") if action in ACTIONS else ""
            raise DriveError(f"{run.name}: action {action} has no driver" + (f" ({why})" if why else ""))


def check_knobs(run: ModelRun, cfg: Config) -> None:
    """Every action of the run is one the configuration's knobs allow (a deletion needs
    ``--deletions 1``); else the one-line reason (bad input, exit 2), before any process
    starts -- rather than a run the model refuses halfway."""
    from model.registry import ACTIONS

    for action, _ in run.steps:
        e = ACTIONS[action]
        knobs = ((e.knob,) if e.knob is not None else ()) + e.also_enabled_by
        # an action no search explores and no knob enables (a refused LeaderAndISR, a
        # self-loop) is still a step a path may take
        if knobs and not e.explored_in(cfg):
            need = " or ".join(f"{k.flag} 1" for k in knobs)
            raise DriveError(f"{run.name}: action {action} needs {need} (the configuration allows none)")


def one_follower_partition(s: State) -> str | None:
    """Why a state has a fetch the driver cannot hold apart, or None.

    The model's follower sends each partition's fetch alone; the implementation's fetches
    every partition it follows from one leader in one request, which the relay can only hold
    or release whole.  Only partition 0 -- the cluster's first -- may therefore have
    followers: a partition added later (or reassigned) has one replica, so no broker ever
    follows two partitions and every fetch on the wire is partition 0's."""
    for p, zn in enumerate(s.zk.partitions):
        replicas = set(zn.ar) | set(zn.rar)
        if p != PARTITION and len(replicas) > 1:
            return (f"partition {p} would have followers ({sorted(replicas)}): only partition {PARTITION} may, "
                    f"since a follower fetches every partition it follows from one leader in one request "
                    f"and the relay cannot hold one partition's fetch apart from another's")
    return None


def check_one_follower_partition(run: ModelRun, cfg: Config) -> None:
    """The run, taken in the model up to the first step the model refuses, never gives a
    partition other than partition 0 a follower (``one_follower_partition``); else the
    one-line reason (bad input, exit 2), before any process starts."""
    s = initial(cfg)
    for i, (action, choose) in enumerate(run.steps, 1):
        step = step_of(action, choose, s)
        t = apply(s, cfg, step) if step is not None else None
        if t is None:
            return
        why = one_follower_partition(t)
        if why is not None:
            raise DriveError(f"{run.name}: step {i} {action}: {why}")
        s = t


class Driver:
    """Drive one model run against a fresh cluster (``run``); the Python API the CLI and
    tests use, and what generated test cases build on."""

    def __init__(self, config: str, data_dir: Path | None = None, step_timeout: float = 20.0,
                 progress: Callable[[str], None] | None = None, keep: bool = False,
                 knobs: dict[str, int] | None = None) -> None:
        self.config_name = config
        # the model's admin knobs (``--deletions``, ``--partition-changes``, ...): a run's own
        # bounds, and these on top, size the model configuration the run is taken in
        self.knobs = dict(knobs or {})
        self.data_dir = data_dir
        self.step_timeout = step_timeout
        self.say = progress or (lambda m: None)
        self.keep = keep
        self.cluster: SteerableCluster = None  # type: ignore[assignment]
        self.cfg: Config = None  # type: ignore[assignment]
        self.shift = 0  # the implementation's leader epoch minus the model's
        self.s: State = None  # type: ignore[assignment]
        self.inserted: list[StepReport] = []
        self._seen: set[tuple[int, int]] = set()
        self._consumed: set[tuple[int, int]] = set()  # events an expectation matched
        self._zk_last: dict[str, Any] = {}
        self.waiting: Waiting = frozenset()  # controllers frozen inside an election (drive.zombie)

    # -- the run -------------------------------------------------------------------------------
    def run(self, run: ModelRun) -> DriveReport:
        check_drivable(run)
        run = replace(run, bounds={**run.bounds, **self.knobs})
        n = brokers_needed(run, self.config_name)
        self.cfg = named(self.config_name, brokers=n, **run.bounds)
        check_knobs(run, self.cfg)
        check_one_follower_partition(run, self.cfg)
        start = time.monotonic()
        data_dir = Path(self.data_dir or tempfile.mkdtemp(prefix="epochal-drive-"))
        report = DriveReport(run.name, self.config_name, n, self.cfg.truncation, FOLLOWED, 0,
                             data_dir=str(data_dir))
        self.say(f"drive {run.name} against config {self.config_name} "
                 f"(truncation {self.cfg.truncation}, {n} brokers) in {data_dir}")
        self.cluster = SteerableCluster(data_dir, n, self.cfg.truncation, self.cfg.min_insync,
                                        self.cfg.unclean, log=self.say,
                                        fetch_partition_max_bytes=answer_bytes(self.cfg.fetch_max_records, self.cfg.records))
        try:
            self.cluster.start()
            zk = self.cluster.zk_state()
            self.s = initial(self.cfg)
            self.shift = int(zk["leader_epoch"]) - self.s.zk.partitions[PARTITION].leader_epoch
            self._events_since()  # the setup's events are the partition's life before the run
            report.setup_seconds = time.monotonic() - start
            self.say(f"cluster ready in {report.setup_seconds:.1f}s: the model's initial state")
            self._drive(run, report)
        except KeyboardInterrupt:
            report.verdict, report.exit_code = INTERRUPTED, 3
            self.say(f"interrupted by Ctrl-C after {len(report.steps)} steps; the report covers those")
        finally:
            report.seconds = time.monotonic() - start
            self.cluster.stop()
        if self.data_dir is None and report.verdict in (FOLLOWED, REFUSED):
            # a temporary directory of a run that followed the model holds nothing to look at;
            # one that diverged or reproduced a violation is kept (the report names it)
            shutil.rmtree(data_dir, ignore_errors=True)
            report.data_dir = None
        return report

    def _drive(self, run: ModelRun, report: DriveReport) -> None:
        for i, (action, choose) in enumerate(run.steps, 1):
            s = self.s
            step = step_of(action, choose, s)
            t = apply(s, self.cfg, step) if step is not None else None
            if t is None:
                what = f"{action}: no such message in flight" if step is None else f"{action}{step.args}: not enabled"
                report.steps.append(StepReport(i, action, "", "", OPERATIONS[action].name, REFUSED,
                                               note=f"the model refuses step {i} ({what}): the run ends here"))
                self.say(f"step {i}: the model refuses {what}; the run ends here")
                report.verdict = REFUSED
                return
            op = OPERATIONS[action]
            sr = StepReport(i, action, _args_text(step), describe(step, s, t), op.name, FOLLOWED)
            began = time.monotonic()
            self.inserted = []
            then: list[StepReport] = []
            try:
                op.run(self, step, s, t)
                if self.s is not s:  # older requests delivered first: re-take the step after them
                    t = apply(self.s, self.cfg, step)
                    if t is None:
                        raise Divergence(f"after delivering older requests first ({len(self.inserted)}), "
                                         f"{action}{_args_text(step)} is no longer enabled",
                                         f"{action} before them")
                for own in on_its_own(step, t, self.cfg, waiting_after(step, s, self.cfg, self.waiting)):  # at once, after it
                    after = apply(t, self.cfg, own)
                    then.append(StepReport(0, own.action, _args_text(own), describe(own, t, after),
                                           OPERATIONS[own.action].name, "inserted",
                                           note=f"taken on its own at once after {action}"))
                    t = after
                sr.events = [_event_text(e) for e in self._events_since()]
                self._compare(t)
            except Divergence as exc:
                sr.outcome, sr.note = DIVERGED, str(exc)
                sr.seconds = time.monotonic() - began
                report.steps += self.inserted + [sr]
                report.transitions += len(self.inserted)
                self._diverged(report, sr, exc.did, exc.allowed)
                return
            except JudgeSaysNo as exc:
                sr.seconds = time.monotonic() - began
                report.steps += self.inserted + [sr]
                report.transitions += len(self.inserted) + 1
                model_broke = all_violations(self.s, t)
                if exc.property and any(name == exc.property for name, _ in model_broke):
                    sr.outcome = REPRODUCED
                    sr.note = f"the implementation breaks {exc.property}, as the model's run does here"
                    report.verdict, report.exit_code, report.property = REPRODUCED, 1, exc.property
                    report.model_violation = "; ".join(f"{n}: {m}" for n, m in model_broke)
                    report.divergence = {"step": i, "action": action, "implementation_did": exc.did,
                                         "model_allowed": exc.allowed}
                    self.say(f"step {i} {action}{sr.args}: reproduced -- {exc.property}: {exc.did}")
                    return
                sr.outcome, sr.note = DIVERGED, f"{exc.did}; the model allowed: {exc.allowed}"
                report.property = exc.property
                self._diverged(report, sr, exc.did, exc.allowed)
                return
            sr.seconds = time.monotonic() - began
            report.steps += self.inserted + [sr] + then
            report.transitions += len(self.inserted) + 1 + len(then)
            self.waiting = waiting_after(step, s, self.cfg, self.waiting)
            self.s = t
            sr.zookeeper = self._zk_last
            self.say(f"step {i}/{len(run.steps)} {action}{sr.args}: followed ({sr.seconds:.1f}s)"
                     + (f" [{len(self.inserted)} older request(s) delivered first]" if self.inserted else ""))
            broke = all_violations(s, t)
            if broke:
                # the model's run breaks a property here, and the implementation holds what
                # the model's state holds (its logs, HWs and ZooKeeper, compared above)
                names = ", ".join(n for n, _ in broke)
                sr.outcome = REPRODUCED
                sr.note = f"the implementation holds the model's state, which breaks {names}"
                report.verdict, report.exit_code, report.property = REPRODUCED, 1, broke[0][0]
                report.model_violation = "; ".join(f"{n}: {m}" for n, m in broke)
                self.say(f"step {i} {action}{sr.args}: reproduced the model's violation -- {report.model_violation}")
                return

    def _diverged(self, report: DriveReport, sr: StepReport, did: str, allowed: str) -> None:
        sr.outcome = DIVERGED
        report.verdict, report.exit_code = DIVERGED, 1
        report.divergence = {"step": sr.n, "action": sr.action, "implementation_did": did,
                             "model_allowed": allowed}
        self.say(f"step {sr.n} {sr.action}{sr.args}: DIVERGED -- {did}; the model allowed: {allowed}")

    # -- comparing -----------------------------------------------------------------------------
    def _compare(self, t: State) -> None:
        events = self.cluster.events()
        ordered, _ = causal_order(events)
        groups = split_groups(ordered)
        # partition 0, and every other partition id the model has whose group holds events
        # (an added partition's): each judged from its own life's start
        for p in range(len(t.zk.partitions)):
            group = groups.get((TOPIC, p))
            if group is None and p != PARTITION:
                continue
            verdict = judge(group or [], self.config_name)
            if not verdict["conforms"]:
                raise JudgeSaysNo(verdict)
        zk = self.cluster.zk_state()
        self._zk_last = zk
        want = t.zk
        # a removed partition, a deleted topic's, or one not created yet has no state in either
        mine: dict[str, Any] = {"controller": zk["controller"], "live": zk["live"],
                                "partitions": sorted(zk["partitions"])}
        model: dict[str, Any] = {"controller": want.controller, "live": list(want.live),
                                 "partitions": [p for p, zn in enumerate(want.partitions) if zn.ar]}
        for p, st in zk["partitions"].items():
            mine[f"p{p}"] = {"leader": st["leader"], "leader_epoch": st["leader_epoch"] - self.shift,
                             "isr": sorted(st["isr"]), "ar": sorted(st["ar"])}
        for p in model["partitions"]:
            zn = want.partitions[p]
            model[f"p{p}"] = {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": sorted(zn.isr),
                              "ar": list(zn.ar)}
        if mine != model:
            diff = ", ".join(f"{k} {mine.get(k)} (model: {model.get(k)})" for k in {**mine, **model}
                             if mine.get(k) != model.get(k))
            raise Divergence(f"ZooKeeper holds {diff}", f"ZooKeeper as {model}")
        for b, broker in enumerate(t.brokers):
            for p, r in enumerate(broker.replicas):
                records, hw = self.cluster.replica_on_disk(b, p)
                have = [(epoch - self.shift, value) for _, epoch, value in records]
                want_log = [(e.epoch, f"v{e.value}") for e in r.log]
                if have != want_log or hw != r.hw:
                    whose = f"broker {b}'s log" + (f" of partition {p}" if len(broker.replicas) > 1 else "")
                    raise Divergence(f"{whose} on disk is {_log_text(have)} with hw {hw}",
                                     f"log {_log_text(want_log)} with hw {r.hw}")

    def _events_since(self) -> list[dict[str, Any]]:
        """The implementation's events not seen before (and mark them seen)."""
        new = [e for e in self.cluster.events() if (e["node"], e["seq"]) not in self._seen]
        self._seen |= {(e["node"], e["seq"]) for e in new}
        return new

    # -- what operations use -------------------------------------------------------------------
    def expect(self, kind: str, node: int, what: str, timeout: float | None = None,
               partition: int | None = None,
               instead: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
        """Wait for the implementation to record ``kind`` on ``node`` (an event not yet
        consumed by an earlier expectation), of ``partition`` if one is named; an event
        ``instead`` accepts, found first, is the divergence at once (what it did instead)."""
        deadline = time.monotonic() + (timeout or self.step_timeout)
        while time.monotonic() < deadline:
            for e in self.cluster.events():
                key = (e["node"], e["seq"])
                if e["node"] != node or key in self._seen or key in self._consumed \
                        or (partition is not None and e.get("partition") != partition):
                    continue
                if e["kind"] == kind:
                    self._consumed.add(key)
                    return e
                if instead is not None and instead(e):
                    raise Divergence(f"{_event_text(e)}, instead of {kind}", what)
            time.sleep(0.05)
        raise Divergence(f"broker {node} recorded no {kind} within {timeout or self.step_timeout:.0f}s", what)

    def settle(self, seconds: float = 0.3) -> None:
        """A step the implementation takes silently: give it the time to."""
        time.sleep(seconds)

    def frame_mark(self) -> int:
        frames = self.cluster.relay.frames
        return frames[-1].id if frames else 0

    def relay_wait(self, kind: str, src: int, dst: int, match: Callable[[Frame], bool] | None,
                   what: str) -> Frame:
        f = self.cluster.relay.wait_held(kind, src, dst, match, timeout=self.step_timeout)
        if f is None:
            raise Divergence(f"no {kind} from {src} to {dst} held within {self.step_timeout:.0f}s", what)
        return f

    def held_fetch(self, follower: int, leader: int, offset: int) -> Frame:
        def at(f: Frame) -> bool:
            parts = f.summary.get("partitions") or [{}]
            return parts[0].get("fetch_offset") == offset
        return self.relay_wait("fetch_request", follower, leader, at,
                               f"a fetch from broker {follower} at offset {offset} in flight to {leader}")

    def relay_wait_behind(self, kind: str, src: int, dst: int, match: Callable[[Frame], bool], what: str) -> Frame:
        """Wait for a new control request to ``dst`` to be held, as :meth:`relay_wait`; an
        older request to ``dst`` still held holds up the controller's channel (one request at a
        time), so it is delivered first and its model steps taken, as for a delivery."""
        relay = self.cluster.relay
        for _ in range(max(1, int(self.step_timeout))):
            f = relay.wait_held(kind, src, dst, match, timeout=1.0)
            if f is not None:
                return f
            older = [x for x in relay.held("leader_and_isr", dst=dst) + relay.held("stop_replica", dst=dst)
                     if not match(x)]
            if older:
                first = min(older, key=lambda x: x.id)
                self._release_control(first)
                self._take_delivered(first)
        raise Divergence(f"no {kind} from {src} to {dst} held within {self.step_timeout:.0f}s", what)

    def lost_with(self, broker: int) -> None:
        """Messages on their way to a broker that stopped are lost (the model drops them)."""
        relay = self.cluster.relay
        for f in relay.held(dst=broker):
            if f.kind in ("leader_and_isr", "stop_replica", "fetch_request", "fetch_response") and f.dst == broker:
                relay.drop(f.id)

    def deliver_leader_and_isr(self, m: LeaderAndIsr) -> None:
        """Release the held LeaderAndISR the model's message ``m`` is.  If it is not held yet,
        an older request to the same broker holds up its channel: deliver that one first and
        take the model step it is."""
        relay = self.cluster.relay
        epoch = m.leader_epoch + self.shift

        def wanted(f: Frame) -> bool:
            # the controller epoch tells a deposed controller's request from its successor's
            # repeating the same decision (a failover's INIT)
            return f.summary.get("controller_epoch") == m.controller_epoch and any(
                e.get("partition") == m.partition and e.get("leader") == m.leader
                and e.get("leader_epoch") == epoch for e in f.summary.get("partitions") or [])

        for _ in range(10):
            f = relay.wait_held("leader_and_isr", dst=m.to, match=wanted, timeout=1.0)
            if f is not None:
                self._release_control(f, own=m)
                self._take_delivered(f, m)
                return
            again = [x for x in relay.frames if x.kind == "leader_and_isr" and x.dst == m.to
                     and x.state == "released" and wanted(x)]
            if again:  # the model's message was delivered before: deliver it a second time
                self._release_control(again[-1], own=m, again=True)
                return
            older = relay.held("leader_and_isr", dst=m.to) + relay.held("stop_replica", dst=m.to)
            if not older:
                continue
            first = min(older, key=lambda x: x.id)
            self._release_control(first)
            self._take_delivered(first)
        raise Divergence(f"no LeaderAndISR to broker {m.to} with leader {m.leader} and leader epoch "
                         f"{epoch} (model {m.leader_epoch}) in flight",
                         f"deliver LeaderAndISR {m}")

    def deliver_stop_replica(self, m: StopReplica) -> None:
        """Release the held StopReplica the model's message ``m`` is; an older request to the
        same broker holding up its channel is delivered first, as for a LeaderAndISR."""
        relay = self.cluster.relay

        def wanted(f: Frame) -> bool:
            return f.summary.get("delete") == m.delete and f.summary.get("controller_epoch") == m.controller_epoch \
                and _names(f, m.partition)

        for _ in range(10):
            f = relay.wait_held("stop_replica", dst=m.to, match=wanted, timeout=1.0)
            if f is not None:
                relay.release(f.id)
                self._take_delivered(f, m)
                return
            older = relay.held("leader_and_isr", dst=m.to) + relay.held("stop_replica", dst=m.to)
            if older:
                first = min(older, key=lambda x: x.id)
                self._release_control(first)
                self._take_delivered(first)
        raise Divergence(f"no StopReplica (delete {m.delete}) to broker {m.to} in flight", f"deliver {m}")

    def _release_control(self, f: Frame, own: LeaderAndIsr | None = None, again: bool = False) -> None:
        """Deliver a held control request (``again``: a released one a second time), and, for a
        LeaderAndISR, hold what its broker records and answers to the model's answer for each
        partition it names (``drive.answers``), judged in the model state it is delivered in.  A
        partition's request the model holds (``own``: the run's step's) is judged in full; one
        it does not (forgotten as stale for ever, or one the model sends as several) only
        where the model calls it a repetition: the fields of the frame do not say the broker
        registration or incarnation it was meant for, and its refusal for those is judged
        by the trace judge."""
        relay = self.cluster.relay
        if f.kind != "leader_and_isr":
            relay.release(f.id)
            return
        wants: dict[int, tuple[Answer, bool]] = {}
        for e in f.summary.get("partitions") or []:
            m = own if own is not None and _partition_of(e) == own.partition else self._model_request(f, e)
            if m is None or self.s.brokers[f.dst].status != UP:
                continue
            if m is own or m in self.s.leader_and_isr:
                wants[m.partition] = (expected_answer(self.s, self.cfg, m), True)
            elif repeats_held_decision(self.s, self.cfg, m):
                wants[m.partition] = (TAKEN, False)
        mark = max((e["seq"] for e in self.cluster.events() if e["node"] == f.dst), default=-1)
        (relay.duplicate if again else relay.release)(f.id)
        if not wants:
            return
        response = None if again else self._control_answer(f)
        for p, (want, held) in wants.items():
            e = next(x for x in f.summary["partitions"] if _partition_of(x) == p)
            # recorded before the answer is sent: with the answer seen, no later refusal comes
            refusals = self._refusals(f, e, mark, 0.0 if response is not None else 2.0 if want.refusal else 0.5)
            if not held:  # only a refusal for the leader epoch is a repetition refused
                refusals = [x for x in refusals if (x.get("params") or {}).get("reason") == "stale_leader_epoch"]
            did = answer_mismatch(want, refusals, response if held else None, TOPIC, p)
            if did is not None:
                said = f"refused ({want.refusal}, error {want.error})" if want.refusal else "taken, no refusal"
                raise Divergence(f"broker {f.dst} {did} for LeaderAndISR {_frame_args(f, e)}",
                                 f"the request {said}, as the model answers it")

    def _model_request(self, f: Frame, e: dict[str, Any]) -> LeaderAndIsr | None:
        """The model's message a LeaderAndISR frame's entry is: the one the model holds, else
        one rebuilt for the broker's registration and replica incarnation now."""
        p, epoch = _partition_of(e), int(e.get("leader_epoch", -1)) - self.shift
        if not isinstance(p, int) or p >= len(self.s.brokers[f.dst].replicas):
            return None
        for m in self.s.leader_and_isr:
            if m.to == f.dst and m.partition == p and m.leader == e.get("leader") \
                    and m.leader_epoch == epoch and m.controller_epoch == f.summary.get("controller_epoch"):
                return m
        broker = self.s.brokers[f.dst]
        return LeaderAndIsr(f.dst, p, int(e.get("leader", -1)), epoch, tuple(e.get("isr") or ()),
                            int(e.get("zk_version", -1)), int(f.summary.get("controller_epoch") or 0),
                            broker.broker_epoch, broker.replicas[p].topic_id)

    def _control_answer(self, f: Frame) -> dict[str, Any]:
        """The summary of a broker's answer to a released control request."""
        deadline = time.monotonic() + self.step_timeout
        while time.monotonic() < deadline:
            for x in reversed(self.cluster.relay.frames):
                if x.id > f.id and x.kind == "control_response" and x.conn == f.conn \
                        and x.correlation_id == f.correlation_id:
                    return x.summary
            time.sleep(0.05)
        raise Divergence(f"broker {f.dst} did not answer {f.describe()} within {self.step_timeout:.0f}s",
                         "an answer to the LeaderAndISR")

    def _refusals(self, f: Frame, e: dict[str, Any], mark: int, wait: float) -> list[dict[str, Any]]:
        """The refusals broker ``f.dst`` recorded, after event ``mark``, for the entry ``e`` of
        LeaderAndISR ``f``, waiting up to ``wait`` seconds for it to record the entry at all."""
        deadline = time.monotonic() + wait
        while True:
            mine = [x for x in self.cluster.events()
                    if x["node"] == f.dst and x["seq"] > mark and x["kind"] in RECEIPTS
                    and x.get("partition") == _partition_of(e)
                    and (x.get("params") or {}).get("leader_epoch") == e.get("leader_epoch")
                    and (x.get("params") or {}).get("controller_epoch") == f.summary.get("controller_epoch")]
            if mine or time.monotonic() >= deadline:
                return [x for x in mine if x["kind"] == "reject_leader_and_isr"]
            time.sleep(0.05)

    def _take_delivered(self, f: Frame, step_is: LeaderAndIsr | StopReplica | None = None) -> None:
        """The model steps a delivered request is, taken in the driver's state: one per
        partition it names -- the controller sends a broker one request for every partition
        it tells it about at once (a failover, a restart), where the model sends one message
        per partition.  ``step_is``, the model message the run's own step delivers, is left
        for that step; an older request delivered first has none."""
        names = f.summary.get("partitions") or []
        others = [e for e in names if step_is is None or _partition_of(e) != step_is.partition]
        if step_is is not None and not others:
            return
        time.sleep(0.3)
        if not others:
            self.inserted.append(StepReport(0, f.kind, "", f"delivered {f.describe()} first", "relay.release",
                                            "inserted", note=f"no model step: {f.kind} names no partition"))
            return
        why = ("an older request, delivered first: the channel sends one request at a time" if step_is is None
               else "delivered in the same request as the step's: the controller names every partition in one")
        if f.kind == "stop_replica":
            for e in others:
                self._take_stop_replica(f, _partition_of(e), why)
            return
        if f.kind != "leader_and_isr":
            self.inserted.append(StepReport(0, f.kind, "", f"delivered {f.describe()} first", "relay.release",
                                            "inserted", note=f"no model step: {f.kind}"))
            return
        for e in others:
            self._take_leader_and_isr(f, e, why)

    def _take_stop_replica(self, f: Frame, p: int | None, why: str) -> None:
        for sm in self.s.stop_replica:
            if sm.to == f.dst and sm.partition == p and sm.delete == f.summary.get("delete"):
                step = Step("stop_replica", (sm,))
                t = apply(self.s, self.cfg, step)
                if t is not None:
                    self.inserted.append(StepReport(0, "stop_replica", _args_text(step), describe(step, self.s, t),
                                                    "relay.release(stop_replica)", "inserted", note=why))
                    self.s = t
                    return
        self.inserted.append(StepReport(0, "stop_replica", f"(to={f.dst}, partition={p})",
                                        f"delivered {f.describe()}", "relay.release(stop_replica)", "inserted",
                                        note="a no-op in the model (stale or repeated)"))

    def _take_leader_and_isr(self, f: Frame, e: dict[str, Any], why: str) -> None:
        epoch = int(e.get("leader_epoch", -1)) - self.shift
        for m in self.s.leader_and_isr:
            if m.to == f.dst and m.partition == e.get("partition") and m.leader == e.get("leader") \
                    and m.leader_epoch == epoch and m.controller_epoch == f.summary.get("controller_epoch"):
                action = "become_leader" if m.leader == m.to else "become_follower"
                step = Step(action, (m,))
                t = apply(self.s, self.cfg, step)
                if t is not None:
                    self.inserted.append(StepReport(0, action, _args_text(step), describe(step, self.s, t),
                                                    "relay.release(leader_and_isr)", "inserted", note=why))
                    self.s = t
                    return
        self.inserted.append(StepReport(0, "leader_and_isr", _frame_args(f, e), f"delivered {f.describe()}",
                                        "relay.release(leader_and_isr)", "inserted",
                                        note="a no-op in the model (stale or repeated)"))


class JudgeSaysNo(Exception):
    """The trace judge found the implementation's trace non-conforming."""

    def __init__(self, verdict: dict[str, Any]) -> None:
        super().__init__(verdict.get("reason") or "non-conforming")
        # a step no model step matches is a divergence, not a property the implementation broke
        self.property = None if verdict.get("property") == REFINEMENT else verdict.get("property")
        reason = str(verdict.get("reason") or "")
        self.did, _, rest = reason.partition(DIFFERS)
        if rest:
            self.allowed = rest
        elif self.property:
            self.allowed = "states that keep every property"
        else:
            self.allowed = "; ".join(verdict.get("possible_states") or [])[:600] or "no step"
        if not rest and not self.property:
            self.did = reason


def _partition_of(e: Any) -> int | None:
    """The partition id of one entry of a held request's summary: a LeaderAndISR's
    ``{"topic", "partition", ...}``, a StopReplica's ``[topic, partition]``."""
    if isinstance(e, dict):
        return e.get("partition")
    return list(e)[1] if len(list(e)) > 1 else None


def _names(f: Frame, partition: int) -> bool:
    """Whether a held request names ``partition`` of the topic."""
    return any(_partition_of(e) == partition for e in f.summary.get("partitions") or [])


def _frame_args(f: Frame, e: dict[str, Any]) -> str:
    return (f"(to={f.dst}, leader={e.get('leader')}, leader_epoch={e.get('leader_epoch')} [implementation's], "
            f"controller_epoch={f.summary.get('controller_epoch')})")


def _log_text(log: list[tuple[int, str]]) -> str:
    """A log in the model's epochs: ``[v1@1, v2@2]``."""
    return "[" + ", ".join(f"{v}@{e}" for e, v in log) + "]"


def _args_text(step: Step) -> str:
    parts = []
    for a in step.args:
        if hasattr(a, "_fields"):
            fields = a._asdict()
            keep = {k: v for k, v in fields.items() if k in ("to", "follower", "leader", "leader_epoch", "offset")}
            parts.append(f"{type(a).__name__}({', '.join(f'{k}={v}' for k, v in keep.items())})")
        else:
            parts.append(repr(a))
    return "(" + ", ".join(parts) + ")"


def _event_text(e: dict[str, Any]) -> str:
    who = "harness" if e["node"] == -1 else f"broker {e['node']}"
    params = {k: v for k, v in (e.get("params") or {}).items() if k not in ("records",)}
    return f"{e['kind']} by {who} {params}"
