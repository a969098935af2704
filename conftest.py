"""Repository-wide pytest options.

* ``slow``: runs only with ``--run-slow`` (``.ci/run`` runs every one, after the default
  suite, over the whole tests/ tree).
* ``whole_space``: the whole-space differentials and exhaustions that are longer than CI
  allows.  They run only with ``--run-whole-space``, which ``bench/bench_whole_space.py``
  passes; their figures are in docs/benchmarks.md.  CI keeps each one's sampled or reduced
  twin, so every rendering of a rule is still held to the model in CI.
* ``longest``: a slow test of a minute or more on the CI machine.  With ``--run-slow`` these
  start first: the two xdist workers take tests from the front of their queues and an idle
  one steals from the back of the other's, so a long test left near the end of the order
  runs alone while the other worker waits for it.  Started first, they end among the
  others, and the suite ends on short tests.
"""

from __future__ import annotations

import pytest

_GATES = (("slow", "--run-slow", "slow: run with --run-slow"),
          ("whole_space", "--run-whole-space", "whole space: run by bench/bench_whole_space.py"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="also run tests marked slow")
    parser.addoption("--run-whole-space", action="store_true", default=False,
                     help="also run tests marked whole_space (bench/bench_whole_space.py passes it)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        items.sort(key=lambda item: item.get_closest_marker("longest") is None)  # stable: the rest keep their order
    for marker, flag, reason in _GATES:
        if config.getoption(flag):
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)
