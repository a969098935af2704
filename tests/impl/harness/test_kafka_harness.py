"""Real Kafka in the harness, the parts without a JVM: rendered files, profiles, the fetch
and its error paths (with a fake ``mvn``), CreateTopics' encoding, the CLI's one line."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from impl.harness.cli.main import main
from impl.harness.kafka import PROFILES, KafkaFetchError, fetch
from impl.harness.kafka import config as kc
from impl.harness.kafka.fetch import MANIFEST, POM_DIGEST, cached, pom_digest
from impl.harness.kafka.wire import create_topics_request, parse_create_topics_response
from impl.node.auth.zookeeper import ZK_USER, server_jaas
from impl.node.zk import free_port


def settings(profile: str = "ibp-2.6", n: int = 3, broker: int = 2) -> kc.KafkaBrokerSettings:
    return kc.KafkaBrokerSettings(broker_id=broker, port=31002, zookeeper="127.0.0.1:2181",
                                  broker_dir=Path("/data/broker-2"), cluster_size=n,
                                  profile=PROFILES[profile])


def parse(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_server_properties_listen_on_loopback_in_the_chroot_with_acls() -> None:
    props = parse(kc.render_properties(kc.server_properties(settings())))
    assert props["broker.id"] == "2"
    assert props["listeners"] == props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:31002"
    assert props["zookeeper.connect"] == "127.0.0.1:2181/kafka"
    assert props["zookeeper.set.acl"] == "true"
    assert props["log.dirs"] == "/data/broker-2/kafka-logs"
    assert props["zookeeper.session.timeout.ms"] == str(kc.SESSION_TIMEOUT_MS)


def test_internal_topics_never_ask_for_more_replicas_than_brokers() -> None:
    one = kc.server_properties(settings(n=1, broker=1))
    five = kc.server_properties(settings(n=5))
    assert one["offsets.topic.replication.factor"] == one["transaction.state.log.replication.factor"] == "1"
    assert five["offsets.topic.replication.factor"] == "3"


def test_profiles_differ_in_the_protocol_version_and_who_writes_the_isr() -> None:
    old = kc.server_properties(settings("ibp-2.6"))
    new = kc.server_properties(settings("3.9"))
    assert old["inter.broker.protocol.version"] == "2.6"
    assert "inter.broker.protocol.version" not in new
    assert {k: v for k, v in old.items() if k != "inter.broker.protocol.version"} == new
    assert PROFILES["ibp-2.6"].leader_writes_isr
    assert not PROFILES["3.9"].leader_writes_isr
    assert not kc.KafkaProfile("x", "2.7-IV2", "").leader_writes_isr
    assert kc.DEFAULT_PROFILE in PROFILES


def test_log4j_routes_each_trace_logger_to_its_own_file_at_its_level() -> None:
    text = kc.log4j_properties(Path("/data/broker-2/logs"))
    props = parse(text)
    expected = {"state.change.logger": ("TRACE", "stateChange", "state-change.log"),
                "kafka.controller": ("TRACE", "controller", "controller.log"),
                "kafka.cluster.Partition": ("DEBUG", "partition", "partition.log"),
                "kafka.request.logger": ("DEBUG", "request", "kafka-request.log")}
    for logger, (level, appender, file_name) in expected.items():
        assert props[f"log4j.logger.{logger}"] == f"{level}, {appender}"
        assert props[f"log4j.additivity.{logger}"] == "false"
        assert props[f"log4j.appender.{appender}.File"] == f"/data/broker-2/logs/{file_name}"
    assert props["log4j.rootLogger"] == "INFO, server"
    assert props["log4j.appender.server.File"] == "/data/broker-2/logs/server.log"
    assert "%d{ISO8601}" in props["log4j.appender.stateChange.layout.ConversionPattern"]


def test_jaas_files_name_one_identity_on_both_sides() -> None:
    client, server = kc.client_jaas(ZK_USER, "pw1"), server_jaas("pw1")
    assert client.startswith("Client {") and 'username="epochal-cluster"' in client and 'password="pw1"' in client
    assert server.startswith("Server {") and 'user_epochal-cluster="pw1"' in server


def test_jvm_args_run_kafka_with_the_brokers_files() -> None:
    s = settings()
    args = kc.broker_jvm_args(s, "/jars/a.jar:/jars/b.jar", heap_mb=300)
    assert args[-2:] == ["kafka.Kafka", "/data/broker-2/server.properties"]
    assert args[args.index("-cp") + 1] == "/jars/a.jar:/jars/b.jar"
    assert "-Xmx300m" in args
    assert "-Dlog4j.configuration=file:/data/broker-2/log4j.properties" in args
    assert "-Djava.security.auth.login.config=/data/broker-2/jaas.conf" in args


def test_create_topics_request_is_kafkas_v2_frame() -> None:
    frame = create_topics_request("t", 2, 3, correlation_id=7, timeout_ms=500)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    assert struct.unpack_from(">hhi", frame, 4) == (19, 2, 7)
    client = b"epochal-harness"
    body = frame[4 + 8 + 2 + len(client):]
    assert body == (struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ihii", 2, 3, 0, 0)
                    + struct.pack(">i?", 500, False))


def test_create_topics_request_with_an_assignment_places_each_replica() -> None:
    frame = create_topics_request("t", 1, 3, correlation_id=7, timeout_ms=500, assignment=[[2, 1, 3]])
    client = b"epochal-harness"
    body = frame[4 + 8 + 2 + len(client):]
    assert body == (struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ihi", -1, -1, 1)
                    + struct.pack(">iiiii", 0, 3, 2, 1, 3) + struct.pack(">i", 0)
                    + struct.pack(">i?", 500, False))


def test_create_topics_response_names_each_topics_error() -> None:
    payload = (struct.pack(">iii", 7, 0, 2) + struct.pack(">h", 1) + b"a" + struct.pack(">hh", 0, -1)
               + struct.pack(">h", 1) + b"b" + struct.pack(">hh", 41, 3) + b"not")
    assert parse_create_topics_response(payload) == {"a": (0, None), "b": (41, "not")}


def fake_mvn(tmp_path: Path, script: str) -> Path:
    """A ``mvn`` on PATH that runs ``script`` (sh) and logs each call to calls.txt."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    mvn = bin_dir / "mvn"
    mvn.write_text(f"#!/bin/sh\necho call >> {tmp_path / 'calls.txt'}\n{script}\n")
    mvn.chmod(0o755)
    return mvn


