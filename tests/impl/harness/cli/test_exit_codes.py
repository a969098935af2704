"""One meaning per exit code in every command: 3 is inconclusive -- anything not proved or
not covered, and Ctrl-C -- always after a report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from impl_testing import verdict_object

from impl.harness.cli.drive_verdict import generate_exit_code
from impl.harness.cli.main import main
from impl.harness.drive.generate import GenerateReport
from tests.ctrl_c import as_from_a_terminal

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.slow  # z3, about 85 s CPU: plain kip320's proofs run in test_prove_cli, the deletion's pieces in test_symbolic
def test_prove_holds_once_durability_is_proved_by_induction(capsys: pytest.CaptureFixture[str]) -> None:
    """kip320's durability is proved by induction with every knobbed action and a topic
    deletion too -- a leader replaced by a preferred election, a controlled shutdown, a pause
    or an expiry acting on (the replaced-leader lemmas), a follower of the re-created topic
    truncating against a replica that leads the older incarnation on (the stray-leader
    lemma) -- so prove answers 0; BMC still runs, as a cross-check, and finds nothing."""
    assert main(["prove", "--config", "kip320", "--deletions", "1", "--preferred-elections", "1", "--max-shutdowns", "1",
                 "--max-pauses", "1", "--max-expiries", "1", "--depth", "1"]) == 0
    out = capsys.readouterr().out
    assert "holds to depth 1" in out and "INCONCLUSIVE" not in out
    assert [ln.split()[0] for ln in out.splitlines() if "invariant committed_durable" in ln or "invariant acked_durable" in ln] == ["proved"] * 2


def test_generate_is_inconclusive_when_it_covers_fewer_pairs_than_its_search_found() -> None:
    pairs = [("produce", "taken"), ("handle_fetch", "answered")]
    report = GenerateReport("kip320", 60.0, 10, 20, pairs, covered_pairs=pairs[:1])
    assert generate_exit_code(report) == 3
    report.covered_pairs = sorted(pairs)
    assert generate_exit_code(report) == 0
    report.interrupted = True  # Ctrl-C: inconclusive, however much was covered
    assert generate_exit_code(report) == 3
    report.exit_code = 1  # a case diverged: that is the answer, whatever was covered
    assert generate_exit_code(report) == 1


def test_ctrl_c_ends_a_check_with_its_report_and_says_interrupted_not_done() -> None:
    from model.config import named
    from properties.checkers.bfs import SearchOptions, check

    said: list[str] = []

    def progress(line: str) -> None:
        said.append(line)
        if line.lstrip().startswith("searching: depth"):
            raise KeyboardInterrupt  # as Ctrl-C would, at the first progress line (after 2 s)

    r = check(named("kip320"), SearchOptions(progress=progress))
    assert r.stopped_by == "interrupted" and not r.complete and r.violation is None
    assert said[-1].lstrip().startswith("interrupted: every run of up to")
    assert not any(line.lstrip().startswith("done") for line in said)


def test_ctrl_c_before_a_command_has_a_report_is_inconclusive_with_the_error_object(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import impl.harness.cli.vectors as vectors

    def interrupted(_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(vectors, "_command", interrupted)
    assert main(["vectors", "--out", str(tmp_path), "--json"]) == 3
    out, err = capsys.readouterr()
    doc = verdict_object(out)
    assert doc["verdict"] == "inconclusive" and doc["command"] == "vectors"
    assert err.strip() == f"epochal vectors: {doc['error']}"


@pytest.mark.integration
@pytest.mark.slow  # a cluster's start and stop: about 25 s
def test_ctrl_c_in_drive_reports_the_steps_driven_and_exits_3(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "impl.harness.cli.main", "drive", "--config", "design",
                             "--scenario", "kafka_1211", "--json", "--data-dir", str(tmp_path / "cluster")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                            preexec_fn=as_from_a_terminal)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("step 2/"):  # two steps followed: Ctrl-C now
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    doc = verdict_object(out)
    assert doc["verdict"] == "inconclusive" and doc["outcome"] == "interrupted" and doc["violation"] is None
    assert [s["n"] for s in doc["steps"]][:2] == [1, 2]
    assert json.loads(out)["exit_code"] == 3 and "Traceback" not in err


def test_ctrl_c_ends_a_fuzz_run_with_the_runs_so_far() -> None:
    from properties.checkers.fuzz import FuzzOptions, fuzz_config, run

    def progress(runs: int, _seconds: float, _phase: str) -> None:
        if runs == 2:
            raise KeyboardInterrupt  # as Ctrl-C would, during the second run

    r = run(fuzz_config("kip320", brokers=2, partitions=1), FuzzOptions(max_examples=50, progress=progress, every=0.0))
    assert r.interrupted and r.violation is None and r.runs == 2


@pytest.mark.parametrize("step, why", [
    ({"action": "produce", "args": [0, 1, 2, 3]}, "it takes 2 (b, p) or 3 with hold, the step gives 4"),
    ({"action": "produce", "args": [7, 0]}, "IndexError"),
], ids=["too many", "no such broker"])
def test_a_path_step_whose_arguments_do_not_fit_is_one_line_and_exit_2_before_any_process(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, step: dict, why: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"action": "produce", "args": [0, 0]}, step]))
    assert main(["drive", "--config", "design", "--path", str(path), "--data-dir", str(tmp_path / "cluster"),
                 "--json"]) == 2
    out, err = capsys.readouterr()
    doc = verdict_object(out)
    assert err.strip() == f"epochal drive: error: {doc['error']}" and "Traceback" not in err
    assert doc["error"].startswith(f"bad.json: step 2: the arguments {step['args']} do not fit produce: ")
    assert why in doc["error"]
    assert not (tmp_path / "cluster").exists()  # refused before a cluster started


def test_ctrl_c_while_generate_searches_is_a_report_of_nothing_driven_and_inconclusive(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import impl.harness.drive.generate as generate

    monkeypatch.setattr(generate, "SEARCH_PROGRESS_SECONDS", 0.0)

    def progress(line: str) -> None:
        if line.startswith("generate: searching: "):
            raise KeyboardInterrupt  # as Ctrl-C would, during the search

    report = generate.generate("kip320", 60.0, data_dir=tmp_path, progress=progress, max_states=300)
    assert report.interrupted and report.cases == [] and not any(tmp_path.iterdir())
    assert generate_exit_code(report) == 3
