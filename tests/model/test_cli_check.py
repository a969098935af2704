"""``epochal check``: exit codes, readable output, machine-readable JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from impl.harness.cli.main import main
from tests.pinned import pinned


def test_check_design_exits_1_and_prints_the_counterexample(capsys):
    assert main(["check", "--config", "design", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION of committed_durable" in out and "Shortest counterexample" in out


def test_check_holding_config_exits_0(capsys):
    assert main(["check", "--config", "unclean", "--no-unclean", "--quiet"]) == 0
    assert "OK: every property holds" in capsys.readouterr().out


def test_check_json_is_one_object_with_a_result_per_configuration(capsys):
    assert main(["check", "--config", "design", "--json", "--quiet"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "check" and doc["exit_code"] == 1 and doc["not_checked"] == []
    [data] = doc["results"]
    assert data["holds"] is False and data["config"]["name"] == "design"
    steps = data["violation"]["steps"]
    assert steps[0]["action"] == "produce" and steps[0]["n"] == 1
    assert data["violation"]["property"] == "committed_durable"


def test_check_json_for_several_configurations_is_still_one_object(capsys):
    assert main(["check", "--config", "design", "--config", "kip320", "--max-depth", "4", "--json", "--quiet"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert isinstance(doc, dict) and doc["exit_code"] == 3
    assert [r["config"]["name"] for r in doc["results"]] == ["design", "kip320"]
    assert all(r["stopped_by"] == "max_depth" for r in doc["results"])


def test_without_config_check_runs_what_should_hold_and_names_the_known_broken(capsys):
    """No --config: the configurations expected to hold (cut at depth 3 here, so 3), and the
    known-broken ones named as not checked, each with why -- not a violation of the run."""
    from impl.harness.cli.check import EXPECTED_TO_HOLD, KNOWN_BROKEN

    assert main(["check", "--max-depth", "3", "--json", "--quiet"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert [r["config"]["name"] for r in doc["results"]] == list(EXPECTED_TO_HOLD)
    assert [n["config"] for n in doc["not_checked"]] == list(KNOWN_BROKEN)
    assert "design" in KNOWN_BROKEN and "design" not in EXPECTED_TO_HOLD
    assert main(["check", "--max-depth", "3", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "not checked (known to break; check one with --config NAME):" in out
    assert "  design: seed 000 as written loses a committed record" in out


@pytest.mark.slow
def test_plain_check_exits_0_while_the_fixed_protocol_holds(capsys):
    """Each configuration expected to hold, exhausted -- kip320's is the README's ``epochal
    check --config kip320 --json``: exit 0, machine-readable (its text form: above)."""
    from impl.harness.cli.check import EXPECTED_TO_HOLD

    assert main(["check", "--json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit_code"] == 0 and doc["verdict"] == "holds" and doc["violation"] is None
    assert [r["config"]["name"] for r in doc["results"]] == list(EXPECTED_TO_HOLD)
    assert all(r["holds"] and r["complete"] and r["stopped_by"] is None for r in doc["results"])
    assert [r["states"] for r in doc["results"]] == [pinned(name, "default", "states") for name in EXPECTED_TO_HOLD]


def test_bound_flags_show_their_defaults_and_take_kafkas_names(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--min-insync-replicas N min.insync.replicas for acks=all produce (default 1)" in out
    assert "--brokers N brokers in the cluster (default 2)" in out
    assert "--max-crashes N broker crashes (kill -9), in all (default 2 (design)" in out
    assert "--unclean-leader-election" in out and "--min-insync " not in out
    assert main(["check", "--config", "unclean", "--no-unclean-leader-election", "--min-insync-replicas", "1",
                 "--max-depth", "2", "--quiet"]) == 3


def test_a_usage_error_under_json_is_a_json_object_too(capsys):
    assert main(["check", "--config", "design", "--brokers", "9", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "check" and doc["exit_code"] == 2 and doc["error"]


def test_check_with_a_depth_bound_is_inconclusive_and_says_how_deep(capsys):
    """Below the design's 11-step loss, a depth-bounded check exits 3 (inconclusive, not
    proven) and names the depth it covered; --json carries why it stopped."""
    assert main(["check", "--config", "design", "--max-depth", "10", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "INCONCLUSIVE: no violation within 10 steps" in out and "VIOLATION" not in out
    assert main(["check", "--config", "design", "--max-depth", "10", "--quiet", "--json"]) == 3
    [data] = json.loads(capsys.readouterr().out)["results"]
    assert data["stopped_by"] == "max_depth" and data["depth"] == 10 and data["violation"] is None


def test_a_state_budget_that_runs_out_is_inconclusive_not_a_violation(capsys):
    assert main(["check", "--config", "kip320", "--max-states", "100", "--quiet"]) == 3
    assert "INCONCLUSIVE: stopped by --max-states" in capsys.readouterr().out


@pytest.mark.slow  # the default suite keeps to about six minutes
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


@pytest.mark.integration
def test_bad_arguments_exit_2_with_one_line_and_no_traceback(capsys):
    """The process's exit code once, as a shell sees it; the other bad arguments through
    ``main`` in this process (the same parser, the same code, no interpreter to start)."""
    p = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "check", "--config", "nonsense"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "error" in p.stderr.lower()
    for args in (["--config", "design", "--brokers", "9"], ["--config", "design", "--workers", "0"], ["--config", "design", "--max-depth", "0"]):
        assert main(["check", *args]) == 2, args
        err = capsys.readouterr().err
        assert "Traceback" not in err and "error" in err.lower()
