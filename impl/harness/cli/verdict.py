"""The verdict object: one shape for what ``check``, ``prove``, ``fuzz``, ``drive``,
``conform``, ``chaos`` and ``demo`` print under ``--json``, so a CI job reads any of them the same way.

Every verdict document carries ``command``, ``schema_version``, ``exit_code``, ``verdict``
(one word per exit code, ``VERDICTS``), ``config`` (an object: the configuration judged,
``name`` first) and ``violation`` (null, or ``{"property", "label", "message", "steps"}``
with steps in the one format ``epochal drive --path`` reads: ``{"n", "action", "args",
"description"}``).  A command that judges several configurations also lists them in
``results``, each with its own ``config``, ``verdict``, ``exit_code`` and ``violation``; the
document's ``config`` and ``violation`` are then the first result whose exit code is the
command's -- the one the verdict is about.  ``docs/verdict.schema.json`` is the JSON Schema
of it all (argument errors included); ``tests/impl/harness/cli/test_verdict_schema.py``
holds every command's output to it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from impl.harness.cli.exits import VERDICTS
from impl.harness.cli.output import SCHEMA_VERSION, print_json

__all__ = ["FOLLOWS_MODEL", "SCHEMA_VERSION", "VERDICTS", "config_object", "label_of", "model_violation", "plain",
           "print_results", "print_verdict", "result_entry", "step_objects", "verdict_of", "violation_object"]

FOLLOWS_MODEL = "follows_model"
"""The property an implementation breaks where it does what the model does not allow and
no safety property names the break (a divergence, a non-conforming trace)."""


def verdict_of(exit_code: int) -> str:
    """The verdict word of an exit code (``impl.harness.cli.exits.VERDICTS``)."""
    return VERDICTS[exit_code]


def config_object(cfg: Any) -> dict[str, Any]:
    """A model configuration as the verdict object writes it: ``name``, then every field."""
    return {"name": cfg.name, **{k: v for k, v in vars(cfg).items() if k != "name"}}


def plain(x: Any) -> Any:
    """A step argument as JSON: NamedTuple messages become objects, tuples lists."""
    if hasattr(x, "_asdict"):
        return {k: plain(v) for k, v in x._asdict().items()}
    if isinstance(x, tuple | list):
        return [plain(v) for v in x]
    return x


def step_objects(steps: Iterable[tuple[Any, str]]) -> list[dict[str, Any]]:
    """Model steps with their descriptions, numbered from 1, in the format ``drive --path`` reads."""
    return [{"n": i, "action": s.action, "args": plain(s.args), "description": d}
            for i, (s, d) in enumerate(steps, 1)]


def violation_object(prop: str, message: str, label: str | None, steps: list[dict[str, Any]],
                     also: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    return {"property": prop, "label": label, "message": message,
            "also": [{"property": n, "message": m} for n, m in also], "steps": steps}


def label_of(message: str) -> str | None:
    """A violation's label, as the exhaustive checker gives it: the loss an unclean
    election causes by design is labelled so (``properties.safety.UNCLEAN_LABEL``)."""
    from properties.safety import UNCLEAN_LABEL

    return UNCLEAN_LABEL if UNCLEAN_LABEL in message else None


def model_violation(v: Any) -> dict[str, Any] | None:
    """A model checker's violation (``properties.checkers.bfs.Violation`` or fuzz's)."""
    if v is None:
        return None
    return violation_object(v.property, v.message, label_of(v.message), step_objects(v.steps), v.also)


def result_entry(config: dict[str, Any], exit_code: int, violation: dict[str, Any] | None,
                 **fields: Any) -> dict[str, Any]:
    """One configuration's verdict, as an entry of ``results``."""
    return {"config": config, "verdict": verdict_of(exit_code), "exit_code": exit_code,
            "violation": violation, **fields}


def print_verdict(args: argparse.Namespace, exit_code: int, config: dict[str, Any],
                  violation: dict[str, Any] | None, **fields: Any) -> int:
    """Print the verdict document of a command that judged one configuration."""
    return print_json(args, exit_code, verdict=verdict_of(exit_code), config=config, violation=violation, **fields)


def print_results(args: argparse.Namespace, exit_code: int, results: list[dict[str, Any]], **fields: Any) -> int:
    """Print the verdict document of a command that judged several configurations
    (``results``, from :func:`result_entry`): its config and violation are the first
    result's whose exit code is the command's."""
    about = next((r for r in results if r["exit_code"] == exit_code), results[0])
    return print_verdict(args, exit_code, about["config"], about["violation"], results=results, **fields)
