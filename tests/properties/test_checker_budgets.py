"""A search too large for the machine stops cleanly and says how deep it checked.

The Python checker's whole three-broker kip320 run takes more than half an hour (docs/checking.md, "Three-broker searches"): run without a
budget it grows until the kernel kills it, with nothing reported.  With ``max_seconds``,
``max_memory`` or Ctrl-C it stops, marks the result inconclusive, and reports
``checked_depth`` -- every run of at most that many steps has been tried -- which is what
a breadth-first search that did not finish can honestly claim.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import properties.checkers.bfs as checker
from impl.harness.cli.main import main
from model.config import named
from model.three_brokers import three_brokers
from properties.checkers.bfs import SearchOptions, check
from properties.checkers.budget import search_memory
from tests.ctrl_c import as_from_a_terminal
from tests.searched import searched


def _claim_holds(r) -> None:
    """``checked_depth`` is a true statement: a search bounded at that depth finds exactly
    states the stopped search had already counted, and no violation."""
    bounded = check(r.config, SearchOptions(reduction=r.reduction, max_depth=r.checked_depth)) if r.checked_depth else None
    if bounded is not None:
        assert bounded.violation is None and bounded.states <= r.states


def test_a_time_budget_stops_the_search_and_says_how_deep_every_run_was_tried():
    r = check(three_brokers("kip320"), SearchOptions(reduction=True, max_seconds=1.0))
    assert r.stopped_by == "max_seconds" and not r.complete and not r.holds and r.violation is None
    assert 5 <= r.checked_depth <= r.depth
    assert r.seconds < 10
    _claim_holds(r)


@pytest.mark.slow  # a three-broker search until 40 MB more: the slow suite
def test_a_memory_budget_stops_the_search_before_the_machine_runs_out():
    limit = search_memory() + 40 * 2**20  # 40 MB more than the test process holds now
    r = check(three_brokers("kip320"), SearchOptions(reduction=True, max_memory=limit, workers=2))
    assert r.stopped_by == "max_memory" and not r.complete and r.violation is None
    assert r.peak_memory >= limit
    assert r.checked_depth >= 1


def test_search_memory_counts_the_search_and_grows_with_what_it_holds():
    before = search_memory()
    held = [tuple(range(i, i + 20)) for i in range(200_000)]  # about 40 MB of tuples
    after = search_memory()
    assert before > 0 and after - before > 20 * 2**20
    del held


def test_ctrl_c_stops_the_search_keeps_what_it_found_and_restores_the_collector(monkeypatch):
    real = checker.successors
    calls = 0

    def interrupted_after_a_while(s, cfg):
        nonlocal calls
        calls += 1
        if calls == 3000:
            raise KeyboardInterrupt
        return real(s, cfg)

    monkeypatch.setattr(checker, "successors", interrupted_after_a_while)
    assert gc.isenabled()
    r = check(named("kip320"))
    assert r.stopped_by == "interrupted" and not r.complete and r.violation is None
    assert r.states > 1000 and r.checked_depth >= 1
    assert gc.isenabled()


def test_a_search_that_finishes_reports_its_whole_depth_as_checked():
    r = check(named("kip320", records=1), SearchOptions(max_seconds=600, max_memory=64 * 2**30))
    assert r.holds and r.stopped_by is None and r.checked_depth == r.depth
    design = searched(named("design"))
    assert design.violation is not None and design.checked_depth == len(design.violation.steps) - 1


def test_check_json_carries_the_budget_stop_and_the_checked_depth(capsys):
    assert main(["check", "--config", "kip320", "--brokers", "3", "--reduction", "--max-seconds", "1", "--quiet", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)["results"][0]
    assert data["stopped_by"] == "max_seconds" and data["complete"] is False and data["holds"] is False
    assert data["checked_depth"] >= 5 and data["peak_memory_bytes"] > 0


def test_check_prints_how_deep_it_got_when_the_time_budget_runs_out(capsys):
    assert main(["check", "--config", "kip320", "--brokers", "3", "--reduction", "--max-seconds", "1", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "INCONCLUSIVE: stopped by --max-seconds" in out and "every run that long was tried" in out


@pytest.mark.integration
@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")
def test_ctrl_c_on_the_command_line_reports_the_search_and_no_traceback():
    """Ctrl-C reaches the whole process group -- the search and its forked worker: the
    search reports how far it got and exits 3 (inconclusive), the worker dies quietly."""
    cmd = [sys.executable, "-m", "impl.harness.cli.main", "check", "--config", "kip320", "--brokers", "3", "--reduction", "--workers", "2"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline and "depth" not in line:  # searching (progress shown)
        line = p.stderr.readline()
    time.sleep(1.5)  # far enough for the frontier to be large: worker processes are running
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 3, err
    assert "INCONCLUSIVE: stopped by Ctrl-C" in out and "every run that long was tried" in out
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "interrupted: every run of up to" in err and "done:" not in err


@pytest.mark.integration
def test_bad_budgets_exit_2_with_one_line_and_no_traceback(capsys):
    """The process's exit code once, as a shell sees it; every other bad budget through
    ``main`` in this process (the same parser, the same code, no interpreter to start)."""
    p = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "check", "--config", "design", "--max-seconds", "0"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("epochal check: error: argument --max-seconds: ")
    for args in (["--max-seconds", "soon"], ["--max-memory", "-1"], ["--max-memory", "inf"], ["--max-memory", "nan"]):
        assert main(["check", "--config", "design", *args]) == 2, args
        err = capsys.readouterr().err
        assert "Traceback" not in err and "error" in err.lower()
        assert err.strip().splitlines()[-1].startswith(f"epochal check: error: argument {args[0]}: ")


@pytest.mark.slow  # four searches per worker count: the slow suite
@pytest.mark.parametrize("workers", [1, 2])
def test_packed_levels_change_nothing_but_the_memory_they_take(monkeypatch, workers):
    """Once memory runs short the levels are held pickled: the same states, transitions,
    order and shortest counterexample as with every level held as objects.  (One record is
    bound enough: the claim is about how levels are held, and chunks of 50 still make
    hundreds of packed chunks.)"""
    monkeypatch.setattr(checker, "PARALLEL_THRESHOLD", 10)
    monkeypatch.setattr(checker, "CHUNK", 50)
    plenty = 64 * 2**30
    for name in ("kip320", "design"):
        cfg = named(name, records=1)
        plain = check(cfg, SearchOptions(workers=workers))
        monkeypatch.setattr(checker, "PACK_SHARE", 0.0)  # short of memory from the start
        packed = check(cfg, SearchOptions(workers=workers, max_memory=plenty))
        monkeypatch.setattr(checker, "PACK_SHARE", 0.4)
        assert plain.packed_chunks == 0 and packed.packed_chunks > 10
        assert (packed.states, packed.transitions, packed.depth) == (plain.states, plain.transitions, plain.depth)
        if plain.violation is not None:
            assert [s for s, _ in packed.violation.steps] == [s for s, _ in plain.violation.steps]
        else:
            assert packed.holds and plain.holds


@pytest.mark.slow
def test_levels_are_packed_only_once_memory_runs_short():
    r = check(named("kip320", records=1), SearchOptions(max_memory=64 * 2**30))
    assert r.holds and r.packed_chunks == 0
