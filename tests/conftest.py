"""The fixture that both the implementation's tests (tests/impl/) and the benchmarks' tests
(tests/bench/) use: one real ZooKeeper per session.  The clusters over it are in
tests/impl/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from impl.node.zk import EmbeddedZooKeeper


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[EmbeddedZooKeeper]:
    server = EmbeddedZooKeeper(tick_time_ms=200).start()
    try:
        yield server
    finally:
        server.stop()
