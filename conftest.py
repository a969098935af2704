"""Repository-wide pytest options.

* ``slow``: runs only with ``--run-slow`` (``.ci/run`` runs every one, after the default
  suite, over the whole tests/ tree).
* ``whole_space``: the whole-space differentials and exhaustions that are longer than CI
  allows.  They run only with ``--run-whole-space``, which ``bench/bench_whole_space.py``
  passes; their figures are in docs/benchmarks.md.  CI keeps each one's sampled or reduced
  twin, so every rendering of a rule is still held to the model in CI.
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
    for marker, flag, reason in _GATES:
        if config.getoption(flag):
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)
