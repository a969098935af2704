"""Integration: Apache Kafka 3.9's own command-line tools against an authenticated Epochal
cluster, through the brokers' Kafka listeners (docs/kafka-protocol.md): ``kafka-topics``
(TopicCommand: CreateTopics, Metadata, DeleteTopics) creates and lists a topic, the
console producer writes lines to it, the console consumer reads them back by partition
and offset, with no consumer group -- each configured by ``epochal cluster client-config
--java``."""

from __future__ import annotations

import contextlib
import io
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from impl_testing import REAL_KAFKA

from impl.harness.cli.main import main
from impl.harness.cluster import LocalCluster
from impl.harness.kafka import fetch

pytestmark = [*REAL_KAFKA, pytest.mark.integration]  # (integration also in REAL_KAFKA: the marker scan reads it here)

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
LINES = [f"line {i}" for i in range(50)]


def _java_config(c: LocalCluster, path: Path, user: str = "client") -> Path:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cluster", "client-config", "--data-dir", str(c.data_dir), "--java",
                     "--user", user]) == 0
    path.write_text(out.getvalue())
    return path


def _run(classpath: str, main_class: str, *args: str, stdin: str = "",
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["java", "-Xmx256m", "-cp", classpath, main_class, *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{main_class} {' '.join(args)}: exit {done.returncode}\n" \
                                 f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _topics(classpath: str, bootstrap: str, config: Path, *args: str) -> str:
    return _run(classpath, TOPIC_COMMAND, "--bootstrap-server", bootstrap,
                "--command-config", str(config), *args).stdout


def _listed(classpath: str, bootstrap: str, config: Path) -> set[str]:
    return set(_topics(classpath, bootstrap, config, "--list").split())


def test_kafka_topics_console_producer_and_console_consumer(make_cluster: Any,
                                                            tmp_path: Path) -> None:
    classpath = fetch().classpath
    c = make_cluster(3, min_insync_replicas=2)
    config = _java_config(c, tmp_path / "client.properties")
    bootstrap = c.kafka_bootstrap

    created = _topics(classpath, bootstrap, config, "--create", "--topic", "lines",
                      "--partitions", "1", "--replication-factor", "3")
    assert "Created topic lines." in created
    assert "lines" in _listed(classpath, bootstrap, config)
    with pytest.raises(AssertionError, match="topic lines exists"):
        _topics(classpath, bootstrap, config, "--create", "--topic", "lines",
                "--partitions", "1", "--replication-factor", "3")

    _run(classpath, CONSOLE_PRODUCER, "--bootstrap-server", bootstrap,
         "--producer.config", str(config), "--topic", "lines",
         "--property", "parse.key=true", "--property", "key.separator=:",
         stdin="".join(f"k{i}:{line}\n" for i, line in enumerate(LINES)))
    consumed = _run(classpath, CONSOLE_CONSUMER, "--bootstrap-server", bootstrap,
                    "--consumer.config", str(config), "--topic", "lines", "--partition", "0",
                    "--offset", "earliest", "--max-messages", str(len(LINES)),
                    "--property", "print.key=true", "--property", "key.separator=:")
    assert consumed.stdout.splitlines() == [f"k{i}:{line}" for i, line in enumerate(LINES)]

    _topics(classpath, bootstrap, config, "--alter", "--topic", "lines", "--partitions", "2")
    deadline = time.monotonic() + 20
    while len(_partitions(c, "lines")) != 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_partitions(c, "lines")) == 2

    _topics(classpath, bootstrap, config, "--delete", "--topic", "lines")
    deadline = time.monotonic() + 30
    while "lines" in _listed(classpath, bootstrap, config) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "lines" not in _listed(classpath, bootstrap, config)


def _partitions(c: LocalCluster, topic: str) -> dict[str, Any]:
    return dict(((c.metadata(0) or {}).get("topics") or {}).get(topic) or {})
