"""``epochal cluster client-config``: a Kafka client's properties for a running cluster.

Prints, in the properties format librdkafka and Kafka's Java clients read, what a Kafka
client needs to reach the cluster in ``--data-dir`` through its brokers' Kafka listeners
(docs/kafka-protocol.md): ``bootstrap.servers`` from ``cluster.json``, and -- unless the
cluster runs ``--insecure`` -- SCRAM-SHA-256 with a client user's password derived from the
cluster's secret (docs/security.md), and the cluster CA where it runs TLS.

librdkafka (and confluent-kafka) read ``sasl.username``/``sasl.password`` and
``ssl.ca.location``; Kafka's Java clients and tools (``--command-config``,
``--producer.config``, ``--consumer.config``) read neither, so ``--java`` prints their
forms instead: the credentials as a ``sasl.jaas.config`` line for Kafka's
``ScramLoginModule``, and the CA as a PEM trust store.
"""

from __future__ import annotations

import argparse
from typing import Any

from impl.harness.cli.errors import UsageError
from impl.harness.cluster import kafka_client_properties
from impl.node.auth.credentials import valid_name

DESCRIPTION = ("print a Kafka client's properties (bootstrap.servers, security.protocol, "
               "sasl.*) for the cluster in --data-dir, for librdkafka or Kafka's Java clients")


SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def java_properties(properties: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """librdkafka's properties as Kafka's Java clients name them: the SASL user and
    password as one JAAS line, the CA as a PEM trust store; the rest unchanged."""
    given = dict(properties)
    out: list[tuple[str, str]] = []
    for key, value in properties:
        if key == "sasl.username":
            out.append(("sasl.jaas.config",
                        f"{SCRAM_LOGIN_MODULE} required username={_jaas_quoted(value)} "
                        f"password={_jaas_quoted(given['sasl.password'])};"))
        elif key == "ssl.ca.location":
            out += [("ssl.truststore.type", "PEM"), ("ssl.truststore.location", value)]
        elif key != "sasl.password":
            out.append((key, value))
    return out


def _jaas_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _command(args: argparse.Namespace) -> int:
    if not valid_name(args.user):
        raise UsageError(f"--user {args.user!r}: letters, digits, '.', '_' and '-', at most 64")
    try:
        properties = kafka_client_properties(args.data_dir, args.user)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for key, value in java_properties(properties) if args.java else properties:
        print(f"{key}={value}")
    return 0


def register(cluster_actions: Any) -> None:
    """Add ``client-config`` to ``epochal cluster``'s actions."""
    p = cluster_actions.add_parser("client-config", help=DESCRIPTION, description=DESCRIPTION)
    p.add_argument("--data-dir", required=True, metavar="DIR",
                   help="the data dir of the running `epochal cluster start`")
    p.add_argument("--user", default="client",
                   help="the client user whose password to print (default: client); any name "
                        "is a user, its password derived from the cluster's secret")
    p.add_argument("--java", action="store_true",
                   help="the properties as Kafka's Java clients and tools read them "
                        "(sasl.jaas.config, a PEM trust store), for --command-config and the like")
    p.set_defaults(func=_command)
