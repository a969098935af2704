"""One Spark session (local[2]) for the whole test run, and trace-writing helpers."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    """Session-scoped: Spark takes 10-25 s to start on this machine; start it once."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import conform_judges

    from conformance.spark.job import spark_session

    session = spark_session("local[2]", app="epochal-tests")
    # Python workers do not have tests/ on their path: ship the test judges to them.
    session.sparkContext.addPyFile(conform_judges.__file__)
    yield session
    session.stop()
