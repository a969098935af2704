"""``epochal check``: run the exhaustive checker from the command line.

Exit codes (``impl.cli.exits``): 0 every property holds (state space exhausted), 1 a
violation was found, 2 bad arguments, 3 inconclusive -- the search was cut short by
``--max-states``, ``--max-depth``, ``--max-seconds``, ``--max-memory`` or Ctrl-C, and
reported how deep it got.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from impl.cli.errors import UsageError
from impl.cli.exits import FOUND, HOLDS, INCONCLUSIVE, combined
from model.config import NAMED, named
from properties.checkers.bfs import Result, SearchOptions, check
from properties.checkers.budget import machine_memory, size_text

STOPPED_BY = {
    "max_states": "--max-states",
    "max_depth": "--max-depth",
    "max_seconds": "--max-seconds",
    "max_memory": "--max-memory",
    "interrupted": "Ctrl-C",
}
"""What cut a search short (``Result.stopped_by``), as the user knows it."""


def _positive(text: str) -> int:
    """argparse type: an integer of at least 1 (argparse turns the error into one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_number(text: str) -> float:
    """argparse type: a number above 0 (seconds, gigabytes)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
    return value


MEMORY_SHARE = 0.85
"""``--max-memory`` by default: this share of the machine's memory.  A search that grows
past what the machine has is killed by the kernel with nothing reported; one stopped here
still says how deep it checked."""


def default_max_memory() -> float | None:
    """The default ``--max-memory`` in GB (None where the machine's memory is unknown)."""
    total = machine_memory()
    return None if total is None else round(total * MEMORY_SHARE / 2**30, 1)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="exhaustively check a model configuration against every property",
        description="Breadth-first search of every reachable state; prints the shortest counterexample if a property breaks.",
    )
    p.add_argument("--config", action="append", choices=sorted(NAMED), help="named configuration (repeatable; default: design and kip320)")
    add_bound_arguments(p)
    p.add_argument("--unclean", action=argparse.BooleanOptionalAction, default=None, help="allow unclean leader election")
    p.add_argument("--fencing", action=argparse.BooleanOptionalAction, default=None, help="controller-epoch and broker-epoch fencing of control requests (default on)")
    p.add_argument("--replication-factor", type=int, help="brokers in each partition's initial assignment (default: every broker)")
    p.add_argument("--reassignments", type=int, help="partition reassignments (seed 000 F) an admin may ask for (default 0: none)")
    p.add_argument("--deletions", type=int, help="topic deletions (seed 000 B), each followed by re-creation under the same name with any assignment (default 0: none)")
    p.add_argument("--topic-ids", action=argparse.BooleanOptionalAction, default=None, help="topic ids in the topic znode, LeaderAndISR, StopReplica and beside the log (default on); --no-topic-ids is the design's answer to its question 5")
    p.add_argument("--no-symmetry", action="store_true", help="do not reduce by broker symmetry")
    p.add_argument("--reduction", action="store_true", help="partial-order reduction of fetch bookkeeping (properties.checkers.reduction; counterexamples are then shortest in the reduced graph)")
    p.add_argument("--workers", type=_positive, default=1, help="worker processes for large frontiers (default 1; with --native, threads)")
    p.add_argument("--native", action="store_true", help="run the compiled search (properties/checkers/native/search.c, built with the machine's C compiler on first use; held to the Python model by tests/model/test_native.py): the same states, verdicts and counterexamples, x31 faster on one core in bench_checker.py")
    p.add_argument("--max-states", type=_positive, help="stop after this many distinct states (the result is then inconclusive)")
    p.add_argument("--max-depth", type=_positive, help="check every state within this many steps and stop there (the result is then inconclusive beyond that depth)")
    p.add_argument("--max-seconds", type=_positive_number, help="stop after this many seconds and report the depth checked (the result is then inconclusive beyond it)")
    p.add_argument("--max-memory", type=_positive_number, metavar="GB", default=default_max_memory(), help=f"stop when the search (workers included) uses this many GB, and report the depth checked (default: {round(MEMORY_SHARE * 100)}%% of this machine's memory, %(default)s GB)")
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


BOUNDS = ("brokers", "partitions", "records", "max_epoch", "max_crashes", "max_pauses", "min_insync")


def add_bound_arguments(p: argparse.ArgumentParser, defaults: dict[str, str] | None = None) -> None:
    """The search bounds every model command takes (``--brokers`` ... ``--min-insync``);
    ``defaults`` only documents a command's own defaults in the help."""
    for name in BOUNDS:
        p.add_argument("--" + name.replace("_", "-"), type=int, help=(defaults or {}).get(name))


def bound_overrides(args: argparse.Namespace) -> dict[str, int | None]:
    return {name: getattr(args, name) for name in BOUNDS}


def _plain(x: Any) -> Any:
    if hasattr(x, "_asdict"):
        return {k: _plain(v) for k, v in x._asdict().items()}
    if isinstance(x, tuple | list):
        return [_plain(v) for v in x]
    return x


def result_json(r: Result) -> dict[str, Any]:
    out: dict[str, Any] = {
        "config": {"name": r.config.name, **{k: v for k, v in vars(r.config).items() if k != "name"}},
        "symmetry": r.symmetry,
        "reduction": r.reduction,
        "native": r.native,
        "holds": r.holds,
        "complete": r.complete,
        "stopped_by": r.stopped_by,
        "states": r.states,
        "transitions": r.transitions,
        "depth": r.depth,
        "checked_depth": r.checked_depth,
        "peak_memory_bytes": r.peak_memory,
        "seconds": round(r.seconds, 3),
        "states_per_second": round(r.states_per_second, 1),
        "violation": None,
    }
    if r.violation is not None:
        v = r.violation
        out["violation"] = {
            "property": v.property,
            "message": v.message,
            "label": v.label,
            "also": [{"property": n, "message": m} for n, m in v.also],
            "steps": [{"n": i, "action": s.action, "args": _plain(s.args), "description": d} for i, (s, d) in enumerate(v.steps, 1)],
        }
    return out


def run(args: argparse.Namespace) -> int:
    names = args.config or ["design", "kip320"]
    try:
        cfgs = [
            named(
                n,
                **bound_overrides(args),
                unclean=args.unclean,
                fence_controller_epoch=args.fencing,
                fence_broker_epoch=args.fencing,
                replication_factor=args.replication_factor,
                reassignments=args.reassignments,
                deletions=args.deletions,
                topic_ids=args.topic_ids,
            )
            for n in names
        ]
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    progress = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    try:
        options = SearchOptions(
            symmetry=not args.no_symmetry,
            reduction=args.reduction,
            workers=args.workers,
            max_states=args.max_states,
            max_depth=args.max_depth,
            max_seconds=args.max_seconds,
            max_memory=None if args.max_memory is None else int(args.max_memory * 2**30),
            progress=progress,
        )
    except ValueError as exc:  # a budget too small to run (--max-memory 1e-12)
        raise UsageError(str(exc)) from None
    results = []
    for cfg in cfgs:
        if not args.quiet:
            print(f"checking {cfg.describe()}", file=sys.stderr, flush=True)
        search = check
        if args.native:
            from properties.checkers.native import NativeUnavailable, check_native, unsupported

            reason = unsupported(cfg)
            if reason is not None:
                raise UsageError(f"--native: {reason} (drop --native to use the Python search)")
            search = check_native
        try:
            r = search(cfg, options)
        except Exception as exc:
            if args.native and isinstance(exc, NativeUnavailable | RuntimeError):
                raise UsageError(str(exc)) from None
            raise
        results.append(r)
        if not args.json:
            print(summary(r))
            print()
        if r.stopped_by == "interrupted":
            break  # Ctrl-C ends the whole command, after reporting the search it cut short
    if args.json:
        print(json.dumps([result_json(r) for r in results] if len(results) > 1 else result_json(results[0]), indent=2))
    return combined([exit_code(r) for r in results])


def exit_code(r: Result) -> int:
    """A search's exit code: a violation is found even by a search cut short (breadth-first,
    it is a shortest one); a search cut short without one is inconclusive."""
    if r.violation is not None:
        return FOUND
    return HOLDS if r.complete else INCONCLUSIVE


def summary(r: Result) -> str:
    head = f"== {r.config.describe()}"
    stats = f"{r.states:,} distinct states, {r.transitions:,} transitions, depth {r.depth}, {r.seconds:.1f} s ({r.states_per_second:,.0f} states/s){'' if r.symmetry else ', no symmetry reduction'}{', partial-order reduction' if r.reduction else ''}{', native search' if r.native else ''}"
    if r.violation is not None:
        return f"{head}\n{r.violation.text()}\n\n{stats}"
    if r.stopped_by == "max_depth":
        return f"{head}\nINCONCLUSIVE: no violation within {r.depth} steps (stopped at --max-depth; deeper states not explored)\n{stats}"
    if not r.complete:
        memory = f", {size_text(r.peak_memory)} used at most" if r.peak_memory else ""
        return (
            f"{head}\nINCONCLUSIVE: stopped by {STOPPED_BY[r.stopped_by or 'max_states']}{memory}; "
            f"no violation within {r.checked_depth} steps (every run that long was tried), "
            f"none found so far deeper\n{stats}"
        )
    return f"{head}\nOK: every property holds in every reachable state\n{stats}"
