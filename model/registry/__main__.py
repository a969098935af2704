"""``python -m model.registry --markdown``: print docs/actions.md, generated from the registry."""

from __future__ import annotations

import argparse
import sys

from model.registry.table import markdown


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.registry", description=__doc__)
    p.add_argument("--markdown", action="store_true", help="print the table of actions (docs/actions.md)")
    args = p.parse_args(argv)
    if not args.markdown:
        p.print_usage(sys.stderr)
        print("python -m model.registry: nothing to do (try --markdown)", file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
