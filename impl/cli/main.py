"""The ``epochal`` command: one entry point, one subcommand per capability.

Each capability registers its own subcommands from its own module (listed in
``SUBCOMMAND_MODULES``) through a ``register(subparsers)`` function that adds parsers whose
``func`` default returns an exit code.  Errors that are the user's (bad arguments, an
unreachable cluster) are one line on stderr and exit code 2 -- never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# module path -> it defines register(subparsers: argparse._SubParsersAction) -> None
SUBCOMMAND_MODULES = [
    "impl.cli.check",  # epochal check
    "impl.cli.fuzz",  # epochal fuzz
    "impl.cli.prove",  # epochal prove
    "impl.harness.demo",  # epochal demo
    "impl.harness.recordings",  # epochal record-traces
    "impl.harness.chaos",  # epochal chaos
    "conformance.spark.cli",
    "impl.cli.commands",  # epochal cluster|topics|quotas|produce|consume|broker
]


class UsageError(Exception):
    """A problem with what the user asked for; printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="epochal", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"epochal {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # run through the package module so UsageError is one class
    from impl.cli.main import main as _main

    raise SystemExit(_main())
