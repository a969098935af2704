"""The Go broker (``ports/go``) joins a chaos run through ``--broker-cmd`` (docs/ports.md,
"Go broker"): broker 1 is the Go binary, 0 and 2 the Python brokers, and the run loses no
acknowledged write and every trace group conforms -- judged like any other run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from impl.harness.chaos.run import ChaosRun
from impl.harness.chaos.schedule import PARTITIONS
from impl.harness.cluster import BrokerCommand

PORT = Path(__file__).resolve().parents[2] / "ports" / "go"
BINARY = PORT / "bin" / "epochal-go-broker"
TEMPLATE = f"{BINARY} {{id}} {{port}} {{zookeeper}} {{data_dir}} --config {{config_json}}"

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")]


@pytest.fixture(scope="module")
def go_broker() -> Path:
    """The broker built by ports/go/build.sh (modules from the Go module proxy or its cache;
    a machine that can reach neither skips: that is not the port's failure)."""
    fetched = subprocess.run(["go", "mod", "download"], cwd=PORT, capture_output=True, text=True, timeout=600)
    if fetched.returncode != 0:
        pytest.skip(f"the Go modules could not be fetched: {fetched.stderr.strip()[:200]}")
    built = subprocess.run([str(PORT / "build.sh")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    return BINARY


def test_the_go_codec_reads_and_writes_the_python_references_bytes(go_broker: Path) -> None:
    """``go test`` in ports/go: the tag's value encoding and the record batches against bytes
    the Python codec wrote, and the KIP-320 truncation rounds."""
    tested = subprocess.run(["go", "test", "./..."], cwd=PORT, capture_output=True, text=True, timeout=600)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_go_broker_passes_the_rule_vectors_it_has_rules_for(tmp_path: Path, go_broker: Path) -> None:
    """``go test -run Vectors`` in ports/go on the vectors ``epochal vectors`` writes: the
    KIP-320 truncation rounds, the high watermark and the ISR through the port's own code,
    every case of those families (the truncation family's KIP-279 and KIP-320 cases)."""
    out = tmp_path / "vectors"
    made = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "vectors", "--out", str(out)],
                          cwd=PORT.parents[1], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    truncation = json.loads((out / "truncation.json").read_text())["cases"]
    index = json.loads((out / "index.json").read_text())["families"]
    expected = {"truncation": sum(c["input"]["rule"] in ("kip279", "kip320") for c in truncation),
                "hw_advance": index["hw_advance"]["cases"], "isr": index["isr"]["cases"]}
    tested = subprocess.run(["go", "test", "-run", "Vectors", "-v", "./..."], cwd=PORT, capture_output=True,
                            text=True, timeout=600, env={**os.environ, "EPOCHAL_VECTORS": str(out)})
    assert tested.returncode == 0, tested.stdout[-4000:] + tested.stderr[-2000:]
    ran = dict(re.findall(r"vectors (\w+): (\d+) cases", tested.stdout))
    assert {family: int(n) for family, n in ran.items()} == expected, tested.stdout[-2000:]
    assert all(expected.values()) and "--- SKIP" not in tested.stdout


def test_a_chaos_run_with_the_go_broker_loses_nothing_and_conforms(
        tmp_path: Path, go_broker: Path, spark: Any) -> None:
    """Seed 1, 8 s, insecure (the port does no SCRAM / ZooKeeper SASL): the Go broker leads
    and follows partitions through the faults, and the verdict is the Python brokers'."""
    report = ChaosRun(1, 8, data_dir=tmp_path / "run", spark=spark, insecure=True,
                      broker_cmd=BrokerCommand.parse(TEMPLATE, "1"),
                      log=lambda m: print(m, flush=True)).run()
    v = report.verdict
    trace = (tmp_path / "run" / "traces" / "broker-1.jsonl").read_text()
    assert '"kind":"receive_fetch"' in trace and '"kind":"handle_fetch"' in trace
    assert report.recovered and v.passed, "\n".join(v.findings)
    assert v.lost == 0 and v.acknowledged > 100
    c = report.conformance
    assert c.get("groups", 0) >= PARTITIONS and c["conforming"] == c["groups"], c.get("render")
    assert report.exit_code == 0
