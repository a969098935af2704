"""The runs of the end-to-end demonstration, and the outcome each one is expected to have.

Part one replays Kafka's history in the model: the design as written loses a committed
record (found by the exhaustive checker, with its shortest counterexample), each fix stops
the scenario that broke its predecessor, and the fixed protocol exhausts its bounds with
every property holding.  Part two runs the real system -- three broker processes on an
embedded ZooKeeper -- through a leader kill and a controller failover with an acks=all
workload, records the traces, and judges them with the Spark conformance job.

Each run is yielded as it finishes, with whether it came out as expected, so the command
(``impl.harness.cli.demo``) can show it at once; the demonstration passes only when every outcome
is the expected one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from model.config import named
from model.scenarios import SCENARIOS
from properties.checkers.bfs import Result, check
from properties.checkers.scenarios import Outcome, play

MODEL_CHECKS: tuple[tuple[str, dict[str, int], bool], ...] = (
    ("design", {}, True),
    ("kip320", {"brokers": 2, "max_crashes": 2}, False),
)
"""(configuration, bound overrides, whether a violation is expected): the design as written
loses a committed record; the fixed protocol holds within its bounds."""

SCENARIO_EXPECTATIONS: dict[str, dict[str, bool]] = {
    "kafka_1211": {"design": True, "kip101": False, "kip279": False, "kip320": False},
    "kip279_divergence": {"kip101": True, "kip279": False, "kip320": False},
    "kip320_stale_fetch": {"kip279": True, "kip320": False},
}
"""scenario -> configuration -> whether the scenario breaks a property there: each fix
stops the scenario that broke its predecessor."""

SCENARIO_CRASHES = 2

RECORDED_SCENARIOS = ("leader-kill", "controller-failover")
"""The faulty runs of the real system the demonstration records and judges."""

JUDGED_CONFIG = "kip320"

if TYPE_CHECKING:
    from conformance.spark.job import Outcome as Judged


@dataclass(frozen=True)
class CheckedConfig:
    """One exhaustive check of part one."""

    name: str
    result: Result
    expect_bug: bool
    seconds: float

    @property
    def found(self) -> bool:
        return self.result.violation is not None

    @property
    def as_expected(self) -> bool:
        return self.found == self.expect_bug and self.result.complete


@dataclass(frozen=True)
class PlayedScenario:
    """One known scenario played in one configuration."""

    scenario: str
    config: str
    outcome: Outcome
    expect_broken: bool

    @property
    def broken(self) -> bool:
        return bool(self.outcome.violations)

    @property
    def as_expected(self) -> bool:
        return self.broken == self.expect_broken


def scenario_brokers(scenario: str) -> int:
    """KAFKA-1211 needs two brokers; the later divergences need a third."""
    return 2 if scenario == "kafka_1211" else 3


def check_history() -> Iterator[CheckedConfig]:
    """Check the design and the fix exhaustively, one configuration at a time."""
    for name, overrides, expect_bug in MODEL_CHECKS:
        t0 = time.perf_counter()
        r = check(named(name, **overrides))
        yield CheckedConfig(name, r, expect_bug, time.perf_counter() - t0)


def play_history(scenario: str) -> Iterator[PlayedScenario]:
    """Play one known scenario in each configuration it is expected to break or not."""
    for cfg_name, expect in SCENARIO_EXPECTATIONS[scenario].items():
        cfg = named(cfg_name, brokers=scenario_brokers(scenario), max_crashes=SCENARIO_CRASHES)
        yield PlayedScenario(scenario, cfg_name, play(scenario, cfg), expect)


def scenario_summary(scenario: str) -> str:
    return SCENARIOS[scenario][0]


def record_runs(out: Path, log: Callable[[str], None]) -> None:
    """Record each of ``RECORDED_SCENARIOS`` on a fresh cluster, its traces under ``out``.
    Raises OSError, TimeoutError or RuntimeError when the cluster cannot run (no Java, no
    free port, a hung failover, a broker that exited)."""
    from impl.harness.recordings import record

    for scenario in RECORDED_SCENARIOS:
        record(scenario, out, log=log)


def judge_runs(out: Path) -> Judged:
    """The Spark conformance job's outcome on the traces under ``out`` (verdicts written to
    ``out/verdicts``)."""
    from conformance.spark.job import conform

    return conform([str(out)], out=str(out / "verdicts"), config=JUDGED_CONFIG, log=lambda m: None)


def runs_conform(outcome: Judged) -> bool:
    """Every recorded run was judged, and every trace group conforms."""
    return outcome.exit_code == 0 and outcome.groups >= len(RECORDED_SCENARIOS) and outcome.conforming == outcome.groups
