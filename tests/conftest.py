"""The fixture that both the implementation's tests (tests/impl/) and the benchmarks' tests
(tests/bench/) use: one real ZooKeeper per session.  The clusters over it are in
tests/impl/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from impl.node.auth.credentials import ClusterSecret
from impl.node.zk import EmbeddedZooKeeper


@pytest.fixture(scope="session")
def zookeeper_key() -> bytes:
    """The key of the session ZooKeeper's secret."""
    return ClusterSecret.new_key()


@pytest.fixture(scope="session")
def zookeeper(zookeeper_key: bytes) -> Iterator[EmbeddedZooKeeper]:
    """Admits only its secret's SASL user: the clusters over it share that secret
    (tests/impl/conftest.py), as clusters on one ensemble must (docs/security.md)."""
    server = EmbeddedZooKeeper(tick_time_ms=200, secret=ClusterSecret(zookeeper_key)).start()
    try:
        yield server
    finally:
        server.stop()
