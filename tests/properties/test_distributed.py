"""The search on Spark (``properties.checkers.distributed``) is the compiled search spread
over executors: on every configuration both finish it reaches the same distinct states,
takes the same transitions and stops at the same depth; a violation is found at the same
depth and its counterexample replays through the Python model; a budget makes it
inconclusive as it does the compiled search."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from model.config import named
from properties.checkers.bfs import SearchOptions
from properties.checkers.distributed import check_spark
from properties.checkers.native import check_native

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SMALL = {"records": 1, "max_crashes": 1}
"""Bounds at which a whole space is 1,457 states in 21 levels: Spark's jobs per level, not
the states, are what a test here pays for (about a second a level)."""
SMALLER = {"records": 1, "max_crashes": 0}
"""37 states in 9 levels, for the default suite."""


@pytest.fixture
def sc(spark: Any) -> Any:
    """The context of the process's one Spark session (tests/conftest.py)."""
    return spark.sparkContext


def _counts(r: Any) -> tuple:
    return r.states, r.transitions, r.depth, r.checked_depth, r.complete, r.stopped_by


@pytest.mark.parametrize(("bounds", "reduction"), [
    (SMALLER, True),
    pytest.param(SMALL, False, marks=pytest.mark.slow),
])
def test_spark_search_reaches_the_compiled_searchs_states(sc: Any, bounds: dict, reduction: bool) -> None:
    cfg = named("kip320", **bounds)
    options = SearchOptions(reduction=reduction)
    native, spread = check_native(cfg, options), check_spark(cfg, sc, options, partitions=3)
    assert native.complete and native.violation is None
    assert _counts(spread) == _counts(native)


def test_spark_search_finds_the_designs_loss_at_the_same_depth_and_it_replays(sc: Any) -> None:
    cfg = named("design")
    native, spread = check_native(cfg), check_spark(cfg, sc)
    assert spread.violation is not None and native.violation is not None
    assert spread.violation.property == native.violation.property == "committed_durable"
    assert spread.depth == native.depth == len(spread.violation.steps)
    # replayed through the Python model: each state is the model's successor of the one before
    assert len(spread.violation.states) == len(spread.violation.steps) + 1


def test_spark_search_stops_inconclusive_at_max_depth_with_the_compiled_searchs_counts(sc: Any) -> None:
    cfg = named("kip320")
    options = SearchOptions(max_depth=4)
    native, spread = check_native(cfg, options), check_spark(cfg, sc, options)
    assert not spread.complete and spread.stopped_by == "max_depth" and spread.checked_depth == 4
    assert _counts(spread) == _counts(native)





@pytest.mark.slow
def test_spark_search_gives_kip320s_pinned_count_at_two_brokers(sc: Any) -> None:
    from pinned import pinned

    r = check_spark(named("kip320"), sc)
    assert r.complete and r.violation is None
    assert r.states == pinned("kip320", "default", "states")


@pytest.mark.slow  # spark-submit's JVM and a 12-level search: about 30 s
def test_check_spark_under_spark_submit_prints_the_native_searchs_verdict(tmp_path: Any) -> None:
    """The command's own file submitted from another directory, as docs/checking.md says:
    its stdout is one verdict object, the violation the compiled search finds at the same
    depth."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    bare = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME") and not k.startswith("PYSPARK_")}
    done = subprocess.run([str(Path(sys.executable).with_name("spark-submit")), "--master", "local[2]",
                           str(root / "impl" / "harness" / "cli" / "main.py"), "check", "--spark", "--config",
                           "design", "--json", "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                          env={**bare, "PYSPARK_PYTHON": sys.executable}, timeout=600)
    submitted = json.loads(done.stdout)
    assert done.returncode == submitted["exit_code"] == 1, done.stderr[-2000:]
    native = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "check", "--native", "--config",
                             "design", "--json", "--quiet"], cwd=root, capture_output=True, text=True, timeout=300)
    expected = json.loads(native.stdout)
    assert submitted["config"] == expected["config"]
    assert submitted["violation"]["property"] == expected["violation"]["property"]
    assert len(submitted["violation"]["steps"]) == len(expected["violation"]["steps"])
