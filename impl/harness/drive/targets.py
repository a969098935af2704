"""Generated test cases over every configuration and knob: each named configuration of the
model, and ``kip320`` with each admin knob that turns on actions the driver runs, driven as
``--generate transitions`` drives one (``generate.generate``), with the pairs covered
reported per configuration.

``TARGETS`` names them.  The zombie one has a crash as well as its pause (``max_crashes=1``)
and three brokers: a controller frozen in the middle of an election, replaced, then resumed
to write needs a broker gone for the election and another broker to take over
(``drive.zombie``).

A *sample* (``focus``) drives, per configuration, only the paths that take a pair the
baseline ``kip320`` does not have -- what that configuration adds -- or, for a configuration
that adds none (``design``, ``kip101``, ``kip279`` change a rule, not the steps), its first
path, the one that takes the most pairs: what the slow suite runs within its budget.  The full
run drives every path (``bench/bench_generate.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impl.harness.drive.generate import Case, GenerateReport, Pair, generate, search
from impl.harness.drive.guided import GuidedReport, fuzz
from model.config import DRIVABLE, named


@dataclass(frozen=True)
class Target:
    name: str
    config: str  # the model configuration (and the cluster's truncation rule)
    knobs: dict[str, int] = field(default_factory=dict)
    brokers: int = 2
    beyond: tuple[str, ...] = ()  # the targets, besides the baseline, whose pairs its sample leaves out

    def command(self) -> str:
        """The ``epochal drive`` command that generates this target's cases."""
        flags = "".join(f" --{k.replace('_', '-')} {v}" for k, v in self.knobs.items())
        return f"epochal drive --config {self.config}{flags} --brokers {self.brokers} --generate transitions"


TARGETS: tuple[Target, ...] = (
    Target("kip320", "kip320"),
    Target("design", "design"),
    Target("kip101", "kip101"),
    Target("kip279", "kip279"),
    Target("unclean", "unclean"),
    Target("zombie", "zombie", {"max_crashes": 1}, brokers=3),
    Target("deletion", "kip320", {"deletions": 1}),
    Target("partition-change", "kip320", {"partition_changes": 2}),
    Target("shutdown", "kip320", {"max_shutdowns": 1}),
    Target("preferred-election", "kip320", {"preferred_elections": 1}),
    Target("reassignment", "kip320", {"reassignments": 1}),
    Target("fetch-cut-short", "kip320", {"fetch_max_records": 1}),
    # a leader paused through its topic's deletion and re-creation: the new incarnation's
    # LeaderAndISR meets the deleted one's records (``topic_identity``)
    Target("incarnation", "zombie", {"deletions": 1}, beyond=("zombie", "deletion")),
    Target("expiry", "kip320", {"max_expiries": 1}),
)
BASELINE = TARGETS[0]


def sample_focus(target: Target, max_states: int) -> frozenset[Pair] | None:
    """The pairs a sample drives for ``target``: those the baseline lacks (and the targets
    it names ``beyond``); None (the first path alone) when it adds none."""
    if target == BASELINE:
        return None
    own = _pairs(target.name, max_states) - _pairs(BASELINE.name, max_states)
    for name in target.beyond:
        own -= _pairs(name, max_states)
    return own or None


@functools.cache
def found(name: str, max_states: int) -> tuple[Case, ...]:
    """The cases the search finds for the target ``name`` (searched once per bound)."""
    target = next(t for t in TARGETS if t.name == name)
    cfg = named(target.config, brokers=target.brokers, **target.knobs)
    return tuple(search(cfg, max_states)[0])


def _pairs(name: str, max_states: int) -> frozenset[Pair]:
    return frozenset(c.pair for c in found(name, max_states))


@dataclass
class EveryReport:
    sample: bool
    reports: list[tuple[Target, GenerateReport]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return max((r.exit_code for _, r in self.reports), default=0)

    def as_dict(self) -> dict[str, Any]:
        return {"sample": self.sample, "exit_code": self.exit_code,
                "targets": [{"target": t.name, "command": t.command(), "knobs": t.knobs, "brokers": t.brokers,
                             **r.as_dict()} for t, r in self.reports]}

    def rows(self) -> list[str]:
        """One line per configuration: its pairs, those covered, the paths driven, verdicts."""
        out = []
        for t, r in self.reports:
            bad = [c for c in r.cases if c["verdict"] not in ("followed", "model_refused")]
            missing = sorted(set(r.pairs) - set(r.covered_pairs))
            out.append(f"{t.name:<19} {len(r.covered_pairs):>3} of {len(r.pairs):>3} pairs, {len(r.cases):>2} paths, "
                       f"{r.seconds:>6.1f}s, {len(bad)} diverged"
                       + (f"; not covered: {', '.join(f'{a}/{o}' for a, o in missing)}" if missing else ""))
        return out


def guided_every(budget_s: float, seed: int = 0, data_dir: Path | None = None, step_timeout: float = 20.0,
                 progress: Callable[[str], None] | None = None) -> list[GuidedReport]:
    """``--generate guided`` on every named configuration in turn, ``budget_s`` seconds each
    (guided fuzzing takes no knobs: each configuration as it is named, at two brokers)."""
    return [fuzz(name, budget_s, seed=seed, step_timeout=step_timeout, progress=progress,
                 data_dir=None if data_dir is None else Path(data_dir) / f"guided-{name}")
            for name in DRIVABLE]


def generate_every(budget_s: float, sample: bool = False, data_dir: Path | None = None,
                   max_states: int = 50_000, step_timeout: float = 20.0, targets: tuple[Target, ...] = TARGETS,
                   progress: Callable[[str], None] | None = None) -> EveryReport:
    """Each target in turn, ``budget_s`` seconds each (a case is started only while its
    target's budget lasts); ``sample``: only the paths ``sample_focus`` names."""
    say = progress or (lambda m: None)
    every = EveryReport(sample)
    for target in targets:
        say(f"== {target.name}: {target.command()}")
        focus = sample_focus(target, max_states) if sample else None
        sub = None if data_dir is None else Path(data_dir) / target.name
        r = generate(target.config, budget_s, data_dir=sub, brokers=target.brokers, step_timeout=step_timeout,
                     progress=progress, max_states=max_states, knobs=target.knobs,
                     focus=focus, first_only=sample and focus is None)
        every.reports.append((target, r))
    return every
