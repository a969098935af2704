"""The adapter's order where Kafka's millisecond stamps invert cause and effect: the
committed 3.9 leader-kill run (``fixtures/leader-kill-39``) with one line's stamp moved as
real runs have shown it, and the adapter still placing each step after what caused it."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.judge.replay import judge
from conformance.kafka.adapter import adapt, to_records
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
