"""Helpers shared by the implementation's integration tests."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from impl.node import zk as zkl


def wait_until(cond: Callable[[], Any], timeout: float, what: str, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def trace_events(data_dir: Path) -> list[dict[str, Any]]:
    """Every complete event of a running cluster's traces: a broker may be writing a line as
    they are read, so a last line without its newline is not an event yet."""
    events = []
    for f in sorted((data_dir / "traces").glob("*.jsonl")):
        text = f.read_text()
        complete = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
        for line in complete.splitlines():
            if line.strip():
                events.append(json.loads(line))
    return events


def three_brokers_and_their_roles(make_cluster: Callable[..., Any]) -> tuple[Any, Any, int, int, int]:
    """A three-broker cluster (min.insync.replicas 1), a ZooKeeper client signed in as it,
    the controller's id and the two other broker ids: a test that kills one of the two
    keeps the controller out of its story."""
    c = make_cluster(3, min_insync_replicas=1)
    zk = c.zk_client()
    ctrl = int(zkl.decode(zk.get(zkl.CONTROLLER)[0])["brokerid"])
    first, second = [b for b in sorted(c.configs) if b != ctrl][:2]
    return c, zk, ctrl, first, second


def isr(c: Any) -> tuple[int, ...]:
    """The ISR ZooKeeper holds for the recordings' topic's partition 0."""
    from impl.harness.recordings import TOPIC

    zk = c.zk_client()
    try:
        data, _ = zk.get(zkl.leader_and_isr_path(TOPIC, 0))
        return zkl.LeaderAndIsr.from_json(data).isr
    finally:
        zk.stop()
        zk.close()


def wait_through_errors(cond: Callable[[], Any], timeout: float, what: str) -> None:
    """``wait_until`` for a condition that may raise while a znode or a broker is briefly
    absent: an exception counts as not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except Exception:  # noqa: BLE001 - a znode or a broker briefly absent
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{what}: not within {timeout} s")


def log_dir(c: Any, broker: int) -> Path:
    """The recordings' topic's partition 0 on ``broker``."""
    from impl.harness.recordings import TOPIC

    return c.data_dir / f"broker-{broker}" / "logs" / f"{TOPIC}-0"


def zk_session_reads(hosts: str, **sign_in: Any) -> bool:
    """Whether a kazoo client signing in with ``sign_in`` (``auth_data=``, ``sasl_options=``,
    or nothing) opens a session on ``hosts`` and reads ``/``."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=hosts, timeout=3.0, connection_retry={"max_tries": 0}, **sign_in)
    try:
        zk.start(timeout=5.0)
        zk.get("/")
        return True
    except Exception:  # noqa: BLE001 - kazoo ends a refused sign-in in several ways
        return False
    finally:
        zk.stop()
        zk.close()


KAFKA_JARS = pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None,
                                reason="needs mvn and java (docs/kafka.md)")
"""The mark of a test that runs Kafka's own jars (brokers or command-line tools)."""
REAL_KAFKA = [pytest.mark.slow, pytest.mark.integration, KAFKA_JARS]
"""The marks of a test that runs real Kafka: slow (the jars come from Maven Central, once)."""


@contextlib.contextmanager
def real_kafka(directory: Path, profile: str, **settings: Any) -> Iterator[Any]:
    """Three real Kafka brokers at ``profile``, stopped however the test ends."""
    from impl.harness.kafka import KafkaCluster, fetch

    cluster = KafkaCluster(directory, brokers=3, profile=profile, jars=fetch(), **settings)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


VERDICT_SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "verdict.schema.json"


def verdict_object(text: str) -> dict[str, Any]:
    """A command's ``--json`` output, held to docs/verdict.schema.json (the verdict object,
    or the error object of a command that could not run); the document, parsed."""
    import jsonschema

    schema = json.loads(VERDICT_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    doc = json.loads(text)
    jsonschema.Draft202012Validator(schema).validate(doc)
    return doc



def drive_mutant(tmp_path: Path, file: str, line: str, seeded: str, *drive_args: str) -> tuple[int, dict[str, Any]]:
    """``epochal drive`` against a copy of the source with one line seeded wrong (``line``,
    which must be there, replaced by ``seeded``), its brokers started from the copy: the exit
    code and the JSON report."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    src = tmp_path / "src"
    # Only the packages a broker imports: the rest of the checkout (caches, other tests' scratch
    # directories) changes under a parallel run, and a file vanishing mid-copy fails the copy.
    for part in ("model", "properties", "impl", "traces", "conformance"):
        shutil.copytree(root / part, src / part,
                        ignore=shutil.ignore_patterns("__pycache__", ".hypothesis", "data", "*.orig", "*.so"))
    shutil.copy2(root / "pyproject.toml", src / "pyproject.toml")
    target = src / file
    assert line in target.read_text(), line
    target.write_text(target.read_text().replace(line, seeded, 1))
    proc = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "drive", *drive_args, "--json", "--quiet"],
                          capture_output=True, text=True, cwd=src, env=dict(os.environ, PYTHONPATH=str(src)),
                          timeout=600)
    return proc.returncode, json.loads(proc.stdout)


def drive_path_file(path: Path, config: dict[str, Any], steps: list[tuple[Any, Any]]) -> Path:
    """``steps`` ((Step, state before) pairs of a hand-built model path) written to ``path``
    in the format ``epochal drive --path`` reads, a LeaderAndISR argument as its fields."""
    from model.state import LeaderAndIsr

    path.write_text(json.dumps({"config": config, "steps": [
        {"action": step.action, "args": [a._asdict() if isinstance(a, LeaderAndIsr) else a for a in step.args]}
        for step, _ in steps]}))
    return path
