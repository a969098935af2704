"""``--html FILE``: one self-contained report page (``impl.harness.report``), the same flag on
``check``, ``fuzz``, ``conform`` and ``drive``.  The page is written after the command's own
output; a file that cannot be written is a one-line usage error (exit 2)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from impl.harness.cli.errors import UsageError


def add_html_flag(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--html", metavar="FILE",
                   help=f"also write {what} as one self-contained HTML page (space-time diagram, state after "
                        "each step; no network needed to open it; docs/reports.md)")


def check_writable(args: argparse.Namespace) -> None:
    """Refuse an unusable ``--html`` path before the command spends its time."""
    path = getattr(args, "html", None)
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"--html {path}: is a directory, give a file name")


def write(args: argparse.Namespace, writer: Callable[[Path], Path]) -> None:
    path = getattr(args, "html", None)
    if path is None:
        return
    try:
        written = writer(Path(path))
    except OSError as exc:
        raise UsageError(f"--html {path}: {exc.strerror or exc}") from None
    print(f"report written to {written}", file=sys.stderr)
