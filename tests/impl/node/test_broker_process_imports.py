"""A broker process loads what it serves with, not the test library its codec can feed.

kio registers Hypothesis strategies whenever Hypothesis imports; every broker a cluster
starts would pay for it.  ``python -m impl.node.broker`` keeps it out, and the package's
names still resolve for code that imports them from the package."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.integration
def test_a_broker_process_starts_without_importing_hypothesis() -> None:
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['impl.node.broker', '--help']\n"
        "try:\n"
        "    runpy.run_module('impl.node.broker', run_name='__main__', alter_sys=True)\n"
        "except SystemExit:\n"
        "    pass\n"
        "import impl.node.kafka.codec\n"  # the codec the broker serves Kafka's clients with
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'hypothesis'"
        " and sys.modules[m] is not None))\n"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]"
    assert "usage" in p.stdout.lower()


def test_the_broker_packages_names_resolve_on_first_use() -> None:
    import impl.node.broker as broker
    from impl.node.broker.core import RequestError
    from impl.node.broker.server import Broker, main

    assert (broker.Broker, broker.RequestError, broker.main) == (Broker, RequestError, main)
