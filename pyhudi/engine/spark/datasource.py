"""The Spark data source named `hudi`, on PySpark 4's Python Data Source API (pyspark.sql.datasource).

    pyhudi.spark.register(spark)
    spark.read.format("hudi").load(path)                     # snapshot, time travel, incremental, RO
    df.write.format("hudi").options(**opts).mode("append").save(path)   # bulk_insert (see datasource_write)
    spark.readStream.format("hudi").load(path)               # commits as they complete

Every method here runs in a Python worker process (schema, reader, writer, commit) or an executor task
(read, write), never next to a SparkSession: the source uses pyhudi's engine-neutral planning, reading and
writing only, so it works the same on classic Spark and on Spark Connect. The pieces: datasource_read.py
(batch reads and filter pushdown), datasource_write.py (batch writes), datasource_stream.py (streaming).
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)

from pyhudi.engine.spark.datasource_read import HudiReader, SourceOptions, table_schema

NAME = "hudi"


class HudiDataSource(DataSource):
    """`format("hudi")`: Hudi's read and write options, plus `storage.<key>` for pyhudi's storage_options."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _opts(self) -> SourceOptions:
        return SourceOptions.parse(self.options)

    def schema(self) -> T.StructType:
        return table_schema(self._opts())

    def reader(self, schema: T.StructType) -> DataSourceReader:
        return HudiReader(self._opts(), schema)

    def writer(self, schema: T.StructType, overwrite: bool) -> DataSourceWriter:
        from pyhudi.engine.spark.datasource_write import make_writer

        return make_writer(self._opts(), schema, overwrite)

    def streamReader(self, schema: T.StructType) -> DataSourceStreamReader:
        from pyhudi.engine.spark.datasource_stream import HudiStreamReader

        return HudiStreamReader(self._opts(), schema)

    def streamWriter(self, schema: T.StructType, overwrite: bool) -> DataSourceStreamWriter:
        from pyhudi.engine.spark.datasource_stream import refuse_stream_write

        raise refuse_stream_write()


def active_session() -> SparkSession | None:
    """The active SparkSession (classic or Connect) of this thread, if any."""
    return SparkSession.getActiveSession()


__all__ = ["NAME", "HudiDataSource", "active_session"]
