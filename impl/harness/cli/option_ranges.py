"""The range of every numeric option of every command, checked where argparse reads it.

A value out of range is a usage error -- one line, exit 2 -- before the command runs: it
never reaches a socket (a port above 65535 raised OverflowError from ``bind``) or the wire (a
partition count beyond 32 bits raised ``struct.error``).  :func:`bound_numbers` gives every
``type=int`` option of a parser the range :data:`RANGES` names for it, else
:data:`DEFAULT_INT`, and every ``type=float`` option :data:`DEFAULT_SECONDS`; a command
module declares ``type=int`` or ``type=float`` and nothing else.  What depends on two
options (a port base and the brokers after it) is checked by the command, before it starts
anything (:func:`check_port_span`).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from dataclasses import dataclass

from impl.harness.cli.errors import UsageError

INT32_MAX = 2**31 - 1  # every count, id and bound goes on the wire as a signed 32-bit int
PORT_MAX = 65535
MAX_SECONDS = 10_000_000.0  # about 115 days: every duration, timeout and rate is below it


@dataclass(frozen=True)
class IntRange:
    """``type=`` for argparse: an int in ``[low, high]``."""

    low: int
    high: int = INT32_MAX
    __name__ = "int"  # argparse names the type in "invalid int value"

    def __call__(self, text: str) -> int:
        value = int(text)  # ValueError: argparse's "invalid int value: 'x'"
        if not self.low <= value <= self.high:
            raise argparse.ArgumentTypeError(f"{text} is out of range ({self.low} to {self.high})")
        return value


@dataclass(frozen=True)
class FloatRange:
    """``type=`` for argparse: a finite float in ``[low, high]``."""

    low: float
    high: float = MAX_SECONDS
    __name__ = "float"

    def __call__(self, text: str) -> float:
        value = float(text)
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise argparse.ArgumentTypeError(f"{text} is out of range ({self.low:g} to {self.high:g})")
        return value


PORT = IntRange(1, PORT_MAX)
DEFAULT_INT = IntRange(0)
DEFAULT_SECONDS = FloatRange(0.0)
RANGES: dict[str, IntRange] = {"--port-base": PORT, "--zk-port": PORT}
"""Options whose range is not :data:`DEFAULT_INT`, by their flag."""


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                yield from _parsers(sub)


def bound_numbers(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give every plain ``int`` / ``float`` option of ``parser`` (and its subcommands) its
    range.  Returns ``parser``."""
    for action in (a for p in _parsers(parser) for a in p._actions):
        if action.type is int:
            flag = next((s for s in action.option_strings if s in RANGES), None)
            action.type = RANGES[flag] if flag else DEFAULT_INT
        elif action.type is float:
            action.type = DEFAULT_SECONDS
    return parser


def numeric_options(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.ArgumentParser, argparse.Action]]:
    """Each (sub)parser with each of its bounded options: what a test feeds bad values."""
    yield from ((p, a) for p in _parsers(parser) for a in p._actions
                if isinstance(a.type, IntRange | FloatRange))


def check_port_span(base: int, count: int, what: str = "--port-base") -> None:
    """``count`` ports from ``base`` on must all be ports: one line, before anything starts."""
    if base + count - 1 > PORT_MAX:
        raise UsageError(f"{what} {base} leaves no room for {count} ports (the last would be "
                         f"{base + count - 1}, above {PORT_MAX})")


def endpoints(text: str) -> str:
    """``type=`` for ``--bootstrap``: HOST:PORT[,HOST:PORT...], each port a port; the text
    unchanged."""
    for part in text.split(","):
        host, sep, port = part.rpartition(":")
        if not sep or not port.isdigit() or not 1 <= int(port) <= PORT_MAX:
            raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port from 1 to "
                                             f"{PORT_MAX}, got {part!r}")
    return text
