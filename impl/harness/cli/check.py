"""``epochal check``: run the exhaustive checker from the command line.

Exit codes (``impl.harness.cli.exits``): 0 every property holds (state space exhausted), 1 a
violation was found, 2 bad arguments, 3 inconclusive -- the search was cut short by
``--max-states``, ``--max-depth``, ``--max-seconds``, ``--max-memory`` or Ctrl-C, and
reported how deep it got.

Without ``--config`` it checks the configurations expected to hold (``EXPECTED_TO_HOLD``)
and names the known-broken ones (``KNOWN_BROKEN``) as not checked, so that a plain
``epochal check`` in CI exits 0 while the protocol as fixed holds -- rather than 1 for ever
because the design's own loss is in the set.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import FOUND, HOLDS, INCONCLUSIVE, combined
from impl.harness.cli.html_output import add_html_flag, check_writable
from impl.harness.cli.html_output import write as write_html
from impl.harness.cli.output import add_json_flag
from impl.harness.cli.verdict import config_object, model_violation, print_results, result_entry
from model.config import NAMED, named
from model.registry import KNOBS, Knob
from properties.checkers.bfs import Result, SearchOptions, check
from properties.checkers.budget import machine_memory, size_text

EXPECTED_TO_HOLD = ("kip320", "zombie")
"""What a plain ``epochal check`` checks: the protocol as fixed (KIP-320's fenced fetching),
with crashes and with a GC pause; every property holds at their default bounds."""

KNOWN_BROKEN: dict[str, str] = {
    "design": "seed 000 as written loses a committed record (KAFKA-1211, 11 steps)",
    "unclean": "unclean leader election loses an acknowledged write (5 steps), by design",
    "kip101": "holds at two brokers; diverges after fast leader changes at --brokers 3 (17 steps)",
    "kip279": "holds at two brokers; diverges at --brokers 3 (20 steps, --native)",
}
"""What a plain ``epochal check`` leaves out, and why: each breaks (or is known to break at
larger bounds) -- the history the model rediscovers, not a regression.  ``--config NAME``
checks any of them."""

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
    p.add_argument("--config", action="append", choices=sorted(NAMED),
                   help=f"named configuration (repeatable; default: those expected to hold, {' and '.join(EXPECTED_TO_HOLD)}; "
                        f"the known-broken {', '.join(KNOWN_BROKEN)} are named as not checked)")
    add_bound_arguments(p, configuration_defaults())
    add_knob_arguments(p, KNOBS, configuration_defaults())
    add_unclean_argument(p)
    p.add_argument("--fencing", action=argparse.BooleanOptionalAction, default=None, help="controller-epoch and broker-epoch fencing of control requests (default on)")
    p.add_argument("--replication-factor", type=int, help="brokers in each partition's initial assignment (default: every broker)")
    p.add_argument("--topic-ids", action=argparse.BooleanOptionalAction, default=None, help="topic ids in the topic znode, LeaderAndISR, StopReplica and beside the log (default on); --no-topic-ids is the design's answer to its question 5")
    p.add_argument("--no-symmetry", action="store_true", help="do not reduce by broker symmetry")
    p.add_argument("--reduction", action="store_true", help="partial-order reduction of fetch bookkeeping (properties.checkers.reduction; counterexamples are then shortest in the reduced graph)")
    p.add_argument("--workers", type=_positive, default=1, help="worker processes for large frontiers (default 1; with --native, threads)")
    p.add_argument("--native", action="store_true", help="run the compiled search (properties/checkers/native/, built with the machine's C compiler on first use; held to the Python model by tests/properties/test_native.py): the same states, verdicts and counterexamples, x31 faster on one core in bench_checker.py")
    p.add_argument("--spark", action="store_true", help="breadth-first search on Spark: the compiled search's expansion inside mapInPandas, the level and the seen-set partitioned by fingerprint across executors and spilled to disk (local[*] by default, the submitter's master under spark-submit); the same counts and verdicts as --native")
    p.add_argument("--master", metavar="URL", help="with --spark: the Spark master (default local[*])")
    p.add_argument("--max-states", type=_positive, help="stop after this many distinct states (the result is then inconclusive)")
    p.add_argument("--max-depth", type=_positive, help="check every state within this many steps and stop there (the result is then inconclusive beyond that depth)")
    p.add_argument("--max-seconds", type=_positive_number, help="stop after this many seconds and report the depth checked (the result is then inconclusive beyond it)")
    p.add_argument("--max-memory", type=_positive_number, metavar="GB", default=default_max_memory(), help=f"stop when the search (workers included) uses this many GB, and report the depth checked (default: {round(MEMORY_SHARE * 100)}%% of this machine's memory, %(default)s GB)")
    add_json_flag(p, "the results")
    add_html_flag(p, "each configuration's result and counterexample")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


BOUNDS = ("brokers", "partitions", "records", "max_epoch", "min_insync")
"""The search bounds that limit no single action; each action's own bound is its knob
(``model.registry.KNOBS``, declared with the action)."""


BOUND_HELP = {
    "brokers": "brokers in the cluster",
    "partitions": "partitions of the one topic",
    "records": "client records produced, in all",
    "max_epoch": "highest leader epoch the controller may write",
    "min_insync": "min.insync.replicas for acks=all produce",
}
BOUND_FLAGS = {name: "--min-insync-replicas" if name == "min_insync" else "--" + name.replace("_", "-") for name in BOUNDS}
"""Each bound's flag: Kafka's name where Kafka has one (min.insync.replicas)."""
HIDDEN_ALIASES = {"min_insync": "--min-insync"}
"""Older spellings, still accepted and not shown in --help."""


def configuration_defaults(names: list[str] | None = None) -> dict[str, str]:
    """Each bound's default, as --help shows it: the one value the named configurations
    share, or each one's where they differ."""
    out = {}
    for bound in BOUNDS + tuple(k.field for k in KNOBS):
        values = {n: getattr(NAMED[n], bound) for n in names or sorted(NAMED)}
        if len(set(values.values())) == 1:
            out[bound] = f"default {next(iter(values.values()))}"
        else:
            out[bound] = "default " + ", ".join(f"{v} ({n})" for n, v in values.items())
    return out


def add_bound_arguments(p: argparse.ArgumentParser, defaults: dict[str, str]) -> None:
    """The search bounds every model command takes (``--brokers`` ... ``--min-insync-replicas``),
    each with what it bounds and its default (``defaults``: the command's own) in --help."""
    for name in BOUNDS:
        p.add_argument(BOUND_FLAGS[name], dest=name, type=int, metavar="N",
                       help=f"{BOUND_HELP[name]} ({defaults[name]})")
        if name in HIDDEN_ALIASES:
            p.add_argument(HIDDEN_ALIASES[name], dest=name, type=int, help=argparse.SUPPRESS)


def add_knob_arguments(p: argparse.ArgumentParser, knobs: tuple[Knob, ...], defaults: dict[str, str]) -> None:
    """One flag per knob (``--max-crashes``, ``--deletions`` ...): the bound on its action, as
    the action's section declares it, with its default (``defaults``: the command's own)."""
    for k in knobs:
        p.add_argument(k.flag, dest=k.field, type=int, metavar="N", help=f"{k.help} ({defaults[k.field]})")


def add_unclean_argument(p: argparse.ArgumentParser) -> None:
    """``--unclean-leader-election`` (Kafka's unclean.leader.election.enable), ``--no-...``
    to force it off; ``--unclean`` / ``--no-unclean`` are the older, hidden spellings."""
    p.add_argument("--unclean-leader-election", dest="unclean", action=argparse.BooleanOptionalAction, default=None,
                   help="allow unclean leader election (default: the configuration's own, on only for unclean)")
    p.add_argument("--unclean", dest="unclean", action=argparse.BooleanOptionalAction, default=None, help=argparse.SUPPRESS)


def bound_overrides(args: argparse.Namespace) -> dict[str, int | None]:
    """The bounds and knobs given on the command line (None: the configuration's own)."""
    return {name: getattr(args, name, None) for name in BOUNDS + tuple(k.field for k in KNOBS)}


def result_json(r: Result) -> dict[str, Any]:
    """One configuration's entry of ``results`` (the verdict object, ``impl.harness.cli.verdict``)."""
    return result_entry(config_object(r.config), exit_code(r), model_violation(r.violation),
                        symmetry=r.symmetry, reduction=r.reduction, native=r.native, holds=r.holds,
                        complete=r.complete, stopped_by=r.stopped_by, states=r.states, transitions=r.transitions,
                        depth=r.depth, checked_depth=r.checked_depth, peak_memory_bytes=r.peak_memory,
                        seconds=round(r.seconds, 3), states_per_second=round(r.states_per_second, 1))


def run(args: argparse.Namespace) -> int:
    names = args.config or list(EXPECTED_TO_HOLD)
    not_checked = [] if args.config else [{"config": n, "why": why} for n, why in KNOWN_BROKEN.items()]
    try:
        cfgs = [
            named(
                n,
                **bound_overrides(args),
                unclean=args.unclean,
                fence_controller_epoch=args.fencing,
                fence_broker_epoch=args.fencing,
                replication_factor=args.replication_factor,
                topic_ids=args.topic_ids,
            )
            for n in names
        ]
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    check_writable(args)
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
        search = _search_for(args, cfg)
        try:
            r = search(cfg, options)
        except Exception as exc:
            from properties.checkers.native import NativeUnavailable

            if (args.native or args.spark) and isinstance(exc, NativeUnavailable | RuntimeError):
                raise UsageError(str(exc)) from None
            raise
        results.append(r)
        if not args.json:
            print(summary(r))
            print()
        if r.stopped_by == "interrupted":
            break  # Ctrl-C ends the whole command, after reporting the search it cut short
    code = combined([exit_code(r) for r in results])
    write_html(args, lambda path: html_report(path, results, not_checked))
    if args.json:
        return print_results(args, code, [result_json(r) for r in results], not_checked=not_checked)
    if not_checked:
        print("not checked (known to break; check one with --config NAME):")
        for n in not_checked:
            print(f"  {n['config']}: {n['why']}")
    return code


def _search_for(args: argparse.Namespace, cfg: Any) -> Any:
    """The search ``args`` ask for: the Python checker, the compiled one, or the compiled
    expansion on Spark (``properties.checkers.distributed``; one session for every config)."""
    if not (args.native or args.spark):
        return check
    from properties.checkers.native import check_native, unsupported

    reason = unsupported(cfg)
    if reason is not None:
        flag = "--spark" if args.spark else "--native"
        raise UsageError(f"{flag}: {reason} (drop {flag} to use the Python search)")
    if not args.spark:
        return check_native
    from conformance.spark.session import spark_session
    from properties.checkers.distributed import check_spark

    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit's master stands
    session = spark_session(args.master or (None if submitted else "local[*]"), app="epochal-check")
    return lambda c, options: check_spark(c, session.sparkContext, options)


def html_report(path: Any, results: list[Result], not_checked: list[dict[str, str]] | None = None) -> Any:
    from html import escape

    from impl.harness.report import result_run, write_html_report

    runs = []
    for r in results:
        verdict = "a shortest counterexample" if r.violation is not None else (
            "every property holds in every reachable state" if r.complete else "inconclusive: " + summary(r).split("\n")[1])
        runs.append(result_run(r, note=f"{verdict} ({r.states:,} distinct states, depth {r.depth}, {r.seconds:.1f} s)"))
    names = ", ".join(r.config.name for r in results)
    preface = "".join(f"<p>not checked: <b>{escape(n['config'])}</b>: {escape(n['why'])}</p>"
                      for n in not_checked or [])
    return write_html_report(path, runs, title=f"epochal check: {names}",
                             subtitle=f"exit {combined([exit_code(r) for r in results])}", preface=preface)


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
