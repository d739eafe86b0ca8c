"""Reading an explicit list of parquet files through Spark's own reader.

Spark lists each given path again; above
`spark.sql.sources.parallelPartitionDiscovery.threshold` paths it launches a
whole Spark job just for that. We raise the threshold for the duration of the
call, because our paths come from a listing we already did.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def read_parquet_files(spark: SparkSession, paths: Sequence[str], schema: StructType | str) -> DataFrame:
    previous = spark.conf.get(_THRESHOLD, None)
    spark.conf.set(_THRESHOLD, str(max(32, len(paths) + 1)))
    try:
        return spark.read.schema(schema).parquet(*paths)
    finally:
        if previous is None:
            spark.conf.unset(_THRESHOLD)
        else:
            spark.conf.set(_THRESHOLD, previous)
