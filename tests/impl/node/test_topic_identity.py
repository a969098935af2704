"""The topic-identity rule (question 5, KIP-516) and the id kept beside the log."""

from __future__ import annotations

from pathlib import Path

from impl.node.log import PartitionLog
from impl.node.topic_identity import UNKNOWN, Incarnation, compare


def test_a_request_of_the_same_incarnation_applies() -> None:
    assert compare(120, 120, True) is Incarnation.SAME


def test_a_request_of_an_older_incarnation_is_stale() -> None:
    assert compare(110, 120, True) is Incarnation.STALE_REQUEST
    assert compare(110, 120, False) is Incarnation.STALE_REQUEST


def test_a_log_of_an_older_incarnation_is_stale() -> None:
    assert compare(130, 120, True) is Incarnation.STALE_LOG
    assert compare(130, 120, False) is Incarnation.STALE_LOG


def test_a_log_with_records_written_before_ids_counts_as_older_than_any_incarnation() -> None:
    assert compare(130, None, True) is Incarnation.STALE_LOG


def test_an_empty_log_without_an_id_takes_the_request_s() -> None:
    assert compare(130, None, False) is Incarnation.SAME


def test_a_request_without_an_id_is_not_checked() -> None:
    assert compare(UNKNOWN, 120, True) is Incarnation.SAME
    assert compare(UNKNOWN, None, True) is Incarnation.SAME


def test_the_topic_id_is_kept_beside_the_log_and_read_back_on_open(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    assert log.topic_id is None
    log.append(0, b"v0")
    log.set_topic_id(4294967301)
    log.close()
    assert (tmp_path / "t-0" / "partition.metadata").read_text() == "topic_id: 4294967301\n"
    assert PartitionLog.open(tmp_path / "t-0").topic_id == 4294967301


def test_an_unreadable_id_file_reads_as_no_id(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    (tmp_path / "t-0" / "partition.metadata").write_text("topic_id: x\n")
    log.close()
    assert PartitionLog.open(tmp_path / "t-0").topic_id is None
