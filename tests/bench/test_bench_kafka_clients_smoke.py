"""The Kafka-client benchmarks at a tiny size, as a user runs them (a script in bench/): the
memory bench really reads a broker's memory (a bound of 1 MB is exceeded, exit 1, after
every record came back), and the clients bench reads back, in order, what each client wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka", reason="confluent-kafka (the dev extra) is not installed")

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=120, check=False)


def test_broker_memory_bench_measures_the_broker_and_enforces_its_bound() -> None:
    run = _bench("bench_broker_memory.py", "--mib", "2", "--bound", "1")
    assert run.returncode == 1, run.stderr
    assert "consumed 2 MiB" in run.stdout
    assert run.stderr.strip().splitlines()[-1] == "bench_broker_memory: broker 0 peaked over 1 MB"
    leader = next(line for line in run.stdout.splitlines() if line.startswith("0 (leader)"))
    assert all(int(mib) > 1 for mib in leader.split()[2:])  # every phase's peak is a real figure


def test_kafka_clients_bench_runs_each_client_at_each_acks() -> None:
    run = _bench("bench_kafka_clients.py", "--records", "300", "--clients", "confluent-kafka,epochal")
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines()[-4:]]
    assert [(r[0], r[1]) for r in rows] == [("confluent-kafka", "1"), ("epochal", "1"),
                                            ("confluent-kafka", "all"), ("epochal", "all")]
    assert all(float(r[3]) > 0 and float(r[4]) > 0 for r in rows)
