"""The data directory's layout is named in one place (impl.node.layout), and its table in
docs/implementation.md, the paths its API builds and the files a broker writes agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from impl.harness.cluster import read_state
from impl.node import layout
from impl.node.config import BrokerConfig
from impl.node.layout import DataDir, PartitionDir
from impl.node.log import PartitionLog
from impl.node.tracing import HARNESS_NODE, trace_path

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = {"broker": 2, "topic": "orders", "partition": 1, "base_offset": 0}


def test_the_docs_show_the_layout_table():
    assert layout.markdown() in (ROOT / "docs" / "implementation.md").read_text()


def _api_paths(d: DataDir) -> list[Path]:
    b = d.broker(SAMPLE["broker"])
    p = b.partition(SAMPLE["topic"], SAMPLE["partition"])
    return [d.cluster_state, d.fault_plan, d.trace(SAMPLE["broker"]), d.trace(HARNESS_NODE), d.verdicts,
            d.cluster_secret, d.tls, d.zookeeper.path, b.out, b.config_json, b.zk_session, b.disk_fault,
            b.step_permits, b.admin_audit, p.segment(SAMPLE["base_offset"]),
            p.offset_index(SAMPLE["base_offset"]), p.hw_checkpoint, p.log_start_offset_checkpoint,
            p.leader_epoch_checkpoint, p.metadata]


def test_every_path_the_api_builds_is_a_row_of_the_table_and_back():
    """The table's rows, filled in, are exactly the paths the API builds (a segment's name is
    its base offset in 20 digits)."""
    values = {**SAMPLE, "base_offset": f"{SAMPLE['base_offset']:020d}"}
    rows = {Path("/data") / path.format(**values) for path, _ in layout.LAYOUT}
    assert set(_api_paths(DataDir(Path("/data")))) == rows


def test_a_broker_writes_where_the_layout_says(tmp_path):
    cfg = BrokerConfig(broker_id=2, port=1, zookeeper="unused:1", data_dir=tmp_path)
    files = cfg.files.partition("orders", 1)
    log = PartitionLog.open(files.path)
    log.set_topic_id(7)
    log.assign_epoch(1)
    log.append(1, b"v")
    log.set_hw(1)
    log.close()
    assert files.path == tmp_path / "broker-2" / "logs" / "orders-1"
    assert files.segments() == [files.segment(0)]
    assert files.metadata.read_text() == "topic_id: 7\n"
    assert files.leader_epoch_checkpoint.read_text() == "1 0\n"
    assert files.hw_checkpoint.read_text() == "1\n"
    assert trace_path(tmp_path, 2) == tmp_path / "traces" / "broker-2.jsonl"


@pytest.mark.parametrize(("name", "parsed"), [("orders-1", ("orders", 1)), ("a-b-12", ("a-b", 12)),
                                               ("orders", None), ("orders-x", None), ("-3", None)])
def test_a_partition_directory_name_is_read_back(name, parsed):
    assert PartitionDir.parse(name) == parsed


def test_cluster_state_has_one_atomic_writer(tmp_path):
    d = DataDir(tmp_path)
    with pytest.raises(FileNotFoundError, match="no running cluster recorded"):
        read_state(tmp_path)
    state = {"run_id": "r", "brokers": {"0": {"pid": 1}}}
    d.write_cluster_state(state)
    assert d.cluster_state.read_text() == json.dumps(state, indent=2)
    assert read_state(tmp_path) == state
    assert [p.name for p in tmp_path.iterdir()] == ["cluster.json"]  # no .tmp left behind
