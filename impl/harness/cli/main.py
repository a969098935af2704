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
import json
import sys
from importlib.metadata import PackageNotFoundError, version

from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import EXIT_CODES, INCONCLUSIVE, USAGE
from impl.harness.cli.option_ranges import bound_numbers
from impl.harness.cli.output import command_name, error_document, wants_json

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


class ArgumentsRefused(SystemExit):
    """The command line does not parse (exit 2), and why."""

    def __init__(self, message: str) -> None:
        super().__init__(USAGE)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """One line, as every usage error (the usage is one ``--help`` away); :func:`main`
        adds the error object under ``--json``."""
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise ArgumentsRefused(message)


def _refused_command(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """The command a refused command line asked for (``check``, ``topics create``): its
    leading words, as far as they name commands -- the top-level parser refuses an unknown
    flag of any command, so the refusing parser's name does not tell."""
    words: list[str] = []
    for word in argv:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            break
        words.append(word)
        parser = sub.choices[word]
    return " ".join(words) or "epochal"


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code of a command line that does not parse (after
    the one line on stderr, and the error object on stdout under ``--json``)."""
    try:
        return parser.parse_args(argv)
    except ArgumentsRefused as exc:
        if "--json" in argv:
            print(json.dumps(error_document(_refused_command(parser, argv), USAGE, exc.message), indent=2))
        return USAGE


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
    return bound_numbers(parser)  # every numeric option's range (impl.harness.cli.option_ranges)


def _stopped(args: argparse.Namespace, code: int, message: str) -> int:
    """A command that ended without its report: the one line, and its error object under ``--json``."""
    print(f"epochal {command_name(args)}: {'error: ' if code == USAGE else ''}{message}", file=sys.stderr)
    if wants_json(args):
        print(json.dumps(error_document(command_name(args), code, message), indent=2))
    return code


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        return _stopped(args, USAGE, str(exc))
    except KeyboardInterrupt:
        # the commands that can report how far they got catch Ctrl-C themselves; the rest
        # have nothing to report but that they were stopped: inconclusive, as for the others
        return _stopped(args, INCONCLUSIVE, "interrupted by Ctrl-C before there was anything to report")


if __name__ == "__main__":
    raise SystemExit(main())
