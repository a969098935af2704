"""``drive``'s verdict object, for a single run, ``--generate transitions`` and ``--generate
guided``: the configuration as an object, the verdict word, and the violation's steps --
the model's run up to the step that failed, as ``drive --path`` reads them back.  Built
from reports as the driver returns them (the runs themselves: test_drive.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from impl_testing import verdict_object

from impl.harness.cli.drive_verdict import print_drive, print_generated, print_guided
from impl.harness.drive import DriveReport, StepReport, from_json, scenario
from impl.harness.drive.generate import GenerateReport, search
from impl.harness.drive.guided import GuidedReport, RunRecord, path_json
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import initial

ARGS = argparse.Namespace(command="drive", json=True, brokers=2, knobs={})
DIVERGENCE = {"step": 3, "action": "handle_fetch", "implementation_did": "answered with hw 1",
              "model_allowed": "hw 0"}


def _printed(capsys: pytest.CaptureFixture[str], tmp_path: Path, code: int) -> tuple[dict, list[tuple[str, list]]]:
    """The printed verdict object, and its violation's steps as ``drive --path`` reads them."""
    doc = verdict_object(capsys.readouterr().out)
    assert doc["exit_code"] == code and doc["config"]["name"] == "design" and doc["config"]["brokers"] == 2
    if doc["violation"] is None:
        return doc, []
    path = tmp_path / "violation.json"
    path.write_text(json.dumps(doc))
    return doc, [(a, list(choose(None))) for a, choose in from_json(path).steps]


def test_a_divergence_is_the_violation_with_the_model_steps_up_to_it(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    run = scenario("kafka_1211")
    steps = [StepReport(i, a, "", "", "op", "followed") for i, (a, _) in enumerate(run.steps[:3], 1)]
    report = DriveReport(run.name, "design", 2, "hw", "diverged", 1, steps=steps, divergence=DIVERGENCE)
    assert print_drive(ARGS, report, run) == 1
    doc, driven = _printed(capsys, tmp_path, 1)
    assert doc["verdict"] == "violated" and doc["outcome"] == "diverged"
    assert doc["violation"]["property"] == "follows_model" and doc["violation"]["label"] == "diverged"
    assert "answered with hw 1" in doc["violation"]["message"]
    assert [a for a, _ in driven] == [a for a, _ in run.steps[:3]]


def test_an_interrupted_run_is_inconclusive_with_no_violation(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    run = scenario("kafka_1211")
    report = DriveReport(run.name, "design", 2, "hw", "interrupted", 3,
                         steps=[StepReport(1, "produce", "(0, 0)", "", "op", "followed")])
    assert print_drive(ARGS, report, run) == 3
    doc, _ = _printed(capsys, tmp_path, 3)
    assert doc["verdict"] == "inconclusive" and doc["outcome"] == "interrupted" and doc["violation"] is None


def test_a_generated_case_that_diverged_is_the_violation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = named("design", brokers=2)
    cases, states, transitions = search(cfg, max_states=300)
    case = max(cases, key=lambda c: len(c.steps))
    report = GenerateReport("design", 60.0, states, transitions, [c.pair for c in cases], exit_code=1)
    report.cases.append({"pair": list(case.pair), "steps": len(case.steps), "verdict": "diverged",
                         "divergence": dict(DIVERGENCE, step=2), "property": None, "seconds": 1.0})
    report.paths.append(case.steps)
    assert print_generated(ARGS, report, 1) == 1
    doc, driven = _printed(capsys, tmp_path, 1)
    assert doc["pairs"] and doc["violation"]["label"] == "diverged"
    assert driven == [(s.action, list(s.args)) for s in case.steps[:2]]


def test_a_guided_run_that_failed_is_the_violation_with_its_saved_steps(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    cfg = named("design", brokers=2)
    s, taken = initial(cfg), []
    for action, choose in scenario("kafka_1211").steps[:4]:
        step = Step(action, tuple(choose(s)))
        taken.append((step, s))
        s = apply(s, cfg, step)
    saved = tmp_path / "guided-0-run-1.json"
    saved.write_text(json.dumps(path_json(cfg, taken, "run 1")))
    failure = DriveReport("guided-0-1", "design", 2, "hw", "diverged", 1, divergence=dict(DIVERGENCE, step=4))
    report = GuidedReport("design", 2, 0, 60.0, 20, exit_code=1, failures=[failure],
                          runs=[RunRecord(1, "diverged", 4, 4, 10, 5.0, 2.0, failure.divergence, None, str(saved))])
    assert print_guided(ARGS, report) == 1
    doc, driven = _printed(capsys, tmp_path, 1)
    assert doc["verdict"] == "violated" and doc["runs"][0]["verdict"] == "diverged"
    assert driven == [(step.action, list(step.args)) for step, _ in taken]
