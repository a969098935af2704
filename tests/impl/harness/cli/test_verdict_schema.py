"""Every verdict command's ``--json`` is one verdict object that docs/verdict.schema.json
accepts -- ``check``, ``prove``, ``fuzz`` and ``conform`` here, at small sizes, for each exit
code they give; ``drive``'s in tests/impl/harness/test_drive.py (its runs start clusters)
-- and every command's argument error is the error object."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from impl_testing import verdict_object

from impl.harness.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[4]
NONCONFORMING = ROOT / "traces" / "data" / "nonconforming" / "does-not-match--hw-above-leo"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, verdict_object(out), err


@pytest.mark.parametrize("argv, code", [
    (["check", "--config", "design", "--quiet"], 1),
    (["check", "--config", "kip320", "--max-depth", "3", "--quiet"], 3),
    (["check", "--config", "kip320", "--config", "design", "--max-depth", "12", "--quiet"], 1),
    # (prove's objects: test_prove_cli.py, whose z3 runs print them -- kip320's exit 0 and the
    # design's exit 3 -- and test_a_prove_counterexample_reads_back_as_a_drive_path's exit 1)
    (["fuzz", "--config", "kip320", "--max-examples", "3", "--steps", "5"], 3),
], ids=lambda x: " ".join(x) if isinstance(x, list) else str(x))
def test_the_model_commands_print_one_verdict_object(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                     code: int) -> None:
    got, doc, _ = _run(capsys, *argv)
    assert got == doc["exit_code"] == code
    assert doc["command"] == argv[0] and doc["verdict"] == {0: "holds", 1: "violated", 3: "inconclusive"}[code]
    # the document's config and violation are the first result's with the command's exit code
    about = next(r for r in doc["results"] if r["exit_code"] == code)
    assert doc["config"] == about["config"] and doc["violation"] == about["violation"]


def test_a_violation_in_the_verdict_object_reads_back_as_a_drive_path(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    """check's violation carries its steps in the format ``drive --path`` reads (prove's: below)."""
    from impl.harness.drive import from_json

    _, checked, _ = _run(capsys, "check", "--config", "design", "--quiet")
    steps = checked["violation"]["steps"]
    assert checked["violation"]["property"] == "committed_durable" and len(steps) == 11
    f = tmp_path / "check.json"
    f.write_text(json.dumps(checked))
    run = from_json(f)
    assert [a for a, _ in run.steps] == [s["action"] for s in steps]
    assert [list(choose(None)) for _, choose in run.steps][0] == steps[0]["args"]


@pytest.mark.slow  # BMC to depth 5: about 20-30 s
def test_a_prove_counterexample_reads_back_as_a_drive_path(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    from impl.harness.drive import from_json

    f = tmp_path / "prove.json"
    _, proved, _ = _run(capsys, "prove", "--config", "design", "--depth", "5")
    assert proved["exit_code"] == 1 and proved["violation"]["property"] == "committed_durable"
    assert proved["results"][0]["config"]["name"] == "design"
    f.write_text(json.dumps(proved))
    assert [a for a, _ in from_json(f).steps] == [s["action"] for s in proved["violation"]["steps"]]


def _every_command(parser: argparse.ArgumentParser) -> list[list[str]]:
    """Every command as it is typed: ``check``, and ``topics create`` for one with actions."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for name, p in sub.choices.items():
        actions = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        out += [[name, action] for action in actions[0].choices] if actions else [[name]]
    return out


def test_an_argument_error_of_every_command_is_one_line_and_the_error_object(
        capsys: pytest.CaptureFixture[str]) -> None:
    commands = _every_command(build_parser())
    assert ["check"] in commands and ["topics", "create"] in commands and len(commands) > 20
    for words in commands:
        code = main([*words, "--no-such-flag", "--json"])
        out, err = capsys.readouterr()
        doc = verdict_object(out)
        assert code == doc["exit_code"] == 2 and doc["verdict"] == "bad_input", words
        assert doc["command"] == " ".join(words), words  # the error: a missing argument, or the flag
        [line] = err.strip().splitlines()  # from the parser that refused it: the command's, or epochal's
        refused_by = line.split(":")[0]
        assert line == f"{refused_by}: error: {doc['error']} (see {refused_by} --help)", words


