"""The breadth-first search on Spark: the compiled search's expansion, its level and its
seen-set spread over executors.

One machine's compiled search (``properties.checkers.native``) holds every state it has seen
in one table of fingerprints and each level in one file; past one machine's memory and cores
it stops.  Here the same search runs level by level over Spark:

* **The frontier** is an RDD of ``(fingerprint, key)`` -- the key being the encoding the
  compiled search stores (``native.key_bytes``: the canonical representative under symmetry,
  the normal form under reduction).
* **The expansion** is the compiled search's own (``epochal-search expand``, ``search.c``'s
  ``expand_task`` run on one state at a time with no seen-set), inside ``mapPartitions``:
  one process per partition, fed the partition's keys on stdin.  It answers, per state, the
  transitions taken, the fingerprint of a successor that broke a property (transition or
  state), and the candidates -- so the rules, the reduction, the canonical form and the
  properties are exactly the single-machine search's, not a third copy.
* **The seen-set** is an RDD of ``fingerprint -> parent fingerprint``, hash-partitioned like
  the candidates, so removing what was seen (``subtractByKey``) and adding the new level
  (``union``) move no data between executors beyond the candidates' shuffle.  Both are kept
  ``MEMORY_AND_DISK`` and their lineage is cut every level, so they spill to disk rather than
  grow past an executor's memory or a driver's stack.
* **A counterexample** is rebuilt from the parent fingerprints (one ``lookup`` per level,
  each reading one partition) and replayed through the Python model
  (``properties.checkers.bfs.replay_path``), as the compiled search's is.

A candidate reached from several parents in one level keeps the smallest parent
fingerprint, and of several violations in one level the smallest (parent, successor) pair is
reported, so the result does not depend on how Spark partitions the work.  The counts --
distinct states, transitions, depth -- are the compiled search's on every configuration both
finish (``tests/properties/test_distributed.py``); a violation is found at the same depth,
so its counterexample is as short, though it may be another of the same length.

The executors run the compiled binary built from this package's C sources
(``native.binary()``, compiled on first use on each machine), so a cluster's workers need
the project installed and a C compiler, as ``check --native`` does on one machine.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from model.config import Config
from model.state import initial
from properties.checkers.bfs import DEFAULT_SEARCH, Result, SearchOptions, Violation, replay_path
from properties.checkers.native import (
    NativeUnavailable,
    binary,
    config_args,
    fingerprint,
    key_bytes,
    unsupported,
)
from properties.safety import first_violation

Candidate = tuple[int, tuple[int, bytes]]  # (fingerprint, (parent fingerprint, key))
NO_PARENT = -1


@dataclass(frozen=True)
class Expanded:
    """What one executor's process said of one partition of a level."""

    transitions: int
    bad: tuple[int, int] | None  # (parent fingerprint, fingerprint of the successor that broke a property)
    candidates: list[Candidate]


def _signed(fp: int) -> int:
    """A 64-bit fingerprint as Spark's long (hash partitioning of Python ints is by value)."""
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def _by_fingerprint(fp: int) -> int:
    """The partition function of every keyed step: a fingerprint is already a uniform hash
    (and Python's own hash of an int is not seeded, so no PYTHONHASHSEED is needed)."""
    return fp


def _unsigned(fp: int) -> int:
    return fp + (1 << 64) if fp < 0 else fp