def test_a_failing_resolution_is_one_line_and_leaves_no_cache(tmp_path: Path) -> None:
    mvn = fake_mvn(tmp_path, 'echo "\x1b[0m[ERROR] Failed to execute goal on project real-kafka: '
                             'Could not resolve dependencies: no route to repo.maven.apache.org"\n'
                             'echo "[ERROR] To see the full stack trace"\nexit 1')
    with pytest.raises(KafkaFetchError) as err:
        fetch("3.9.2", root=tmp_path / "cache", mvn=str(mvn))
    message = str(err.value)
    assert "\n" not in message
    assert message.endswith("(exit 1): Could not resolve dependencies: no route to repo.maven.apache.org")
    assert not (tmp_path / "cache" / "kafka-3.9.2").exists()


def test_a_resolution_is_cached_and_the_second_fetch_runs_nothing(tmp_path: Path) -> None:
    script = ('for a in "$@"; do case $a in -DoutputDirectory=*) d=${a#-DoutputDirectory=};; '
              '-Dkafka.version=*) v=${a#-Dkafka.version=};; esac; done\n'
              'touch "$d/kafka_2.13-$v.jar" "$d/kafka-clients-$v.jar" "$d/reload4j-1.2.25.jar"')
    mvn = fake_mvn(tmp_path, script)
    first = fetch("3.9.1", root=tmp_path / "cache", mvn=str(mvn))
    assert not first.cached
    assert [j.name for j in first.jars] == ["kafka-clients-3.9.1.jar", "kafka_2.13-3.9.1.jar",
                                            "reload4j-1.2.25.jar"]
    assert all(j.exists() for j in first.jars)
    second = fetch("3.9.1", root=tmp_path / "cache", mvn=str(mvn))
    assert second.cached and second.jars == first.jars
    assert (tmp_path / "calls.txt").read_text().count("call") == 1
    digest = first.directory / POM_DIGEST
    assert digest.read_text().strip() == pom_digest()
    digest.write_text("0" * 64 + "\n")  # resolved from another pom.xml: resolved again
    assert cached("3.9.1", root=tmp_path / "cache") is None
    third = fetch("3.9.1", root=tmp_path / "cache", mvn=str(mvn))
    assert not third.cached and (tmp_path / "calls.txt").read_text().count("call") == 2
    third.jars[0].unlink()  # an incomplete cache is no cache
    assert cached("3.9.1", root=tmp_path / "cache") is None
    assert (third.directory / MANIFEST).exists()


def test_a_successful_mvn_without_kafkas_jar_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KafkaFetchError, match="no kafka_2.13-3.9.2.jar"):
        fetch("3.9.2", root=tmp_path / "cache", mvn=str(fake_mvn(tmp_path, "exit 0")))


def test_a_version_that_is_not_one_is_refused_before_maven_runs(tmp_path: Path) -> None:
    with pytest.raises(KafkaFetchError, match="not a Kafka release version"):
        fetch("../3.9", root=tmp_path / "cache", mvn=str(fake_mvn(tmp_path, "exit 0")))
    assert not (tmp_path / "calls.txt").exists()


def test_cli_fetch_without_maven_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EPOCHAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["kafka", "fetch", "--version", "3.9.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("epochal kafka fetch: error: mvn not found on PATH: install Maven 3.8 or later "
                       "(Debian: apt-get install maven) to fetch Kafka's jars")


def test_cli_fetch_reports_a_failed_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    fake_mvn(tmp_path, 'echo "[ERROR] Failed to execute goal on project real-kafka: offline"; exit 1')
    monkeypatch.setenv("EPOCHAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert main(["kafka", "fetch", "--version", "3.9.0", "--json"]) == 2
    captured = capsys.readouterr()
    assert '"error": "mvn could not resolve org.apache.kafka:kafka_2.13:3.9.0 (exit 1): offline"' in captured.out
    assert captured.err.startswith("resolving org.apache.kafka:kafka_2.13:3.9.0 with Maven into ")


def test_cluster_start_refuses_options_kafka_does_not_have(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "start", "--engine", "kafka", "--insecure", "--tls", "--brokers", "1",
                 "--zk-port", str(free_port()), "--port-base", str(free_port())]) == 2
    assert "--insecure, --tls not supported with --engine kafka" in capsys.readouterr().err
