"""``epochal drive --engine kafka``: a path of model steps taken by real Kafka, judged step by step.

:class:`KafkaDriver` starts three real Kafka brokers behind the relay (``relay=True``),
casts the path's model brokers onto them (:class:`~.paths.Cast`), creates the topic with the
path's assignment, and then, step by step (:mod:`.paths`): performs a controlled step
(:data:`~.paths.OPERATIONS`) or waits for Kafka to take an awaited one, until the step's
event shows in the run's trace -- the run's logs adapted as ``epochal kafka record`` adapts
them (``conformance.kafka.adapter``), re-read at every poll -- bounded by the step timeout.

Once the path is done (or a step was not taken in time) the cluster is stopped and the
complete logs are adapted once more; each step's event is found again, in order, and the
trace up to it judged against the profile's configuration (``kafka26``, ``kafka39``; or
another the caller names, to see where Kafka and that one part) by the
trace judge ``epochal conform`` runs.  The first step whose event is missing, or up to
which the trace does not conform, is the divergence.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.judge.replay import judge
from conformance.kafka.adapter import CONFIGS, adapt, to_records
from conformance.spark.verdict import judge_run
from impl.harness.kafka.cluster import KafkaCluster
from impl.harness.kafka.fetch import KafkaJars, fetch
from impl.harness.kafka.paths import (
    HARNESS_ONLY,
    PATHS,
    RELAY_HOLDS,
    A,
    B,
    C,
    Cast,
    Progress,
    Step,
)
from impl.harness.kafka.scenarios import TOPIC, produce
from model.config import NAMED, UNCLEAN_OF

POLL_S = 0.5
SETTLE_S = 1.0
"""After the last step, before the brokers are stopped: the followers' long polls in flight
(``replica.fetch.wait.max.ms``) are answered, and so logged -- a request in flight at a kill
never reaches the request log, and an ISR expansion waits, in the trace, for the read of
the fetch that brought its follower to the HW."""
RESTART_S = 60.0
"""How long a restart may take: the old session's end (3 s) and a JVM's start."""
FOLLOWED, DIVERGED, INCONCLUSIVE, INTERRUPTED = "followed", "diverged", "inconclusive", "interrupted"
REPRODUCED = "reproduced"
"""The trace breaks, at the step the model's run breaks it, the property it breaks there
(``Step.breaks``): Kafka lost what the model says it loses there."""
UNJUDGED = "unjudged"
"""A step Kafka was seen taking after the one it diverged at: not judged."""
EXIT_CODES = {FOLLOWED: 0, DIVERGED: 1, REPRODUCED: 1, INCONCLUSIVE: 3, INTERRUPTED: 3}


class KafkaDriveError(ValueError):
    """A path or profile the Kafka driver does not have (bad input, one line)."""


@dataclass
class StepResult:
    n: int
    step: Step
    outcome: str  # followed | diverged | unjudged
    seconds: float = 0.0
    event: int | None = None  # the step's event, in the final trace
    note: str = ""


@dataclass
class KafkaDriveReport:
    path: str
    profile: str
    config: str
    cast: Cast | None = None
    steps: list[StepResult] = field(default_factory=list)
    verdict: str = INCONCLUSIVE
    divergence: dict[str, Any] | None = None
    violated: str | None = None  # the property a reproduced run breaks
    events: int = 0
    setup_seconds: float = 0.0
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON: every step (its model step, whether the harness took it or
        Kafka did, its event's index in the trace), the verdict and the divergence."""
        return {"path": self.path, "profile": self.profile, "config": self.config,
                "cast": None if self.cast is None else dict(zip("ABC", self.cast.kafka, strict=True)),
                "verdict": self.verdict, "divergence": self.divergence, "property": self.violated,
                "events": self.events,
                "seconds": round(self.seconds, 1), "setup_seconds": round(self.setup_seconds, 1),
                "steps": [{"n": s.n, "step": s.step.describe(), "action": s.step.action,
                           "by": "harness" if s.step.controlled else "kafka", "outcome": s.outcome,
                           "event": s.event, "seconds": round(s.seconds, 1), "note": s.note}
                          for s in self.steps]}


