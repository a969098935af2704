"""Grouping: which task judges which files, so that every run is judged whole by one task.

A run is the unit of distribution because its causal order needs all its events.  For local
files the driver deals out groups of files guessed from their names (``plan_local``) and
judges again, whole, any run the guess split between tasks (``split_runs``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from conformance.spark.rows import JUDGED_COLUMNS, ddl
from conformance.spark.tasks import judge_file_groups
from conformance.spark.verdict import Judge

# The judge stage runs two tasks per core, or one per this many input files if that is more.
# Each task costs a Python worker round trip (~40-60 ms here): on the 1M-event benchmark
# corpus (20,880 files) one task per 500 files (41 tasks) took 8.6-8.9 s, 4 tasks 7.1-8.0 s.
FILES_PER_TASK = 20_000


GROUP_FILES = 64
"""Files of one directory dealt out together (``_guess_groups``); larger directories are cut
into pieces of about this many files, between names with different stems."""


def _guess_groups(uris: list[str]) -> list[list[str]]:
    """Files that probably hold the same runs, guessed from their names alone (no I/O): a
    directory's files together -- recorders write one directory per run, one file per node
    -- and a large directory cut into pieces of about ``GROUP_FILES`` files, never between
    two names with the same stem (``run-7.1.jsonl``, ``run-7.2.jsonl``).  Only a guess:
    a run it splits costs a second pass (``split_runs``), never a wrong verdict."""
    from pathlib import PurePosixPath

    by_dir: dict[str, list[str]] = {}
    for uri in uris:
        by_dir.setdefault(str(PurePosixPath(uri).parent), []).append(uri)
    groups: list[list[str]] = []
    for files in by_dir.values():
        files.sort()
        piece: list[str] = []
        stem = None
        for uri in files:
            this = PurePosixPath(uri).name.split(".", 1)[0]
            if len(piece) >= GROUP_FILES and this != stem:
                groups.append(piece)
                piece = []
            piece.append(uri)
            stem = this
        groups.append(piece)
    return groups


def _file_groups(pairs: Sequence[tuple[str, str | None]]) -> list[list[str]]:
    """Files that share a run, transitively, form one group (union-find): a run's events
    all lie in one group's files, so a group can be decoded and judged on its own."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first: dict[str, str] = {}
    for uri, run in pairs:
        find(uri)
        if run is not None:
            other = first.setdefault(run, uri)
            a, b = find(uri), find(other)
            if a != b:
                parent[a] = b
    groups: dict[str, list[str]] = {}
    for uri in parent:
        groups.setdefault(find(uri), []).append(uri)
    return [sorted(g) for g in groups.values()]


def _deal(spark, groups: list[list[str]], tasks: int, judge: str | Judge | None, config: str,
          only: frozenset[str] | None = None):
    """Deal file groups out to ``tasks`` tasks by size (largest first, each to the least
    loaded) and judge them (``judge_file_groups``).  The input is ``spark.range(tasks)`` --
    one task id per task, made by the JVM -- and the groups travel inside the executor
    function (PySpark broadcasts a large one), so no Python stage feeds the judge and Spark
    moves only file names: building the input from a Python RDD cost a Python worker round
    trip per task, ~50 ms each (41 tasks: 10.3-10.9 s for the 1M-event benchmark corpus,
    8.6-8.9 s with the task ids from the JVM)."""
    tasks = max(1, min(tasks, len(groups)))
    load = [0] * tasks
    dealt: list[list[list[str]]] = [[] for _ in range(tasks)]
    for files in sorted(groups, key=len, reverse=True):
        task = min(range(tasks), key=load.__getitem__)
        load[task] += len(files)
        dealt[task].append(files)
    texts = [json.dumps(g) for g in dealt]
    return spark.range(0, tasks, 1, tasks).mapInArrow(judge_file_groups(judge, config, texts, only), ddl(JUDGED_COLUMNS))


def plan_local(spark, uris: list[str], judge: str | Judge | None, config: str, tasks: int):
    """Local files, read by the executors in one pass with no shuffle of records.

    A run must be judged whole, by one task, but which files hold which runs is only known
    by reading them.  So the driver guesses from the file names (``_guess_groups``) and
    deals each guessed group to one task; each task reads, validates and judges its files
    and says which runs it saw in which files ("seen" rows).  ``split_runs`` then finds
    any run the guess dealt to two tasks, drops those verdicts and judges those runs again
    from all their files (``_file_groups``).  Exact whatever the guesses; on the recorded
    traces and the benchmark corpus nothing is judged twice.  (Spark's ``binaryFile``
    source would cost ~0.4 ms of JVM CPU per file; an earlier plan listed every file's runs
    in a first Spark pass, a third of the job's time.)"""
    return _deal(spark, _guess_groups(uris), tasks, judge, config)


def split_runs(spark, facts: dict[str, list[Any]], judge: str | Judge | None, config: str, tasks: int):
    """Second pass of ``plan_local``: (runs judged in pieces, their rows judged again whole)
    -- the runs whose files were dealt to more than one task, from the "seen" rows of
    ``facts``; None if there are none."""
    tasks_of: dict[str, set[int]] = {}
    files_of: dict[str, list[str]] = {}
    for row, run, task, file in zip(facts["row"], facts["run"], facts["task"], facts["file"], strict=True):
        if row == "seen":
            tasks_of.setdefault(run, set()).add(task)
            files_of.setdefault(run, []).append(file)
    only = frozenset(run for run, ts in tasks_of.items() if len(ts) > 1)
    if not only:
        return None
    pairs = [(f, r) for r in sorted(only) for f in files_of[r]]
    return only, _deal(spark, _file_groups(pairs), tasks, judge, config, only)
