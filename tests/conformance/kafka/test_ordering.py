"""The adapter's order where Kafka's millisecond stamps invert cause and effect: the
committed 3.9 leader-kill run (``fixtures/leader-kill-39``) with one line's stamp moved as
real runs have shown it, and a real run's lines where a produce was logged after the fetch
answer that carried its record (``fixtures/late-produce-39``, with the relay's entries of
that answer); the adapter places each step after what caused it."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.judge.replay import judge
from conformance.kafka.adapter import adapt, steps, to_records
from conformance.kafka.ordering import appends_first
from conformance.kafka.patterns import Line, parse
from conformance.spark.verdict import judge_run
from tests.conformance.kafka.test_adapter_39 import RUN


def _restamped(tmp_path: Path, log: str, marker: str, stamp: str) -> Path:
    """The fixture with the one line of ``log`` that holds ``marker`` stamped ``stamp``."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    path = run / log
    lines = path.read_text().splitlines()
    (at,) = [i for i, t in enumerate(lines) if marker in t]
    lines[at] = f"[{stamp}]" + lines[at].split("]", 1)[1]
    path.write_text("\n".join(lines) + "\n")
    return run


def test_the_leader_applies_the_isr_after_the_controller_wrote_it(tmp_path: Path) -> None:
    """The controller's request log writes its AlterPartition answer once it is sent, and the
    leader may apply it in the millisecond before that line's stamp (at 25,157 here, where the
    answer is rebuilt at 25,157.4): the apply still follows the write, and the run conforms."""
    run = _restamped(tmp_path, "broker-1/logs/partition.log", "alter-partition-channel", "2026-11-28 16:21:25,157")
    records = to_records(adapt(run), "kafka")
    kinds = [r["kind"] for r in records]
    assert kinds[kinds.index("alter_partition") + 1] == "apply_isr"
    (verdict,) = judge_run("kafka", records, judge, "kafka39")
    assert verdict["status"] == "conforms", verdict["reason"]


LATE = Path(__file__).parent / "fixtures" / "late-produce-39"
"""Leader 2's lines of a real 3.9 run (leader-kill, its last value v5 at offset 5): the
follower's fetch answered at 37,212 carried v5 (the relay's entry: ``records`` 1,
``last_offset`` 5), and the produce of v5, logged at 37,256 with 17 ms of its own, started
by its durations at 37,239."""


def _late_steps() -> list[tuple[int, int, Line]]:
    steps = []
    for name in ("state-change.log", "kafka-request.log"):
        for text in (LATE / "broker-2" / "logs" / name).read_text().splitlines():
            line = parse(text)
            assert line is not None
            steps.append((2, len(steps), line))
    return steps


def test_a_produce_goes_before_the_fetch_answer_that_carried_its_record() -> None:
    logged, moved = _request_times(_late_steps()), _request_times(appends_first(_late_steps(), LATE))
    assert logged["FETCH"] < logged["PRODUCE"]
    assert moved["PRODUCE"] < moved["FETCH"] == logged["FETCH"]


def _request_times(steps: list[tuple[int, int, Line]]) -> dict[str, float]:
    return {x.fields["request"]["requestHeader"]["requestApiKeyName"]: x.ts for _, _, x in steps if x.name == "request"}


def test_without_the_relay_log_an_incremental_fetch_says_nothing_of_its_records(tmp_path: Path) -> None:
    """The answer's request lists no partition (an incremental fetch session): only the relay
    says which records it carried, so without it the produce stays where its durations put it."""
    shutil.copytree(LATE / "broker-2", tmp_path / "broker-2")
    assert appends_first(_late_steps(), tmp_path) == _late_steps()


def test_a_fetch_answered_at_once_is_read_before_it_is_answered() -> None:
    """A restarted follower's first fetch (ibp-2.6), answered without a remote wait: its read
    and its answer are rebuilt from the same durations, and their rounding once put the read
    a hair after the answer -- the follower's receipt of three records was lost, and its next
    fetch, at offset 6, was refused."""
    (text,) = (Path(__file__).parent / "fixtures" / "excerpts" / "fetch-answered-at-once.log").read_text().splitlines()
    line = parse(text)
    assert line is not None and line.fields["request"]["remoteTimeMs"] == 0
    read, answered = steps(line)
    assert read.fields["read"] and read.ts <= answered.ts
