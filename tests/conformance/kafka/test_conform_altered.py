"""``epochal conform`` (the Spark job's command line) on the committed real Kafka 3.9 run:
as recorded it conforms to ``kafka39``; with one event altered -- a leader epoch going
backwards, an HW above the LEO -- it is refused, and the verdict names that event."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.kafka.adapter import adapt, to_records, write_trace
from conformance.spark.cli import standalone_main
from tests.conformance.kafka.test_adapter_39 import RUN

pytestmark = [pytest.mark.integration, pytest.mark.spark]

Record = dict[str, Any]


def _epoch_backwards(r: Record) -> None:
    r["params"]["leader_epoch"] -= 1
    r["post"]["leader_epoch"] -= 1


def _hw_above_leo(r: Record) -> None:
    r["post"]["hw"] = r["post"]["leo"] + 1


ALTERATIONS: dict[str, tuple[Callable[[Record], bool], Callable[[Record], None]]] = {
    "the new leader's epoch going backwards": (lambda r: r["kind"] == "become_leader" and r["params"]["leader_epoch"] > 0,
                                               _epoch_backwards),
    "a follower's HW above its LEO": (lambda r: r["kind"] == "receive_fetch" and bool(r["params"]["records"]),
                                      _hw_above_leo),
}


def _conform(spark: Any, records: list[Record], out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    write_trace(records, out / "trace")
    code = standalone_main([str(out / "trace"), "--config", "kafka39", "--json"], spark=spark)
    printed = capsys.readouterr()
    assert printed.out, (code, printed.err[-2000:])
    return code, json.loads(printed.out)


def test_the_recorded_run_conforms(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _conform(spark, to_records(adapt(RUN), "kafka39-lk"), tmp_path, capsys)
    assert code == 0 and doc["conforming"] == doc["groups"] >= 1, doc


@pytest.mark.parametrize("name", sorted(ALTERATIONS))
def test_an_altered_event_is_refused_by_name(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             name: str) -> None:
    which, alter = ALTERATIONS[name]
    records = to_records(adapt(RUN), "kafka39-lk")
    at = next(i for i, r in enumerate(records) if which(r))
    alter(records[at])
    code, doc = _conform(spark, records, tmp_path, capsys)
    assert code == 1, doc
    [verdict] = [v for v in doc["verdicts"] if v["status"] == "violates"]
    bad = records[at]
    assert (verdict["first_bad_kind"], verdict["first_bad_node"]) == (bad["kind"], bad["node"]), verdict
    assert verdict["reason"].startswith(f"{bad['kind']} by broker {bad['node']}"), verdict["reason"]