@pytest.mark.parametrize("argv", [
    ["check", "--config", "design", "--max-memory", "1e-12"],
    ["prove", "--brokers", "5"],
    ["fuzz", "--config", "design", "--steps", "0"],
    ["drive", "--config", "nosuch", "--scenario", "kafka_1211"],
    ["conform", "/nonexistent/traces"],
], ids=lambda argv: argv[0])
def test_a_refused_request_of_every_verdict_command_is_the_error_object(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, doc, err = _run(capsys, *argv)
    assert code == doc["exit_code"] == 2 and doc["command"] == argv[0]
    assert err.strip() == f"epochal {argv[0]}: error: {doc['error']}"


def test_conform_names_the_first_group_that_breaks_as_the_violation() -> None:
    """The document ``conform --json`` prints, built from an outcome of the job's (the real
    run, which starts Spark, is the slow test below)."""
    from conformance.spark.report import Outcome
    from impl.harness.cli.conform import conform_document

    verdicts = [{"run": "r1", "topic": "t", "partition": 0, "status": "violates", "property": None,
                 "reason": "broker 1 appended at offset 3 with hw 4", "matched": 12, "total": 40},
                {"run": "r2", "topic": "t", "partition": 0, "status": "conforms", "property": None,
                 "reason": None, "matched": 40, "total": 40}]
    outcome = Outcome(1, files=2, groups=2, conforming=1, violating=1, verdicts=verdicts,
                      scenarios={"r1": "leader-kill"})
    args = argparse.Namespace(command="conform", config="kip320", judge=None, strict=False, paths=["traces"])
    fields = conform_document(args, outcome)
    doc = verdict_object(json.dumps({"command": "conform", "schema_version": 1, **fields}))
    assert doc["verdict"] == "violated" and doc["config"]["paths"] == ["traces"]
    assert doc["violation"] == {"property": "follows_model", "label": "leader-kill t-0",
                                "message": "broker 1 appended at offset 3 with hw 4", "also": [], "steps": []}
    # --strict: every group conforms, a quarantined record is the violation
    strict = Outcome(1, files=1, groups=1, conforming=1, quarantined={"bad_json": 2}, verdicts=verdicts[1:])
    doc = verdict_object(json.dumps({"command": "conform", "schema_version": 1, **conform_document(args, strict)}))
    assert doc["violation"]["property"] == "records_well_formed" and doc["violation"]["label"] == "--strict"


@pytest.mark.slow  # Spark's start: 15-25 s
@pytest.mark.spark
def test_conform_prints_one_verdict_object_naming_the_group_that_breaks(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = _run(capsys, "conform", str(NONCONFORMING))
    assert code == doc["exit_code"] == 1 and doc["verdict"] == "violated"
    assert doc["config"] == {"name": "kip320", "judge": None, "strict": False, "paths": [str(NONCONFORMING)]}
    first = doc["verdicts"][0]
    assert first["status"] == "violates" and doc["violation"]["message"] == first["reason"]
    assert doc["violation"]["steps"] == []  # a recorded trace is not a model run


def _chaos_json(capsys: pytest.CaptureFixture[str], report: object, code: int) -> dict:
    from impl.harness.cli.chaos import print_chaos

    args = argparse.Namespace(command="chaos", json=True)
    assert print_chaos(args, report, code) == code  # type: ignore[arg-type]
    return verdict_object(capsys.readouterr().out)


def _python_report(lost: int = 0, causes: dict[str, int] | None = None, found: list | None = None) -> object:
    from impl.harness.chaos.run import ChaosReport
    from impl.harness.chaos.verdict import Verdict

    verdict = Verdict(attempted=100, acknowledged=90, lost=lost, duplicated=0, found=found or [], causes=causes or {})
    return ChaosReport(seed=3, duration=10.0, brokers=3, acks=-1, unclean=True, schedule=["kill 1"], faults=[],
                       verdict=verdict, conformance={"groups": 2, "conforming": 2}, recovered=True,
                       data_dir="/tmp/x", seconds=12.0)


def test_a_passing_chaos_run_is_a_verdict_object_that_holds(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _chaos_json(capsys, _python_report(), 0)
    assert doc["verdict"] == "holds" and doc["violation"] is None
    assert doc["config"]["name"] == "chaos" and doc["config"]["seed"] == 3 and doc["config"]["engine"] == "epochal"
    assert doc["writes"] == {"attempted": 100, "acknowledged": 90, "lost": 0, "duplicated": 0, "findings": [],
                             "causes": {}}


def test_an_unclean_loss_in_chaos_carries_the_models_label_and_other_findings_come_after(
        capsys: pytest.CaptureFixture[str]) -> None:
    from impl.harness.chaos.verdict import DUPLICATED, LOST, Finding
    from properties.safety import UNCLEAN_LABEL

    cause = "unclean election of broker 2 out of the ISR (leader epoch 4)"
    twice = Finding("value 7 is in the final logs 2 times: b0@3, b0@4", DUPLICATED)
    report = _python_report(lost=3, causes={cause: 3}, found=[twice, Finding(f"lost 3 acknowledged writes: {cause}",
                                                                             LOST, UNCLEAN_LABEL)])
    report.conformance = {"problem": "traces do not conform to the model (kip320): ..."}  # type: ignore[attr-defined]
    doc = _chaos_json(capsys, report, 1)
    v = doc["violation"]
    assert doc["verdict"] == "violated" and v["property"] == "acked_durable" and v["label"] == UNCLEAN_LABEL
    assert v["message"] == f"lost 3 acknowledged writes: {cause}"
    assert [a["property"] for a in v["also"]] == ["writes_once", "follows_model"] and v["steps"] == []
    assert doc["writes"]["findings"] == [twice.text, v["message"]]  # in the judge's order
    # a loss that no unclean election explains is not excused by a label, nor is a run's
    # losses when one of them is not an unclean election's
    bug = "acknowledged with acks=all and no unclean election: a replication bug"
    report = _python_report(lost=1, causes={bug: 1}, found=[Finding(f"lost 1 acknowledged write: {bug}", LOST)])
    assert _chaos_json(capsys, report, 1)["violation"]["label"] is None
    report = _python_report(lost=2, causes={cause: 1, bug: 1}, found=[
        Finding(f"lost 1 acknowledged write: {cause}", LOST, UNCLEAN_LABEL),
        Finding(f"lost 1 acknowledged write: {bug}", LOST)])
    v = _chaos_json(capsys, report, 1)["violation"]
    assert v["label"] is None and [a["property"] for a in v["also"]] == ["acked_durable"]


def test_the_kafka_engines_chaos_report_is_the_same_verdict_object(capsys: pytest.CaptureFixture[str]) -> None:
    from impl.harness.chaos.kafka_run import KafkaChaosReport

    report = KafkaChaosReport(seed=2, profile="3.9", unclean=False, faults=["kill-leader"], sent=50, failed=2,
                              read=47, lost=["s2-9"], misplaced=["s2-4"])
    doc = _chaos_json(capsys, report, 1)
    assert doc["config"] == {"name": "chaos", "engine": "kafka", "seed": 2, "unclean": False, "admin": False,
                             "profile": "3.9"}
    assert doc["violation"]["property"] == "acked_durable" and "s2-9" in doc["violation"]["message"]
    assert doc["violation"]["label"] is None
    assert [a["property"] for a in doc["violation"]["also"]] == ["replicas_consistent"]
    assert doc["writes"]["lost"] == 1 and doc["lost"] == ["s2-9"]


def test_demo_names_the_part_that_failed(capsys: pytest.CaptureFixture[str]) -> None:
    from impl.harness.cli.chaos_verdict import demo_violation
    from impl.harness.cli.verdict import print_verdict

    args = argparse.Namespace(command="demo", json=True)
    print_verdict(args, 1, {"name": "demo"}, demo_violation(True, False), passed=False)
    doc = verdict_object(capsys.readouterr().out)
    assert doc["violation"]["property"] == "follows_model" and doc["verdict"] == "violated"
    assert demo_violation(True, True) is None
