"""``epochal check``: exit codes, readable output, machine-readable JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from impl.cli.main import main


def test_check_design_exits_1_and_prints_the_counterexample(capsys):
    assert main(["check", "--config", "design", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION of committed_durable" in out and "Shortest counterexample" in out


def test_check_holding_config_exits_0(capsys):
    assert main(["check", "--config", "unclean", "--no-unclean", "--quiet"]) == 0
    assert "OK: every property holds" in capsys.readouterr().out


def test_check_json_is_machine_readable(capsys):
    assert main(["check", "--config", "design", "--json", "--quiet"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["holds"] is False and data["config"]["name"] == "design"
    steps = data["violation"]["steps"]
    assert steps[0]["action"] == "produce" and steps[0]["n"] == 1
    assert data["violation"]["property"] == "committed_durable"


def test_check_with_a_depth_bound_is_inconclusive_and_says_how_deep(capsys):
    """Below the design's 11-step loss, a depth-bounded check exits 3 (inconclusive, not
    proven) and names the depth it covered; --json carries why it stopped."""
    assert main(["check", "--config", "design", "--max-depth", "10", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "INCONCLUSIVE: no violation within 10 steps" in out and "VIOLATION" not in out
    assert main(["check", "--config", "design", "--max-depth", "10", "--quiet", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["stopped_by"] == "max_depth" and data["depth"] == 10 and data["violation"] is None


def test_a_state_budget_that_runs_out_is_inconclusive_not_a_violation(capsys):
    assert main(["check", "--config", "kip320", "--max-states", "100", "--quiet"]) == 3
    assert "INCONCLUSIVE: stopped by --max-states" in capsys.readouterr().out


def test_a_violation_found_within_the_budget_exits_1_even_if_another_search_is_inconclusive(capsys):
    """One exit code for several configurations: a violation anywhere is the answer."""
    assert main(["check", "--config", "design", "--max-depth", "11", "--quiet"]) == 1
    assert main(["check", "--config", "design", "--config", "kip320", "--max-depth", "11", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION of committed_durable" in out and "INCONCLUSIVE: no violation within 11 steps" in out


def test_help_lists_the_exit_codes_and_carries_no_markup(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out and "3  inconclusive" in out
    assert "``" not in out


def test_version_names_the_installed_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"epochal {version('epochal')}"


def test_bad_arguments_exit_2_with_one_line_and_no_traceback():
    for args in (["--config", "nonsense"], ["--config", "design", "--brokers", "9"], ["--config", "design", "--workers", "0"], ["--config", "design", "--max-depth", "0"]):
        p = subprocess.run([sys.executable, "-m", "impl.cli.main", "check", *args], capture_output=True, text=True)
        assert p.returncode == 2, args
        assert "Traceback" not in p.stderr
        assert "error" in p.stderr.lower()
