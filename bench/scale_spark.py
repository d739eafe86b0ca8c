"""The Spark engine's cost follows the work (issue 31, item 1), as same-run ratios on `local[2]`.

    .venv/bin/python bench/scale_spark.py [--runs 3] [--work-dir DIR] [--profile-dir DIR]

The harness and tables of bench/scale.py (`--only spread_spark,spark_runner`), saved as their own results
(`bench/results/scale_spark-*.json`) so that running them alone keeps scale.py's in-process figures:

* spread upsert on Spark: 1,000 rows (half updates) over every partition, `pyhudi.write(spark_df, ...)` of
  a DataFrame built outside the timing, 300 vs 10 partitions of 100k-row tables (<= 5x), and Spark's
  300-partition time against the in-process engine's on the same table (<= 3x); each side on its own copy,
  rotating within each round, one local[2] session per child started and warmed (both Spark write paths)
  outside the timing. A third side, without a target, takes Spark's distributed path (the one-task path
  off), as a cluster with more cores than the one task's threads would;
* the task runner's fixed cost on a classic session: `SparkEngine.map_tasks` of 1 and 8 no-op tasks against
  an RDD job of the same (no target).

With `--profile-dir`, every measured call is recorded by py-spy (`--subprocesses` for Spark's Python
workers) and each Spark child writes Spark's event log there (jobs, stages, task times).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import scale  # noqa: E402

NAME = "scale_spark"
TITLE = "Spark's cost follows the work: spread upsert on Spark vs in-process (bench/scale_spark.py)"

NOTES = """Profiles of the 300-partition spread upsert on Spark (local[2]; Spark's event log for jobs, stages and
task times, py-spy with `--subprocesses` for the Python workers; a 2-core machine shared with four other
jobs, load average 13-19, so absolute times are several times a quiet machine's; the ratios above are
same-run):

* before: 9 Spark jobs, 12 stages, 459 tasks. The write job had one task per bucket (420 tasks, each a
  Python worker round trip: 38.8 s of wall time under py-spy); the key lookup read the keys of 600 base
  files through Spark's parquet reader (21 tasks, 8.4 s under py-spy; unprofiled, 9.4 s against 3.3 s for
  the same keys read by pyarrow in 8 executor tasks: on small files Spark's reader pays per file, much of
  it decoding Hudi's ~430 KB bloom-filter footer text). One unprofiled call: 117 s at load 13.
* the distributed path now: 9 jobs, 12 stages, 34 tasks: the lookup in 8 pyarrow tasks balanced by file
  size (`index_simple.existing_locations`, files up to 16 MB), the write in 8 tasks of about equal cost
  (`dispatch.bucket_tasks`, at most about a max file size of records each, `routing.bucket_salts`), each
  running its buckets' handles with their markers in one file. Its write tasks spend their time where the
  in-process engine does (py-spy, samples under the write task: parquet write 17%, writer close 13%, file
  creation 11%, footer parse 9%, column read 8%); what it adds is Spark's: the count, broadcast, lookup,
  profile and shuffle jobs, and the rows' trips between the JVM and the workers. One call: 19-22 s against
  5-6.5 s in-process at load 15-19.
* on a session whose default parallelism is no more than the one task's threads (local[2], one
  executor) distributing gains no core, so the one-task path (`writer/single_task.py`: one job that tags,
  plans and writes in one Python worker with the in-process code) no longer stops at 256 index files
  there unless `hoodie.pyhudi.write.single.task.max.index.files` is set: 1 job, 1 task, 5.5 s against
  6.5 s in-process in the same minute. The rows above measure that path; the distributed row is what a
  cluster with more cores than the task's threads runs.
* the task runner (`SparkEngine.map_tasks`, one mapInArrow job over `spark.range`, the path Spark Connect
  shares): py-spy of no-op calls on the driver: the job itself (collect) 47%, building the mapInArrow plan
  30% (7 points of it parsing the DDL return type through the JVM: now a StructType), `spark.range` 13%.
  The rest is Spark SQL's fixed cost per query (planning, the Arrow stream to a reused worker), which the
  DataFrame API cannot skip; the RDD job it is compared with is classic-only.
"""


def render_markdown(r: dict[str, Any]) -> str:
    rows = [scale._cells(x, "**missed**") for x in r["rows"]]
    return (f"`{r['command']}`\n\n{common.run_paragraph(r, with_conf=False)}\n\n"
            + common.format_table(["measurement", "big", "small", "ratio", "target", ""], rows, markdown=True)
            + "\n\nMedians of the runs; each call in its own process; the sides alternate in each round. "
            + NOTES)


if __name__ == "__main__":
    sys.exit(scale.main(NAME, TITLE, render_markdown, "spread_spark,spark_runner"))