def _trace(run_dir: Path, name: str) -> list[dict[str, Any]]:
    """The run's trace now; a log caught in the middle of a line yields what reads so far."""
    try:
        return to_records(adapt(run_dir), name)
    except Exception:  # noqa: BLE001 - a live run's logs may end inside a line: read again at the next poll
        return []


def _verdict(records: list[dict[str, Any]], config: str) -> dict[str, Any]:
    """The judge's verdict on the topic's partition of ``records``."""
    verdicts = judge_run("kafka-drive", records, judge, config)
    return next(v for v in verdicts if v["topic"] == TOPIC and v["partition"] == 0)


class KafkaDriver:
    """Drive one path (:data:`~.paths.PATHS`) on real Kafka at one profile."""

    def __init__(self, path: str, profile: str, data_dir: Path | None = None, step_timeout: float = 20.0,
                 progress: Callable[[str], None] | None = None, jars: KafkaJars | None = None,
                 config: str | None = None) -> None:
        if path not in PATHS:
            raise KafkaDriveError(f"unknown Kafka path {path!r}; choose one of {', '.join(PATHS)}")
        if profile not in CONFIGS:
            raise KafkaDriveError(f"unknown Kafka profile {profile!r}; choose one of {', '.join(CONFIGS)}")
        if config is not None and config not in NAMED:
            raise KafkaDriveError(f"unknown configuration {config!r}; choose one of {', '.join(NAMED)}")
        self.path = PATHS[path]
        own = UNCLEAN_OF[CONFIGS[profile]] if self.path.unclean else CONFIGS[profile]
        self.name, self.profile, self.config = path, profile, config or own
        self.steps = self.path.steps(profile)
        self.data_dir = data_dir
        self.step_timeout = step_timeout
        self.progress = progress or (lambda _m: None)
        self.jars = jars
        self.run_name = f"kafka-drive-{path}-{profile}"

    def run(self) -> KafkaDriveReport:
        start = time.monotonic()
        report = KafkaDriveReport(self.name, self.profile, self.config)
        run_dir = self.data_dir or Path(tempfile.mkdtemp(prefix="epochal-kafka-drive-"))
        cluster = KafkaCluster(run_dir, brokers=3, profile=self.profile, jars=self.jars or fetch(), relay=True,
                               unclean_leader_election=self.path.unclean)
        self.progress(f"starting 3 Kafka brokers ({self.profile}) behind the relay in {run_dir}")
        reached = 0
        try:
            cluster.start()
            report.cast = self._cast(cluster)
            report.setup_seconds = time.monotonic() - start
            self.progress(f"cast {report.cast.text()}; topic {TOPIC} created in {report.setup_seconds:.1f}s")
            reached = self._drive(cluster, run_dir, report)
            time.sleep(SETTLE_S)
        except KeyboardInterrupt:
            report.verdict = INTERRUPTED
        finally:
            cluster.stop()
        if report.verdict != INTERRUPTED:
            self._judge(run_dir, report, reached)
        report.seconds = time.monotonic() - start
        return report

    def _cast(self, cluster: KafkaCluster) -> Cast:
        """Who is who: the controller plays the path's controller; the topic is created with
        ``A, B, C`` assigned, so Kafka elects ``A``."""
        ctrl = cluster.controller()
        assert ctrl is not None  # start() waited for one
        cast = Cast.of(self.path.controller, ctrl.broker, cluster.brokers)
        cluster.create_topic(TOPIC, assignment=[[cast(A), cast(B), cast(C)]])
        now = cluster.controller()
        if now is None or now.broker != ctrl.broker:
            raise RuntimeError(f"the controller moved from broker {ctrl.broker} during setup")
        return cast

    # -- the run ---------------------------------------------------------------------------
    def _drive(self, cluster: KafkaCluster, run_dir: Path, report: KafkaDriveReport) -> int:
        """Take the steps in order; returns how many were taken (the rest were not reached)."""
        assert report.cast is not None
        cast, where = report.cast, Progress()
        for n, step in enumerate(self.steps, 1):
            t0 = time.monotonic()
            note = self._perform(cluster, step, cast) if step.controlled else ""
            if step.action not in HARNESS_ONLY:
                found = self._await(step, run_dir, where, cast)
                if found is None:
                    report.steps.append(StepResult(n, step, DIVERGED, time.monotonic() - t0,
                                                   note=f"Kafka did not take it within {self.step_timeout:.0f}s"))
                    self.progress(f"{n:>3} not taken  {step.describe()}")
                    return n - 1
                where.take(found)
            elif note.startswith("!"):
                report.steps.append(StepResult(n, step, DIVERGED, time.monotonic() - t0, note=note[1:]))
                return n - 1
            report.steps.append(StepResult(n, step, FOLLOWED, time.monotonic() - t0, note=note))
            self.progress(f"{n:>3} {'done' if step.controlled else 'observed':<10} {step.describe()}"
                          f"  ({time.monotonic() - t0:.1f}s)")
        return len(self.steps)

    def _perform(self, cluster: KafkaCluster, step: Step, cast: Cast) -> str:
        """The harness's operation for a controlled step; a note for the report ("!": it failed)."""
        assert isinstance(step.actor, int)
        broker = cast(step.actor)
        if step.action == "produce":
            assert cluster.jars is not None
            produce(cluster, cluster.jars, [step.expect["value"]], acks="1")
        elif step.action == "broker_crash":
            cluster.kill(broker)
        elif step.action == "broker_restart":
            cluster.restart(broker, RESTART_S)
        elif step.action == "broker_pause":
            cluster.pause(broker)
        elif step.action == "broker_resume":
            cluster.resume(broker)
        else:
            return self._relay(cluster, step, cast)
        return ""

    def _relay(self, cluster: KafkaCluster, step: Step, cast: Cast) -> str:
        """Hold or release: a Fetch of follower ``actor`` to ``target``, a LeaderAndIsr to ``actor``.
        A hold is done once a request is held (the one in flight before it was answered);
        a release once the held ones are passed on (there must be one)."""
        relay = cluster.relay
        assert relay is not None and isinstance(step.actor, int)
        api, holds = RELAY_HOLDS[step.action]
        key = (cast(step.target), api, cast(step.actor)) if step.target is not None else (cast(step.actor), api)
        if holds:
            relay.hold(*key)
            if api == "Fetch" and step.in_flight and not self._wait(lambda: relay.held(*key) > 0):
                return f"!no {api} request held within {self.step_timeout:.0f}s"
            return ""
        if not self._wait(lambda: relay.held(*key) > 0):
            return f"!the relay held no {api} request within {self.step_timeout:.0f}s"
        return f"{relay.release(*key)} released"

    def _wait(self, probe: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + self.step_timeout
        while not probe():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _await(self, step: Step, run_dir: Path, where: Progress, cast: Cast) -> int | None:
        """The index of the step's event in the live trace, once it shows (bounded)."""
        deadline = time.monotonic() + self.step_timeout
        while True:
            found = where.find(step, _trace(run_dir, self.run_name), cast)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(POLL_S)

    # -- the judgement ---------------------------------------------------------------------
    def _judge(self, run_dir: Path, report: KafkaDriveReport, reached: int) -> None:
        """Each step taken found again in the complete trace, and the trace up to it judged;
        then the whole trace.  The first failure is the divergence."""
        records = _trace(run_dir, self.run_name)
        report.events = len(records)
        if report.cast is None or not records:
            report.verdict, report.divergence = INCONCLUSIVE, {"reason": "the run left no trace to judge"}
            return
        where = Progress()
        for result in report.steps[:reached]:
            if result.step.action in HARNESS_ONLY:
                continue
            at = where.find(result.step, records, report.cast)
            if at is None:
                self._diverge(report, result, "its event is not in the complete trace after the step before's")
                return
            verdict = _verdict(records[:at + 1], self.config)
            if self._reproduces(verdict, result):
                result.event, result.outcome = at, REPRODUCED
                result.note = f"the trace breaks {verdict['property']}: {verdict['reason']}"
                report.verdict, report.violated = REPRODUCED, verdict["property"]
                return
            if verdict["status"] != "conforms":
                why = f"the trace up to it does not conform to {self.config}: {verdict['reason']}"
                self._diverge(report, result, why, INCONCLUSIVE if verdict["status"] == "inconclusive" else DIVERGED)
                return
            result.event = at
            where.take(at)
        whole = _verdict(records, self.config)
        taken_differently = reached < len(self.steps)
        if whole["status"] != "conforms":
            report.verdict = INCONCLUSIVE if whole["status"] == "inconclusive" else DIVERGED
            report.divergence = {"step": reached + 1 if taken_differently else None, "action": "after the path",
                                 "implementation_did": f"event {whole.get('first_bad')}: {whole.get('observed')}",
                                 "model_allowed": whole["reason"]}
            return
        if taken_differently:
            missed = report.steps[reached]
            report.verdict = DIVERGED
            report.divergence = {"step": missed.n, "action": missed.step.describe(),
                                 "implementation_did": f"{missed.note}; its whole trace ({len(records)} events) "
                                                       f"still conforms to {self.config}: another run the model allows",
                                 "model_allowed": missed.step.describe()}
            return
        report.verdict = FOLLOWED

    def _reproduces(self, verdict: dict[str, Any], result: StepResult) -> bool:
        """Whether the judge finds the property the model's run breaks at this step."""
        return (verdict["status"] == "violates" and result.step.breaks is not None
                and verdict.get("property") == result.step.breaks)

    def _diverge(self, report: KafkaDriveReport, result: StepResult, why: str, verdict: str = DIVERGED) -> None:
        result.outcome, result.note = DIVERGED, why
        for later in report.steps[result.n:]:
            later.outcome = UNJUDGED
        report.verdict = verdict
        report.divergence = {"step": result.n, "action": result.step.describe(), "implementation_did": why,
                             "model_allowed": result.step.describe()}


def render(r: KafkaDriveReport) -> str:
    head = (f"drive {r.path} on Apache Kafka ({r.profile}) against {r.config}"
            + (f", cast {r.cast.text()}" if r.cast else "") + f": {len(r.steps)} steps, {r.events} events "
            f"in {r.seconds:.1f}s ({r.setup_seconds:.1f}s setup)")
    lines = [head]
    for s in r.steps:
        how = "harness" if s.step.controlled else "awaited"
        at = f" event {s.event}" if s.event is not None else ""
        lines.append(f"{s.n:>3} {s.outcome:<9} {s.step.describe()}  [{how}{at}, {s.seconds:.1f}s]")
        if s.note:
            lines.append(f"      {s.note}")
    if r.verdict == FOLLOWED:
        lines.append(f"verdict: Kafka followed the path to its end; its whole trace conforms to {r.config}")
    elif r.verdict == REPRODUCED:
        lines.append(f"verdict: reproduced the model's violation at step {r.steps[-1].n}: {r.violated}")
    elif r.verdict == INTERRUPTED:
        lines.append(f"verdict: INCONCLUSIVE: interrupted by Ctrl-C after {len(r.steps)} steps")
    else:
        d = r.divergence or {}
        word = "diverged" if r.verdict == DIVERGED else "INCONCLUSIVE"
        lines.append(f"verdict: {word} at step {d.get('step')} ({d.get('action')})")
        if "implementation_did" in d:
            lines.append(f"  Kafka:       {d['implementation_did']}")
            lines.append(f"  the path:    {d['model_allowed']}")
        else:
            lines.append(f"  {d.get('reason')}")
    return "\n".join(lines)
