"""The breadth-first search on Spark: the compiled search's expansion, its level and its
seen-set spread over executors.

One machine's compiled search (``properties.checkers.native``) holds every state it has seen
in one table of fingerprints and each level in one file; past one machine's memory and cores
it stops.  Here the same search runs level by level over Spark:

* **The frontier** is a DataFrame of ``(fp, key)`` -- the fingerprint and the encoding the
  compiled search stores (``native.key_bytes``: the canonical representative under symmetry,
  the normal form under reduction).
* **The expansion** is the compiled search's own (``epochal-search expand``, ``search.c``'s
  ``expand_task`` run on one state at a time with no seen-set), inside ``mapInPandas``:
  one process per Arrow batch of the level, fed the batch's keys on stdin.  It answers, per
  state, the transitions taken, the fingerprint of a successor that broke a property
  (transition or state), and the candidates -- so the rules, the reduction, the canonical
  form and the properties are exactly the single-machine search's, not a third copy.
* **The seen-set** is a DataFrame of ``fp -> parent fp``, hash-partitioned by fingerprint
  into as many partitions as every keyed step uses, so the anti-join that drops what was seen
  reads it in place: only the level's candidates are shuffled to meet it, and the rows move
  through the JVM's shuffle, not through Python.  The seen-set and each level are
  checkpointed locally every level (``MEMORY_AND_DISK``: they spill to disk rather than grow
  past an executor's memory, and their lineage does not grow with the depth).
* **A counterexample** is rebuilt from the parent fingerprints (one filter a level) and
  replayed through the Python model (``properties.checkers.bfs.replay_path``), as the
  compiled search's is.

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
from typing import Any

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


EXPANDED_SCHEMA = "fp long, parent long, key binary, transitions long, bad_parent long, bad_fp long"
"""One row per candidate (``key`` set), and one per batch that says how many transitions the
batch took and the violation it met, if any (``key`` null)."""


def _expand_batches(exe: str, args: list[str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInPandas`` function: each Arrow batch of the level, expanded by one run of
    the compiled binary."""

    def expand(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        for batch in batches:
            done = expand_partition(exe, args, zip(batch["fp"].tolist(), batch["key"].tolist(), strict=True))
            fps = [fp for fp, _ in done.candidates]
            parents = [parent for _, (parent, _) in done.candidates]
            keys: list[bytes | None] = [key for _, (_, key) in done.candidates]
            bad_parent, bad_fp = (None, None) if done.bad is None else (_signed(done.bad[0]), _signed(done.bad[1]))
            yield pd.DataFrame({
                "fp": pd.array(fps + [0], dtype="int64"), "parent": pd.array(parents + [0], dtype="int64"),
                "key": keys + [None],
                "transitions": pd.array([0] * len(fps) + [done.transitions], dtype="int64"),
                "bad_parent": pd.array([None] * len(fps) + [bad_parent], dtype="Int64"),
                "bad_fp": pd.array([None] * len(fps) + [bad_fp], dtype="Int64")})

    return expand


def check_spark(cfg: Config, sc, options: SearchOptions = DEFAULT_SEARCH, partitions: int | None = None) -> Result:  # noqa: ANN001 - pyspark is optional
    """``properties.checkers.bfs.check`` on Spark (``sc``: a SparkContext): the same options
    (``workers`` aside: Spark's parallelism) and the same ``Result``."""
    reason = unsupported(cfg)
    if reason is not None:
        raise NativeUnavailable(reason)
    from pyspark import StorageLevel
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    started = time.perf_counter()
    spark = SparkSession.builder.getOrCreate()  # the session over ``sc``
    symmetry, reduction = options.symmetry, options.reduction
    exe, args = str(binary(cfg)), config_args(cfg, symmetry, reduction)
    slices = partitions or max(2, sc.defaultParallelism)
    root = initial(cfg)
    root_key = key_bytes(root, cfg, symmetry, reduction)
    root_fp = _signed(fingerprint(root_key))
    bad_root = first_violation(None, root)
    if bad_root is not None:
        violation = Violation(bad_root[0], bad_root[1], [], [root])
        return Result(cfg, symmetry, 1, 0, 0, time.perf_counter() - started, violation, True, 1, reduction, native=True)

    keep = StorageLevel.MEMORY_AND_DISK
    expand = _expand_batches(exe, args)
    # every keyed step partitions by fingerprint into ``slices`` partitions, so the seen-set
    # is read in place by the anti-join rather than moved
    saved = {k: spark.conf.get(k, None) for k in _SEARCH_SQL_CONF}
    for k, v in _SEARCH_SQL_CONF.items():
        spark.conf.set(k, str(slices) if v is None else v)
    seen = (spark.createDataFrame([(root_fp, NO_PARENT)], "fp long, parent long")
            .repartition(slices, "fp").persist(keep))
    frontier = spark.createDataFrame([(root_fp, root_key)], "fp long, key binary").persist(keep)
    states, transitions, depth, frontier_size = 1, 0, 0, 1
    bad: tuple[int, int] | None = None
    stopped_by: str | None = None
    try:
        while frontier_size:
            out = frontier.repartition(slices).mapInPandas(expand, EXPANDED_SCHEMA).persist(keep)
            told = out.where(F.col("key").isNull()).agg(
                F.sum("transitions").alias("n"),
                F.min(F.when(F.col("bad_parent").isNotNull(),
                             F.struct(F.col("bad_parent"), F.col("bad_fp")))).alias("bad")).first()
            transitions += told["n"] or 0
            if told["bad"] is not None:
                bad = (_unsigned(told["bad"]["bad_parent"]), _unsigned(told["bad"]["bad_fp"]))
                out.unpersist()
                break
            fresh = (out.where(F.col("key").isNotNull())
                     .groupBy("fp").agg(F.min(F.struct("parent", "key")).alias("first"))
                     .join(seen, "fp", "left_anti")
                     .select("fp", F.col("first.parent").alias("parent"), F.col("first.key").alias("key"))
                     .localCheckpoint())
            added = fresh.count()
            out.unpersist()
            frontier.unpersist()
            grown = seen.unionByName(fresh.select("fp", "parent")).repartition(slices, "fp").localCheckpoint()
            seen.unpersist()
            seen, states = grown, states + added
            frontier = fresh.select("fp", "key")
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
        violation = None
        if bad is not None:
            violation = _counterexample(cfg, seen, bad, symmetry, reduction)
    except KeyboardInterrupt:
        stopped_by, violation = "interrupted", None
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    seconds = time.perf_counter() - started
    found_depth = depth + (1 if bad is not None else 0)
    return Result(cfg, symmetry, states, transitions, found_depth, seconds, violation, stopped_by is None, 1,
                  reduction, stopped_by, depth, 0, native=True)


_SEARCH_SQL_CONF: dict[str, str | None] = {
    "spark.sql.shuffle.partitions": None,  # the search's slices
    # adaptive execution would coalesce a level's shuffle into fewer partitions than the
    # seen-set has, and the anti-join would then move the seen-set to match
    "spark.sql.adaptive.enabled": "false",
}
"""SQL settings in force while the search runs (the caller's values are restored after)."""


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
        up = seen.where(seen.fp == _signed(chain[-1])).first()["parent"]
        if up == NO_PARENT:
            break
        chain.append(_unsigned(up))
    chain.reverse()
    return replay_path(cfg, chain[1:], target, lambda y: fingerprint(key_bytes(y, cfg, symmetry, reduction)))
