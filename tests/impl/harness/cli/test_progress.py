"""Long work says every few seconds which phase it is in (searching, shrinking, driving), ends
with a summary, and refuses bad input before the long part starts."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from impl.harness.cli.main import main


def test_check_progress_names_its_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    import properties.checkers.bfs as bfs
    from model.config import named

    monkeypatch.setattr(bfs, "PROGRESS_SECONDS", 0.0)
    said: list[str] = []
    bfs.check(named("kip320"), bfs.SearchOptions(max_depth=4, progress=said.append))
    *during, last = said
    assert during and all(line.startswith("  searching: depth ") for line in during), during[:3]
    assert last.startswith("  done: every run of up to 4 steps tried")


def test_generate_says_which_case_it_is_driving_while_the_case_is_silent(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import functools

    import impl.harness.cli.drive as drive
    from impl.harness.cli.heartbeat import Heartbeat
    from impl.harness.drive.generate import GenerateReport

    def generate(config: str, budget: float, progress: object, **_: object) -> GenerateReport:
        progress("case 1/2: produce/taken (4 steps)")  # type: ignore[operator]
        time.sleep(0.35)  # the cluster starting, a step waiting: nothing to say
        return GenerateReport(config, budget, 10, 20, [("produce", "taken"), ("fetch", "answered")],
                              covered_pairs=[("produce", "taken")])

    monkeypatch.setattr(drive, "generate", generate)
    monkeypatch.setattr(drive, "Heartbeat", functools.partial(Heartbeat, every=0.1))
    assert main(["drive", "--config", "kip320", "--generate", "transitions", "--budget", "30",
                 "--data-dir", str(tmp_path / "d")]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "case 1/2: produce/taken (4 steps)"
    assert err[1:] and all(line.startswith("generate: still driving case 1/2 (") for line in err[1:]), err


def test_fuzz_progress_names_its_phase(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import impl.harness.cli.fuzz as fuzz

    monkeypatch.setattr(fuzz, "PROGRESS_SECONDS", 0.0)
    assert main(["fuzz", "--config", "kip320", "--max-examples", "3", "--steps", "5"]) == 3
    lines = [line.strip() for line in capsys.readouterr().err.splitlines()]
    assert "... searching: 1 runs so far, budget 3 valid runs (0 s)" in lines
    assert fuzz.PHASES.keys() == {"searching", "shrinking", "minimizing"}


def test_the_generate_search_says_how_far_it_got(monkeypatch: pytest.MonkeyPatch) -> None:
    import impl.harness.drive.generate as generate
    from model.config import named

    monkeypatch.setattr(generate, "SEARCH_PROGRESS_SECONDS", 0.0)
    said: list[str] = []
    cases, states, _ = generate.search(named("kip320", brokers=2), max_states=300, progress=said.append)
    assert cases and len(said) >= states // 2  # a line per state taken from the queue, at no interval
    assert said[-1].startswith("generate: searching: ") and "of at most 300 states" in said[-1]


def test_conform_refuses_input_without_a_trace_record_before_spark_starts(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("not json\n{\"also\": \"not a trace event\"}\n")
    started = time.monotonic()
    assert main(["conform", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert time.monotonic() - started < 10 and "Spark" not in err
    assert err.strip().splitlines() == [f"epochal conform: error: no readable trace records in 1 files (malformed: "
                                        f"{err.split('(malformed: ')[1].strip()}"]
    (tmp_path / "a.jsonl").unlink()
    assert main(["conform", str(tmp_path)]) == 2
    assert "no trace files under" in capsys.readouterr().err


def test_record_traces_ends_with_a_summary_of_what_it_recorded(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary counts what the recording left: here a recording of known files, so the
    counts are exact (real brokers record every scenario through this command in the slow
    suite: tests/test_doc_commands.py runs README's ``record-traces``)."""
    from impl.harness.cli import record_traces

    def recorded(name: str, out: Path, log: Callable[[str], None], broker_cmd: object) -> Path:
        log(f"recording {name}: starting 3 brokers on an embedded ZooKeeper ...")
        where = out / name
        (where / "broker-0").mkdir(parents=True)
        (where / "broker-0" / "trace.jsonl").write_text('{"seq": 0}\n{"seq": 1}\n\n{"seq": 2}\n')
        (where / "controller.jsonl").write_text('{"seq": 0}\n')
        return where

    monkeypatch.setattr(record_traces, "record", recorded)
    assert main(["record-traces", "--out", str(tmp_path), "--scenario", "leader-kill"]) == 0
    out, err = capsys.readouterr()
    assert "recording leader-kill" in err  # progress on stderr, the summary on stdout
    head, row = out.strip().splitlines()
    assert head.startswith(f"recorded 1 scenario(s) under {tmp_path} in ")
    assert row.split() == ["leader-kill", "4", "records", "in", "2", "files", str(tmp_path / "leader-kill")]


def test_the_heartbeat_names_the_phase_while_the_work_is_silent_and_only_then() -> None:
    from impl.harness.cli.heartbeat import Heartbeat

    said: list[str] = []
    with Heartbeat(said.append, every=0.1) as beat:
        beat.phase("judging 4 files")
        time.sleep(0.35)
        assert said and all(line.startswith("still judging 4 files (") for line in said)
        quiet = len(said)
        for _ in range(6):  # the work speaks for itself: no heartbeat between its lines
            beat.said()
            time.sleep(0.03)
        assert len(said) == quiet
    ended = len(said)
    time.sleep(0.2)
    assert len(said) == ended  # stopped with the work
