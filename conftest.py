"""Repository-wide pytest options.

The slow suite runs only with ``--run-slow`` (``.ci/run`` runs it, after the default suite).

The default suite runs on two pytest-xdist workers (pyproject's ``addopts``).  A Spark
session takes 10-25 s to start and each worker would start its own, so every test that
uses one is put in one xdist group: with ``--dist loadgroup`` they all run in the same
worker, under one session, while the other worker takes the rest.
"""

from __future__ import annotations

import pytest

SPARK_GROUP = pytest.mark.xdist_group("spark")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="also run tests marked slow")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = None if config.getoption("--run-slow") else pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(SPARK_GROUP)
        if skip is not None and "slow" in item.keywords:
            item.add_marker(skip)
