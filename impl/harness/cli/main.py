"""The epochal command: one entry point, one subcommand per capability.

Each command's parsing and output live in a module of its own (listed in
SUBCOMMAND_MODULES), whose register(subparsers) adds parsers whose func default returns an
exit code.  Errors that are the user's (bad arguments, an unreachable cluster) are one line
on stderr and exit code 2 -- never a traceback.  Every command follows one exit-code
convention (impl.harness.cli.exits), shown at the end of --help.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import PackageNotFoundError, version

from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import EXIT_CODES, USAGE
from impl.harness.cli.numbers import bound_numbers
from impl.harness.cli.output import print_json, wants_json

# the commands that act on a running cluster (reached as impl.harness.cli.cluster_access says)
CLUSTER_COMMAND_MODULES = [
    "impl.harness.cli.cluster",  # epochal cluster start
    "impl.harness.cli.topics",  # epochal topics
    "impl.harness.cli.quotas",  # epochal quotas
    "impl.harness.cli.produce",  # epochal produce
    "impl.harness.cli.consume",  # epochal consume
    "impl.harness.cli.broker",  # epochal broker
]

# module path -> it defines register(subparsers: argparse._SubParsersAction) -> None
SUBCOMMAND_MODULES = [
    "impl.harness.cli.check",  # epochal check
    "impl.harness.cli.fuzz",  # epochal fuzz
    "impl.harness.cli.prove",  # epochal prove
    "impl.harness.cli.demo",  # epochal demo
    "impl.harness.cli.record_traces",  # epochal record-traces
    "impl.harness.cli.chaos",  # epochal chaos
    "impl.harness.cli.conform",  # epochal conform
    "impl.harness.cli.drive",  # epochal drive
    "impl.harness.cli.package_job",  # epochal package-job
    "impl.harness.cli.vectors",  # epochal vectors
    *CLUSTER_COMMAND_MODULES,
    "impl.harness.cli.kafka",  # epochal kafka fetch (and cluster start --engine kafka)
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """One line, as every usage error (the usage is one ``--help`` away)."""
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(USAGE)


def _version() -> str:
    """The installed distribution's version (pyproject.toml's), as ``--version`` prints it."""
    try:
        return version("epochal")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="epochal", description=__doc__.splitlines()[0], epilog=EXIT_CODES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return bound_numbers(parser)  # every numeric option's range (impl.harness.cli.numbers)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"epochal {args.command}: error: {exc}", file=sys.stderr)
        if wants_json(args):
            return print_json(args, USAGE, error=str(exc))
        return USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
