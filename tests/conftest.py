"""The fixtures that tests of several directories use: one real ZooKeeper per session (the
implementation's tests, tests/impl/, and the benchmarks', tests/bench/; the clusters over it
are in tests/impl/conftest.py), and one Spark session per test process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from impl.node.auth.credentials import ClusterSecret
from impl.node.zk import EmbeddedZooKeeper


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that need the Spark session first, each group in its own order: xdist's
    worksteal deals the collection out to its workers in contiguous halves and steals from
    the tail of a queue, so these all run at the start of one worker, and the suite pays
    for one Spark session (``spark`` below) instead of one per worker."""
    items.sort(key=lambda item: "spark" not in getattr(item, "fixturenames", ()))


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


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One Spark session (local[2]) for every test of the process that judges traces or
    searches on Spark: Spark takes 10-25 s to start on this machine, so it starts once per
    xdist worker, not once per module.  Session-scoped, and stopped only at the end: a
    session Spark's ``getOrCreate`` handed to two fixtures must not be stopped by one of them."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from conformance.spark.job import spark_session

    session = spark_session("local[2]", app="epochal-tests")
    yield session
    session.stop()
