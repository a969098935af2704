"""``--json`` output: one shape for every ``epochal`` command, so a CI job parses any of them.

Every command's ``--json`` prints exactly one JSON object on stdout (progress and messages go
to stderr).  It always carries ``command`` (the subcommand, e.g. ``"check"`` or ``"topics
describe"``), ``schema_version`` and ``exit_code`` (the process's own, ``impl.harness.cli.exits``);
what else it carries is the command's, documented in docs/cli.md -- for the commands that
judge, the verdict object (``impl.harness.cli.verdict``).  Results about several
configurations are a list inside the object (``results``), never a bare list, so a reader
never has to ask which of the two it got.  A command that cannot run prints the error object
(``error_document``: ``{"command", "schema_version", "exit_code": 2, "verdict": "bad_input",
"error"}``) on stdout as well as the one line on stderr.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from impl.harness.cli.exits import VERDICTS


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def command_name(args: argparse.Namespace) -> str:
    """``check``, or ``topics describe`` for a command with actions."""
    action = getattr(args, "action", None)
    return f"{args.command} {action}" if action else str(args.command)


SCHEMA_VERSION = 1
"""The version of every ``--json`` object's shape: raised when a documented field is renamed
or removed (docs/cli.md says which); fields are added without it."""


def document(args: argparse.Namespace, exit_code: int, **fields: Any) -> dict[str, Any]:
    return {"command": command_name(args), "schema_version": SCHEMA_VERSION, "exit_code": exit_code, **fields}


def error_document(command: str, exit_code: int, error: str) -> dict[str, Any]:
    """What ``--json`` prints for a command that could not run: a usage error (2), or a
    Ctrl-C before it had anything to report (3)."""
    return {"command": command, "schema_version": SCHEMA_VERSION, "exit_code": exit_code,
            "verdict": VERDICTS[exit_code], "error": error}


def print_json(args: argparse.Namespace, exit_code: int, **fields: Any) -> int:
    """Print the command's one JSON object; returns ``exit_code`` so a command can end with
    ``return print_json(args, code, ...)``."""
    print(json.dumps(document(args, exit_code, **fields), indent=2, default=str))
    return exit_code


def add_json_flag(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true",
                   help=f"print {what} as one JSON object on stdout (shape: docs/cli.md)")
