"""pyhudi's Spark integration for users: the `hudi` data source and catalog-table helpers.

    import pyhudi.spark
    pyhudi.spark.register(spark)          # once per session (idempotent)
    spark.read.format("hudi").load(path)

Importing this module also registers the source with the active SparkSession, if there is one (cheap: a
registration is a few small calls; nothing is registered, and nothing fails, without a session). Sessions
created later need `register(spark)`. Needs the `spark` extra (pyspark 4.1+ for filter pushdown).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
_REGISTERED = "pyhudi.datasource.registered"


def register(spark: SparkSession) -> None:
    """Register the `hudi` data source with `spark` (classic or Spark Connect); calling it again is a no-op.

    Also turns on Spark's filter pushdown for Python data sources (spark.sql.python.filterPushdown.enabled,
    off by default in Spark 4.1), which the source's partition and statistics pruning needs: with it off,
    Spark refuses to plan a reader that implements pushFilters."""
    from pyhudi.engine.spark.datasource import HudiDataSource

    if spark.conf.get(_REGISTERED, "false") != "true":
        spark.dataSource.register(HudiDataSource)
        spark.conf.set(_REGISTERED, "true")
    spark.conf.set(PUSHDOWN_CONF, "true")


def table(spark: SparkSession, name: str, options: Mapping[str, str] | None = None) -> DataFrame:
    """A catalog table (e.g. synced to a Hive Metastore or Glue by meta sync) read through the `hudi` source.

    Spark resolves such a table's provider `hudi` to this data source but hands the source no options, so
    `spark.table("db.t")` and `SELECT ... FROM db.t` cannot find the table's files (the source then raises
    with a pointer here). This looks the table's location up in the catalog (SHOW TABLE EXTENDED: works
    on classic Spark and Spark Connect) and loads it, as read-optimized when the table is a merge-on-read
    table's `_ro` view (serde property hoodie.query.as.ro.table=true, as Hudi's sync registers it).
    `options` are Hudi's read options. For SQL: `pyhudi.spark.table(spark, "db.t").createOrReplaceTempView("t")`.
    """
    register(spark)
    location, storage = _catalog_entry(spark, name)
    opts = dict(options or {})
    if storage.get("hoodie.query.as.ro.table", "").lower() == "true":
        opts.setdefault("hoodie.datasource.query.type", "read_optimized")
    return spark.read.format("hudi").options(**opts).load(location)


def _catalog_entry(spark: SparkSession, name: str) -> tuple[str, dict[str, str]]:
    """(location, storage properties) of a catalog table, from SHOW TABLE EXTENDED (reads the catalog entry
    only; DESCRIBE TABLE goes through the data source's table and shows no location)."""
    from pyhudi.errors import TableNotFoundError

    database, _, table_name = name.rpartition(".")
    where = f" IN {database}" if database else ""
    found = spark.sql(f"SHOW TABLE EXTENDED{where} LIKE '{table_name.strip('`')}'").collect()
    info: dict[str, str] = {}
    for row in found:
        if str(row["tableName"]) == table_name.strip("`"):
            info = dict(line.split(": ", 1) for line in str(row["information"]).splitlines() if ": " in line)
    location = info.get("Location", "").strip()
    if not location:
        raise TableNotFoundError(f"catalog table {name} not found, or it has no location (SHOW TABLE EXTENDED); "
                                 "read it with spark.read.format('hudi').load(path)")
    return location, _properties(info.get("Storage Properties", ""))


def _properties(text: str) -> dict[str, str]:
    """`[k1=v1, k2=v2]` (SHOW TABLE EXTENDED's rendering of a property map) as a dict."""
    inner = text.strip().removeprefix("[").removesuffix("]")
    pairs = (item.split("=", 1) for item in inner.split(", ") if "=" in item)
    return {k.strip(): v.strip() for k, v in pairs}


def _register_active() -> None:
    try:
        from pyhudi.engine.spark.datasource import active_session
    except ImportError:  # the spark extra is not installed: nothing to register with
        return
    session = active_session()
    if session is not None:
        register(session)


_register_active()

__all__ = ["PUSHDOWN_CONF", "register", "table"]