def expand_partition(exe: str, args: list[str], states: Iterable[tuple[int, bytes]]) -> Expanded:
    """Expand ``states`` (fingerprint, key) with one run of the compiled ``expand`` mode."""
    states = list(states)
    if not states:
        return Expanded(0, None, [])
    stdin = "".join(key.hex() + "\n" for _, key in states)
    done = subprocess.run([exe, "expand", *args], input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the compiled expansion failed: {done.stderr.strip() or f'exit {done.returncode}'}")
    lines = done.stdout.splitlines()
    if len(lines) != len(states):
        raise RuntimeError(f"the compiled expansion answered {len(lines)} of {len(states)} states")
    transitions, bad, out = 0, None, []
    for (parent, _), line in zip(states, lines, strict=True):
        taken, broke, *found = line.split(" ")
        transitions += int(taken)
        if broke != "-":
            pair = (_unsigned(parent), int(broke, 16))
            bad = pair if bad is None else min(bad, pair)
        for item in found:
            fp, key = item.split(":")
            out.append((_signed(int(fp, 16)), (parent, bytes.fromhex(key))))
    return Expanded(transitions, bad, out)


def check_spark(cfg: Config, sc, options: SearchOptions = DEFAULT_SEARCH, partitions: int | None = None) -> Result:  # noqa: ANN001 - pyspark is optional
    """``properties.checkers.bfs.check`` on Spark (``sc``: a SparkContext): the same options
    (``workers`` aside: Spark's parallelism) and the same ``Result``."""
    reason = unsupported(cfg)
    if reason is not None:
        raise NativeUnavailable(reason)
    from pyspark import StorageLevel

    started = time.perf_counter()
    symmetry, reduction = options.symmetry, options.reduction
    exe, args = str(binary()), config_args(cfg, symmetry, reduction)
    slices = partitions or max(2, sc.defaultParallelism)
    root = initial(cfg)
    root_key = key_bytes(root, cfg, symmetry, reduction)
    root_fp = _signed(fingerprint(root_key))
    bad_root = first_violation(None, root)
    if bad_root is not None:
        violation = Violation(bad_root[0], bad_root[1], [], [root])
        return Result(cfg, symmetry, 1, 0, 0, time.perf_counter() - started, violation, True, 1, reduction, native=True)

    def expand(states: Iterator[tuple[int, bytes]]) -> Iterator[tuple[str, object]]:
        done = expand_partition(exe, args, states)
        yield ("transitions", done.transitions)
        if done.bad is not None:
            yield ("bad", done.bad)
        for candidate in done.candidates:
            yield ("candidate", candidate)

    keep = StorageLevel.MEMORY_AND_DISK
    seen = sc.parallelize([(root_fp, NO_PARENT)], 1).partitionBy(slices, _by_fingerprint).persist(keep)
    frontier = sc.parallelize([(root_fp, root_key)], 1).persist(keep)
    states, transitions, depth, frontier_size = 1, 0, 0, 1
    held = frontier  # the level being expanded, unpersisted once the next one is held
    previous = None  # the seen-set before the last level, unpersisted once its successor is held
    bad: tuple[int, int] | None = None
    stopped_by: str | None = None
    try:
        while frontier_size:
            out = frontier.mapPartitions(expand).persist(keep)
            told = out.filter(lambda r: r[0] != "candidate").collect()  # a line or two a partition
            transitions += sum(n for kind, n in told if kind == "transitions")
            bads = [pair for kind, pair in told if kind == "bad"]
            if bads:
                bad = min(bads)
                out.unpersist()
                break
            fresh = (out.filter(lambda r: r[0] == "candidate").map(lambda r: r[1])
                     .reduceByKey(min, slices, _by_fingerprint).subtractByKey(seen, slices).persist(keep))
            fresh.localCheckpoint()
            added = fresh.count()
            if previous is not None:  # its successor is held now
                previous.unpersist()
            out.unpersist()
            held.unpersist()
            held = fresh
            # materialized by the next level's subtraction, which reads it first
            grown = seen.union(fresh.mapValues(lambda v: v[0])).partitionBy(slices, _by_fingerprint).persist(keep)
            grown.localCheckpoint()
            previous, seen, states = seen, grown, states + added
            frontier = fresh.mapValues(lambda v: v[1])
            frontier_size = added
            if added:
                depth += 1
            _report(options.progress, depth, states, added, started)
            if added and options.max_states is not None and states >= options.max_states:
                stopped_by = "max_states"
            elif added and options.max_depth is not None and depth >= options.max_depth:
                stopped_by = "max_depth"
            elif options.max_seconds is not None and time.perf_counter() - started >= options.max_seconds:
                stopped_by = "max_seconds"
            if stopped_by:
                break
    except KeyboardInterrupt:
        stopped_by = "interrupted"
    violation = None
    if bad is not None:
        violation = _counterexample(cfg, seen, bad, symmetry, reduction)
    seconds = time.perf_counter() - started
    found_depth = depth + (1 if bad is not None else 0)
    return Result(cfg, symmetry, states, transitions, found_depth, seconds, violation, stopped_by is None, 1,
                  reduction, stopped_by, depth, 0, native=True)


def _report(progress: Callable[[str], None] | None, depth: int, states: int, added: int, started: float) -> None:
    if progress is not None:
        progress(f"  level {depth:3d} done  {added:,} new states, {states:,} in all, "
                 f"{time.perf_counter() - started:.0f} s")


def _counterexample(cfg: Config, seen, bad: tuple[int, int], symmetry: bool, reduction: bool) -> Violation:  # noqa: ANN001
    """The path to the violating state's parent, read back through the parent fingerprints
    (one partition's lookup a level), replayed through the Python model."""
    parent, target = bad
    chain = [parent]
    while True:
        (up,) = seen.lookup(_signed(chain[-1]))
        if up == NO_PARENT:
            break
        chain.append(_unsigned(up))
    chain.reverse()
    return replay_path(cfg, chain[1:], target, lambda y: fingerprint(key_bytes(y, cfg, symmetry, reduction)))
