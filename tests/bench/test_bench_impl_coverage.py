"""The impl/ coverage measurement counts what the broker processes run, not only the test
process: a suite whose only impl/ code runs inside brokers (a real cluster that elects a
leader) must show the controller's election code as covered -- if the subprocess hook broke,
the measurement would silently report the test process alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.impl_coverage import main

ONE_CLUSTER_TEST = "tests/impl/harness/test_cluster.py::test_exactly_one_controller_is_elected_and_a_new_one_with_a_higher_epoch_after_kill"


@pytest.mark.integration
@pytest.mark.slow
def test_branch_coverage_includes_the_code_only_broker_processes_run(tmp_path: Path) -> None:
    assert main(["--label", "probe", "--out", str(tmp_path), "--", ONE_CLUSTER_TEST,
                 "-q", "-p", "no:cacheprovider", "-n", "0"]) == 0
    per_file = json.loads((tmp_path / "probe-impl_node.json").read_text())["files"]
    election = next(f for name, f in per_file.items() if name.endswith("controller/failover.py"))
    assert election["summary"]["covered_lines"] > 0  # the controller runs only in a broker process
    figures = json.loads((tmp_path / "probe.json").read_text())
    node = figures["impl_node"]
    assert 0 < node["branches_taken"] < node["branches"]


def test_a_bad_label_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--label", "../x", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--label" in err
