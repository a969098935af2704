"""``epochal vectors``: write the rule-level test vectors a port runs (``model.export.vectors``).

One JSON file per rule family and an ``index.json``, in the versioned format documented in
``docs/vectors.md``.  The vectors are generated, not stored: run this to get them.
"""

from __future__ import annotations

import argparse
from typing import Any

from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import add_json_flag, print_json
from model.export.vectors import FORMAT, write

DESCRIPTION = (f"write the rule-level test vectors ({FORMAT}) computed by the model, one JSON "
               "file per rule family, for a port in any language to run (docs/vectors.md)")


def _command(args: argparse.Namespace) -> int:
    try:
        counts = write(args.out)
    except OSError as exc:
        raise UsageError(f"cannot write vectors to {args.out}: {exc.strerror or exc}") from None
    if args.json:
        return print_json(args, 0, out=str(args.out), format=FORMAT, cases=counts)
    width = max(len(name) for name in counts)
    for name, n in counts.items():
        print(f"{name:<{width}}  {n:5d} cases")
    print(f"{'total':<{width}}  {sum(counts.values()):5d} cases in {args.out} ({FORMAT})")
    return 0


def register(subparsers: Any) -> None:
    """Add ``epochal vectors`` to the ``epochal`` command."""
    p = subparsers.add_parser("vectors", help=DESCRIPTION, description=DESCRIPTION)
    p.add_argument("--out", required=True, metavar="DIR",
                   help="directory to write <family>.json and index.json into (made if missing)")
    add_json_flag(p, "the cases written per family")
    p.set_defaults(func=_command)
