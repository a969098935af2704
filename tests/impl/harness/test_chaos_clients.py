"""``epochal chaos --client``: the workload's producer as a strategy.  A fake client's
delivery reports -- acknowledged, failed, acknowledged twice, late -- are what the verdict
counts, with no cluster; bad ``--client`` arguments are one line and exit 2."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

from impl.harness.chaos.clients import Delivery, LogRecords, OnDelivery
from impl.harness.chaos.schedule import PARTITIONS, TOPIC
from impl.harness.chaos.verdict import Verdict, judge
from impl.harness.chaos.workload import Ledger, Workload
from impl.harness.cli.main import main

SENDS = 12


class FakeClient:
    """A client whose fate for each value is scripted: ``ack`` (appended once, reported
    acknowledged), ``fail`` (not appended, reported failed), ``report-twice`` (appended once,
    its acknowledgement reported twice), ``append-twice`` (a retry appended again, reported
    once), ``unplaced`` (appended, acknowledged without an offset); with ``late`` every
    report waits for :meth:`flush`.  It stops the workload after ``SENDS`` sends."""

    name = "fake"

    def __init__(self, fates: dict[int, str], stop: threading.Event, late: bool = False) -> None:
        self.fates, self.stop, self.late = fates, stop, late
        self.logs: dict[int, LogRecords] = defaultdict(list)
        self.pending: list[tuple[OnDelivery, Delivery]] = []
        self.sent = 0

    def _append(self, p: int, value: str) -> int:
        self.logs[p].append((len(self.logs[p]), 0, value))
        return len(self.logs[p]) - 1

    def send(self, topic: str, partition: int, value: str, on_delivery: OnDelivery) -> None:
        fate = self.fates.get(self.sent, "ack")
        self.sent += 1
        if fate == "fail":
            reports = [Delivery(topic, partition, value, error="NOT_ENOUGH_REPLICAS")]
        else:
            offset = self._append(partition, value)
            if fate == "append-twice":
                self._append(partition, value)
            ack = Delivery(topic, partition, value, -1 if fate == "unplaced" else offset, 0)
            reports = [ack, ack] if fate == "report-twice" else [ack]
        self.pending += [(on_delivery, d) for d in reports]
        if not self.late:
            self.flush(0)
        if self.sent >= SENDS:
            self.stop.set()

    def flush(self, timeout: float) -> int:
        while self.pending:
            on_delivery, d = self.pending.pop(0)
            on_delivery(d)
        return 0

    def read_all(self, topic: str, partitions: int) -> tuple[dict[int, LogRecords], list[str]]:
        return {p: list(self.logs[p]) for p in range(partitions)}, []

    def close(self) -> None:
        pass


def _workload_verdict(fates: dict[int, str], late: bool = False) -> tuple[Ledger, Verdict]:
    ledger, stop = Ledger(), threading.Event()
    client = FakeClient(fates, stop, late)
    Workload("unused:0", ledger, 3, -1, time.monotonic(), stop, client=lambda: client).produce_loop()
    final, problems = client.read_all(TOPIC, PARTITIONS)
    assert problems == []
    logs = {p: {0: records} for p, records in final.items()}
    return ledger, judge(ledger, final, logs, {p: [0] for p in final}, [], [])


def test_the_verdict_counts_what_the_delivery_reports_say() -> None:
    ledger, v = _workload_verdict({2: "fail", 5: "fail"})
    assert (ledger.attempted, ledger.failed) == (SENDS, 2)
    assert (v.attempted, v.acknowledged, v.lost, v.duplicated) == (SENDS, SENDS - 2, 0, 0)
    assert v.passed, v.findings
    assert {a.value for a in ledger.acked} == {f"s3-w{n}" for n in range(SENDS) if n not in (2, 5)}


def test_a_write_acknowledged_twice_is_a_duplicate() -> None:
    _ledger, v = _workload_verdict({4: "report-twice"})
    assert v.acknowledged == SENDS and v.duplicated == 1 and v.lost == 0
    assert v.findings == ["value s3-w4 is acknowledged 2 times by the client's delivery reports"]


def test_a_retry_appended_twice_is_a_duplicate_the_idempotent_producer_should_prevent() -> None:
    _ledger, v = _workload_verdict({7: "append-twice"})
    assert v.duplicated == 1 and v.lost == 0
    p = 7 % PARTITIONS
    assert any(f.startswith(f"value s3-w7 is in the final logs 2 times: {TOPIC}-{p}@")
               for f in v.findings), v.findings


def test_reports_outstanding_when_the_workload_stops_are_waited_for() -> None:
    ledger, v = _workload_verdict({1: "fail"}, late=True)
    assert len(ledger.acked) == SENDS - 1 and ledger.failed == 1
    assert v.passed, v.findings


def test_an_acknowledgement_without_an_offset_is_judged_by_its_value() -> None:
    """librdkafka reports a retry answered DUPLICATE_SEQUENCE_NUMBER as delivered, offset
    unknown: the write must be in its partition once, wherever it is."""
    ledger, v = _workload_verdict({3: "unplaced"})
    assert any(a.offset == -1 for a in ledger.acked)
    assert v.passed, v.findings
    lost = Ledger(acked=[a for a in ledger.acked if a.offset == -1])
    assert judge(lost, {p: [] for p in range(PARTITIONS)}, {}, {}, [], []).lost == 1


@pytest.mark.parametrize("argv, message", [
    (["--client", "jvm"], "--client must be one of epochal, confluent, kafka-python, got 'jvm'"),
    (["--client", "confluent", "--acks", "1"], "--client confluent runs the idempotent producer: "
                                               "acks must be all"),
    (["--client", "kafka-python", "--broker-cmd", "b {id} {port} {zookeeper} {data_dir}"],
     "--client kafka-python needs the brokers' Kafka listeners"),
])
def test_bad_client_arguments_are_one_line_and_exit_2(argv: list[str], message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chaos", "--seed", "1", "--duration", "5", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
