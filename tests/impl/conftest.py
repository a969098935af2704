"""Fixtures for the implementation's integration tests (tests/impl/node/ and
tests/impl/harness/): a chroot of the session's ZooKeeper per test (the ``zookeeper`` fixture,
tests/conftest.py), and local clusters of real broker processes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from impl.harness.cluster import LocalCluster
from impl.node.auth.credentials import ClusterSecret
from impl.node.zk import EmbeddedZooKeeper, connect

# short timeouts so failures are detected in ~2 s (ZooKeeper tickTime 200 ms)
FAST = {
    "zk_session_timeout_s": 2.0,
    "replica_lag_time_ms": 1500,
    "fetch_max_wait_ms": 100,
    "reassign_interval_s": 0.3,
    "controller_request_timeout_s": 2.0,
}


@pytest.fixture
def zk_chroot(zookeeper: EmbeddedZooKeeper, zookeeper_key: bytes,
              monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh ``host:port/chroot`` per test, so tests never see each other's znodes.  A
    cluster this test starts over it gets the session ZooKeeper's secret: the ensemble
    admits only that secret's SASL user (impl.node.auth.zookeeper)."""
    monkeypatch.setattr(ClusterSecret, "new_key", staticmethod(lambda: zookeeper_key))
    root = f"/test-{uuid.uuid4().hex[:8]}"
    zk = connect(zookeeper.hosts, acl=zookeeper.acl)
    zk.ensure_path(root)
    zk.stop()
    zk.close()
    return zookeeper.hosts + root


@pytest.fixture
def make_cluster(tmp_path: Path, zk_chroot: str) -> Iterator[Callable[..., LocalCluster]]:
    clusters: list[LocalCluster] = []

    def make(brokers: int = 3, **settings: Any) -> LocalCluster:
        # an insecure cluster (no secret) runs its own ZooKeeper: the session's admits only
        # its secret's SASL user
        c = LocalCluster(tmp_path / f"cluster{len(clusters)}", brokers=brokers,
                         zookeeper=None if settings.get("insecure") else zk_chroot,
                         **{**FAST, **settings})
        clusters.append(c)
        return c.start()

    yield make
    for c in clusters:
        # the test is over: no need for each broker's controlled shutdown -- unless coverage
        # is measured across the brokers (bench/impl_coverage.py): a SIGKILL saves no data
        c.stop(graceful="COVERAGE_PROCESS_START" in os.environ)
