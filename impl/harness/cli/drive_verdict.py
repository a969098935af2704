"""``epochal drive``'s verdict object (``impl.harness.cli.verdict``): the configuration it
drove, the word for its exit code, and the violation -- the model steps up to the one the
implementation diverged at or reproduced a violation at, in the format ``--path`` reads
back -- for a single run, ``--generate transitions`` and ``--generate guided`` alike.

Also the check that a ``--path``'s steps fit their actions, made in the model before any
process starts: a step whose arguments do not fit is bad input (exit 2), not a divergence.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import FOUND, HOLDS, INCONCLUSIVE
from impl.harness.cli.verdict import (
    FOLLOWS_MODEL,
    config_object,
    label_of,
    print_verdict,
    step_objects,
    violation_object,
)
from impl.harness.drive import DriveReport, ModelRun
from impl.harness.drive.paths import step_of
from model.config import Config, named


def _walk(run: ModelRun, cfg: Config, upto: int | None = None) -> list[tuple[Any, str]]:
    """The run's model steps with their descriptions, from the initial state, up to step
    ``upto`` (every step, None) or the first the model refuses."""
    from model.export.render import describe
    from model.registry import apply
    from model.state import initial

    s, out = initial(cfg), []
    for action, choose in run.steps[:upto]:
        step = step_of(action, choose, s)
        t = apply(s, cfg, step) if step is not None else None
        if t is None:
            break
        out.append((step, describe(step, s, t)))
        s = t
    return out


def check_path_fits(run: ModelRun, config: str, knobs: dict[str, int]) -> None:
    """Every step of a path takes arguments its action can be applied to (at three brokers
    where the path names no count: the most any index may mean), up to the first step the
    model refuses (the driver reports that one); else the one-line reason."""
    from model.actions import Step
    from model.registry import apply
    from model.state import initial

    cfg = named(config, brokers=run.brokers or 3, **{**run.bounds, **knobs})
    s = initial(cfg)
    for i, (action, choose) in enumerate(run.steps, 1):
        args = tuple(choose(s))
        try:
            t = apply(s, cfg, Step(action, args))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            raise UsageError(f"{run.name}: step {i}: the arguments {list(args)} do not fit {action}: "
                             f"{_misfit(action, args, exc)}") from None
        if t is None:
            return
        s = t


def _misfit(action: str, args: tuple, exc: Exception) -> str:
    """Why a step's arguments do not fit its action, in the action's terms."""
    from inspect import signature

    from model.registry import ACTIONS

    params = list(signature(ACTIONS[action].fn).parameters.values())[2:]  # after the state and the configuration
    required = [x.name for x in params if x.default is x.empty]
    optional = [x.name for x in params if x.default is not x.empty]  # a rule only some configurations use
    if not len(required) <= len(args) <= len(params):
        more = f" or {len(params)} with {', '.join(optional)}" if optional else ""
        return f"it takes {len(required)} ({', '.join(required)}){more}, the step gives {len(args)}"
    return f"{type(exc).__name__}: {exc}"


def _run_config(report: DriveReport, run: ModelRun, knobs: dict[str, int]) -> Config:
    return named(report.config, brokers=report.brokers, **{**run.bounds, **knobs})


def _violation(report: Any, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A failed run's violation: what the implementation broke (or the model's run broke and
    the implementation reproduced), at the steps given."""
    if report.exit_code != FOUND:
        return None
    d = report.divergence or {}
    message = getattr(report, "model_violation", None) or (
        f"step {d.get('step')} ({d.get('action')}): the implementation {d.get('implementation_did')}; "
        f"the model allowed {d.get('model_allowed')}")
    return violation_object(report.property or FOLLOWS_MODEL, message, label_of(message) or report.verdict, steps)


def print_drive(args: argparse.Namespace, report: DriveReport, run: ModelRun) -> int:
    """A single run's verdict object: the report's fields, its ``verdict`` as ``outcome``."""
    cfg = _run_config(report, run, args.knobs)
    last = (report.divergence or {}).get("step") or (report.steps[-1].n if report.steps else 0)
    fields = report.as_dict()
    for key in ("exit_code", "config"):
        fields.pop(key)
    fields["outcome"] = fields.pop("verdict")
    violation = _violation(report, step_objects(_walk(run, cfg, last)))
    return print_verdict(args, report.exit_code, config_object(cfg), violation, **fields)


def generate_exit_code(report: Any) -> int:
    """``--generate transitions``: 1 a case diverged or reproduced a violation; else 3 if
    fewer (action, outcome) pairs were covered than the search found (the budget ran out,
    a case stopped short, Ctrl-C), 0 only for every pair covered."""
    if report.exit_code == FOUND:
        return FOUND
    if report.interrupted:
        return INCONCLUSIVE
    return HOLDS if set(map(tuple, report.covered_pairs)) >= set(map(tuple, report.pairs)) else INCONCLUSIVE


def print_generated(args: argparse.Namespace, report: Any, code: int) -> int:
    """``--generate transitions``: the violation is the first failed case's, its path replayed
    in the model up to the step that failed."""
    from model.export.render import describe
    from model.registry import apply
    from model.state import initial

    cfg = named(report.config, brokers=args.brokers, **args.knobs)
    violation = None
    failed = next((i for i, c in enumerate(report.cases) if c["verdict"] in ("diverged", "reproduced")), None)
    if failed is not None:
        case = report.cases[failed]
        s, described = initial(cfg), []
        for step in report.paths[failed][:(case["divergence"] or {}).get("step") or case["steps"]]:
            t = apply(s, cfg, step)
            described.append((step, describe(step, s, t)))
            s = t
        violation = _violation(_Case(case), step_objects(described))
    fields = report.as_dict()
    fields.pop("config")
    return print_verdict(args, code, config_object(cfg), violation, **fields)


class _Case:
    """A generated case's row as :func:`_violation` reads a report."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.exit_code, self.verdict = FOUND, case["verdict"]
        self.divergence, self.property = case["divergence"], case.get("property")


def print_guided(args: argparse.Namespace, report: Any) -> int:
    """``--generate guided``: the violation is the first failed run's, its steps as saved."""
    cfg = named(report.config, brokers=report.brokers)
    violation = None
    failure = next(((f, r.path) for f, r in zip(report.failures, [r for r in report.runs if r.path], strict=True)),
                   None)
    if failure is not None:
        saved = json.loads(Path(failure[1]).read_text())
        violation = _violation(failure[0], saved["steps"])
    fields = report.as_dict()
    for key in ("exit_code", "config"):
        fields.pop(key)
    return print_verdict(args, report.exit_code, config_object(cfg), violation, **fields)
