"""The Spark session the job runs in, and the SQL settings in force while it runs."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

JOB_SQL_CONF = {
    # Spark's default (4 MB) packs ~32 small trace files per task, so a corpus of many short
    # runs becomes hundreds of tasks, each paying a Python worker round trip.
    "spark.sql.files.openCostInBytes": str(64 * 1024),
    # Above 32 directories Spark lists them with a distributed job, one task per directory:
    # 16 s instead of 0.4 s for 1,500 run directories here.  List on the driver instead.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}
"""SQL settings in force while the job runs (the caller's values are restored after)."""


_LOG4J2 = """\
# Written by conformance.spark.job for local Spark sessions: errors only, so the job's own
# progress and summary are what a user reads (Spark's defaults print WARN lines about the
# host name, native Hadoop libraries and its own log profile on every start).
# PySpark counts as Spark's shell, which announces "Setting default log level" unless its
# logger (one under org.apache.spark) is configured at the root's level: both are ERROR.
rootLogger.level = error
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log4j2() -> str:
    """A log4j2 configuration file for the driver JVM of a local session (written once per
    user into the temporary directory; under spark-submit the cluster's own logging
    configuration is left alone)."""
    path = Path(tempfile.gettempdir()) / f"epochal-spark-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        os.replace(tmp, path)
    return str(path)


def session_running() -> bool:
    """Whether this process already runs a Spark session.  ``getOrCreate`` hands that session
    to whoever asks next, so a caller that asked for one must not stop it when it is done
    unless it was the one that started it (a test run's shared session, a notebook's)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def spark_session(master: str | None = None, app: str = "epochal-conform"):
    """A session for the job: local[2] by default, the submitter's master under spark-submit."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app)
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master:
        builder = builder.master(master)
    elif not under_submit:
        builder = builder.master("local[2]")
    if not under_submit:
        # C1 only: the job's queries are small and many, and the JVM spent more CPU in the
        # C2 compiler (on code Spark generates per query) than running it -- measured: the
        # driver's CPU per 250k-event job 4.7 s -> 1.4 s (docs/conformance.md, How it is fast).
        java_options = f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile={_quiet_log4j2()}"
        builder = (builder.config("spark.driver.extraJavaOptions", java_options)
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "8")
                   .config("spark.driver.memory", os.environ.get("EPOCHAL_SPARK_MEMORY", "2g"))
                   .config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower()))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
