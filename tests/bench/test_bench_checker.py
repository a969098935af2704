"""The checker benchmark runs and prints what it promises (its figures are docs/benchmarks.md's)."""

from __future__ import annotations

import pytest

from bench.bench_checker import main


def test_the_benchmark_compares_worker_counts_at_a_depth_bound(capsys):
    assert main(["--configs", "kip320", "--modes", "sym,por", "--workers", "1,2", "--max-depth", "8"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("kip320")]
    assert [(r[1], r[2]) for r in rows] == [("sym", "1"), ("sym", "2"), ("por", "1"), ("por", "2")]
    assert all(" ".join(r[-4:]) == "none within 8 steps" for r in rows)
    assert rows[0][3] == rows[1][3] and rows[2][3] == rows[3][3]  # same states, whatever the workers
    assert "sym 2 workers/1: time x" in out and "por/sym: states x" in out


def test_a_bad_worker_list_is_one_clear_error(capsys):
    import pytest

    with pytest.raises(SystemExit) as exc:
        main(["--workers", "1,two"])
    assert exc.value.code == 2
    assert "--workers takes a number" in capsys.readouterr().err


def test_the_benchmark_measures_packed_levels_beside_plain_ones(capsys):
    assert main(["--configs", "kip320", "--modes", "por,packed", "--max-depth", "10"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("kip320")]
    assert [r[1] for r in rows] == ["por", "packed"]
    assert rows[0][3] == rows[1][3] and rows[0][4] == rows[1][4]  # same states and transitions
    assert all(r[9] in ("MB", "GB") for r in rows)  # memory measured in each run's own process
    assert "packed/por: memory x" in out


@pytest.mark.integration  # the native search: gcc, then its binary
def test_the_benchmark_times_the_native_search_beside_the_python_one(capsys):
    assert main(["--configs", "zombie", "--modes", "por,native", "--workers", "1,2", "--max-depth", "12"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("zombie")]
    assert [(r[1], r[2]) for r in rows] == [("por", "1"), ("por", "2"), ("native", "1"), ("native", "2")]
    assert len({(r[3], r[4]) for r in rows}) == 1  # one state space, four searches
    assert "native/por: same states and transitions, time x" in out
