"""The Spark session of the whole test run (tests/conftest.py), with the test judges shipped
to its executors."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(spark):
    """The process's one session (tests/conftest.py); Python workers do not have tests/ on
    their path, so the test judges are shipped to them."""
    import conform_judges

    spark.sparkContext.addPyFile(conform_judges.__file__)
    return spark
