"""Integration: Apache Kafka 3.9's operator tools against an authenticated Epochal cluster,
through the brokers' Kafka listeners (impl.node.broker.kafka_operations), one cluster for
all: ``kafka-topics --describe`` (DescribeConfigs), ``kafka-reassign-partitions --execute``
and ``--verify`` (Alter/ListPartitionReassignments, IncrementalAlterConfigs deleting the
throttles), ``kafka-leader-election`` (ElectLeaders) and ``kafka-configs`` for a user's
quota (Describe/AlterClientQuotas, DescribeUserScramCredentials) -- each effect read back
from the cluster's metadata or the tool's own describe."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from impl_testing import REAL_KAFKA

from impl.harness.kafka import fetch
from tests.impl.node.test_kafka_console_tools import TOPIC_COMMAND, _java_config, _partitions, _run

pytestmark = [*REAL_KAFKA, pytest.mark.integration]

REASSIGN_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECTION_COMMAND = "org.apache.kafka.tools.LeaderElectionCommand"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"


def _refused(classpath: str, main_class: str, *args: str) -> str:
    done = subprocess.run(["java", "-Xmx256m", "-cp", classpath, main_class, *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr


def test_reassign_elect_describe_and_quotas_with_kafkas_tools(make_cluster: Any,
                                                               tmp_path: Path) -> None:
    classpath = fetch().classpath
    c = make_cluster(3, min_insync_replicas=1)
    config = _java_config(c, tmp_path / "client.properties")
    admin = ("--bootstrap-server", c.kafka_bootstrap, "--command-config", str(config))

    _run(classpath, TOPIC_COMMAND, *admin, "--create", "--topic", "moved",
         "--replica-assignment", "0:1")
    described = _run(classpath, TOPIC_COMMAND, *admin, "--describe", "--topic", "moved").stdout
    assert "min.insync.replicas=1" in described and "Replicas: 0,1" in described, described

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moved", "partition": 0, "replicas": [2, 0]}]}))
    executed = _run(classpath, REASSIGN_COMMAND, *admin, "--reassignment-json-file", str(plan),
                    "--execute").stdout
    assert "Successfully started partition reassignment" in executed, executed
    deadline = time.monotonic() + 30
    while True:
        verified = _run(classpath, REASSIGN_COMMAND, *admin, "--reassignment-json-file",
                        str(plan), "--verify").stdout
        if "Reassignment of partition moved-0 is completed" in verified:
            break
        assert time.monotonic() < deadline, verified
        time.sleep(1)
    state = _partitions(c, "moved")["0"]
    assert list(state["replicas"]) == [2, 0] and int(state["leader"]) == 0  # the leader stayed

    election = ("--bootstrap-server", c.kafka_bootstrap, "--admin.config", str(config))
    elected = _run(classpath, ELECTION_COMMAND, *election, "--election-type", "preferred",
                   "--all-topic-partitions").stdout
    assert "Successfully completed leader election (PREFERRED) for partitions moved-0" in elected
    assert int(_partitions(c, "moved")["0"]["leader"]) == 2
    again = _run(classpath, ELECTION_COMMAND, *election, "--election-type", "preferred",
                 "--topic", "moved", "--partition", "0").stdout
    assert "Valid replica already elected for partitions moved-0" in again, again

    quota = ("--entity-type", "users", "--entity-name", "alice")
    as_client = _refused(classpath, CONFIG_COMMAND, *admin, "--alter", *quota, "--add-config",
                         "controller_mutation_rate=5")
    assert "ClusterAuthorizationException" in as_client, as_client
    operator = ("--bootstrap-server", c.kafka_bootstrap, "--command-config",
                str(_java_config(c, tmp_path / "operator.properties", "operator")))
    refused = _refused(classpath, CONFIG_COMMAND, *operator, "--alter", *quota, "--add-config",
                       "producer_byte_rate=1024,controller_mutation_rate=5")
    assert "producer_byte_rate" in refused and "controller_mutation_rate only" in refused, refused
    _run(classpath, CONFIG_COMMAND, *operator, "--alter", *quota, "--add-config",
         "controller_mutation_rate=5")
    shown = _run(classpath, CONFIG_COMMAND, *admin, "--describe", *quota).stdout
    assert "Quota configs for user-principal 'alice' are controller_mutation_rate=5.0" in shown, shown
    assert "SCRAM-SHA-256=iterations=4096" in shown, shown
