"""``epochal cluster client-config``: a Kafka client's properties for a running cluster.

Prints, in the properties format librdkafka and Kafka's Java clients read, what a Kafka
client needs to reach the cluster in ``--data-dir`` through its brokers' Kafka listeners
(docs/kafka-protocol.md): ``bootstrap.servers`` from ``cluster.json``, and -- unless the
cluster runs ``--insecure`` -- SCRAM-SHA-256 with a client user's password derived from the
cluster's secret (docs/security.md), and the cluster CA where it runs TLS.
"""

from __future__ import annotations

import argparse
from typing import Any

from impl.harness.cli.errors import UsageError
from impl.harness.cluster import kafka_client_properties
from impl.node.auth.credentials import valid_name

DESCRIPTION = ("print a Kafka client's properties (bootstrap.servers, security.protocol, "
               "sasl.*) for the cluster in --data-dir, for librdkafka or Kafka's Java clients")


def _command(args: argparse.Namespace) -> int:
    if not valid_name(args.user):
        raise UsageError(f"--user {args.user!r}: letters, digits, '.', '_' and '-', at most 64")
    try:
        properties = kafka_client_properties(args.data_dir, args.user)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for key, value in properties:
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
    p.set_defaults(func=_command)
