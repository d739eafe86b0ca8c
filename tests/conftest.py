"""One SparkSession per test run (local[2], UI off, few shuffle partitions)."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.pop("HUDI_CONF_DIR", None)


@pytest.fixture(scope="session")
def spark():
    from pyhudi.spark_env import create_session

    session = create_session("local[2]", app_name="pyhudi-tests",
                             conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"})
    yield session
    session.stop()
