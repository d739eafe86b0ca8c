"""Background table services put their Spark jobs in the configured FAIR scheduler pool; with no Spark
loaded they never import it (the in-process engine's writers use the same background module)."""

from __future__ import annotations

from pyhudi.services import background


def test_background_job_runs_in_the_scheduler_pool(spark, tmp_path):
    sc = spark.sparkContext

    def job() -> tuple[str | None, str | None]:
        return sc.getLocalProperty("spark.scheduler.pool"), sc.getLocalProperty("spark.job.description")

    table = str(tmp_path / "t-ü/p=1")  # a table URI with unicode and a `/`-separated partition-like path
    fut = background.submit(table, "compaction", job, pool="hoodiecompact")
    assert fut is not None
    assert fut.result(timeout=60) == ("hoodiecompact", "pyhudi background compaction")
    fut = background.submit(table, "clustering", job, pool=None)  # no pool: Spark's default pool
    assert fut is not None
    pool, description = fut.result(timeout=60)
    assert pool is None and description == "pyhudi background clustering"
    background.wait(table)
