"""Play the named runs of ``model.scenarios`` through the model, stopping at the first
violation of ``properties.safety`` (or at the first step the configuration refuses)."""

from __future__ import annotations

from dataclasses import dataclass, field

from model.actions import Step
from model.config import Config
from model.export.render import describe
from model.registry import apply
from model.scenarios import SCENARIOS
from model.state import State, initial
from properties.safety import all_violations


@dataclass
class Outcome:
    steps: list[tuple[Step, str]] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    violations: list[tuple[str, str]] = field(default_factory=list)
    blocked_at: int | None = None  # 1-based index of the first step the configuration refused
    blocked_step: str | None = None


def play(name: str, cfg: Config) -> Outcome:
    """Run scenario ``name`` from the initial state of ``cfg``."""
    _, script = SCENARIOS[name]
    s = initial(cfg)
    out = Outcome(states=[s])
    for i, (action, choose) in enumerate(script, 1):
        try:
            args = choose(s)
        except StopIteration:
            out.blocked_at, out.blocked_step = i, f"{action}: no such message in flight"
            return out
        step = Step(action, args)
        t = apply(s, cfg, step)
        if t is None:
            out.blocked_at, out.blocked_step = i, f"{action}{args}: not enabled"
            return out
        out.steps.append((step, describe(step, s, t)))
        out.states.append(t)
        violations = all_violations(s, t)
        s = t
        if violations:
            out.violations = violations
            return out
    return out
