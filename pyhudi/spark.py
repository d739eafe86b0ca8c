"""pyhudi's Spark integration for users: the `hudi` data source and catalog-table helpers.

    import pyhudi.spark
    pyhudi.spark.register(spark)          # once per session (idempotent)
    spark.read.format("hudi").load(path)

Importing this module also registers the source with the active SparkSession, if there is one (cheap: a
registration is a few small calls; nothing is registered, and nothing fails, without a session). Sessions
created later need `register(spark)`. Needs the `spark` extra (pyspark 4.1+ for filter pushdown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


def _register_active() -> None:
    try:
        from pyhudi.engine.spark.datasource import active_session
    except ImportError:  # the spark extra is not installed: nothing to register with
        return
    session = active_session()
    if session is not None:
        register(session)


_register_active()

__all__ = ["PUSHDOWN_CONF", "register"]
