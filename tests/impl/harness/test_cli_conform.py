"""``epochal conform``'s exit codes, ``--json`` and table: inconclusive is 3, the JSON is one
object whose counts and timings are summary.json's, the table names scenarios and wraps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.spark.report import Outcome, exit_code, render, scenario_names

RECORDED = Path(__file__).resolve().parents[3] / "traces" / "data" / "recorded"


def _verdict(run: str, status: str, reason: str | None = None) -> dict[str, Any]:
    return {"run": run, "topic": "t", "partition": 0, "status": status, "total": 40, "out_of_order": 0,
            "matched": 40 if status == "conforms" else 12, "reason": reason}


def test_exit_code_rule_found_inconclusive_conforms():
    assert exit_code(Outcome(0, groups=3, conforming=3), strict=False) == 0
    assert exit_code(Outcome(0, groups=3, conforming=2, violating=1), strict=False) == 1
    assert exit_code(Outcome(0, groups=3, conforming=2, errors=1), strict=False) == 3
    assert exit_code(Outcome(0, groups=3, conforming=1, violating=1, errors=1), strict=False) == 1
    assert exit_code(Outcome(0, groups=0), strict=False) == 3
    malformed = Outcome(0, groups=2, conforming=2, quarantined={"bad_json": 1})
    assert exit_code(malformed, strict=False) == 0 and exit_code(malformed, strict=True) == 1


def test_scenario_is_the_directory_a_runs_files_share():
    names = scenario_names({
        "r1": {"file:/x/recorded/leader-kill/broker-0.jsonl", "file:/x/recorded/leader-kill/harness.jsonl"},
        "r2": {"file:/x/a/one.jsonl", "file:/x/b/two.jsonl"},
    })
    assert names == {"r1": "leader-kill"}
    out = Outcome(0, groups=2, conforming=2, scenarios=names, verdicts=[_verdict("r1", "conforms"), _verdict("r2", "conforms")])
    lines = render(out).splitlines()
    assert lines[0].split()[0] == "scenario" and lines[1].startswith("leader-kill ") and lines[2].startswith("r2 ")


def test_the_table_wraps_a_long_verdict_instead_of_cutting_it():
    reason = "leader 2 appended at offset 7 but the model allows only " + " ".join(f"state{i}" for i in range(60)) + " END"
    out = Outcome(1, groups=1, violating=1, verdicts=[_verdict("r1", "violates", reason)])
    text = render(out, width=100)
    assert all(len(line) <= 100 for line in text.splitlines())
    table = text.split("\n\n")[0]
    assert "END" in table and "state59" in table  # nothing cut off
    assert "END" in text.split("first non-conforming step")[1]


@pytest.mark.integration
def test_a_judge_that_cannot_decide_is_inconclusive_and_json_matches_summary(spark, tmp_path, capsys):
    """Every group's judge raises (``json:loads`` is no judge): nothing is shown to conform or
    not, so the exit code is 3; --json names each group's scenario and carries summary.json's
    counts and timings exactly."""
    from conformance.spark.cli import standalone_main

    out = tmp_path / "out"
    code = standalone_main([str(RECORDED), "--judge", "json:loads", "--out", str(out), "--json"], spark=spark)
    assert code == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "conform" and doc["exit_code"] == 3
    assert doc["errors"] == doc["groups"] > 0 and doc["conforming"] == doc["violating"] == 0
    assert {v["scenario"] for v in doc["verdicts"]} == {p.name for p in RECORDED.iterdir() if p.is_dir()}
    assert all(v["status"] == "error" for v in doc["verdicts"])
    summary = json.loads(next((out / "summary.json").glob("part-*")).read_text())
    assert summary == {k: v for k, v in doc.items() if k not in ("command", "verdicts")}
    assert set(summary["seconds"]) >= {"judge", "write", "total"}
