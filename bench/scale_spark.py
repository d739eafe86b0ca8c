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

NOTES = """How the Spark figures were cut (issue 31; profiles of the 300-partition spread upsert, local[2], a loaded
2-core machine, so absolute times are several times a quiet machine's):

* before: 9 Spark jobs, 459 tasks; the write job alone had one task per bucket (420 tasks, 2.1 s of 5.3 s
  task time...). Each task is a Python worker round trip with its fixed cost; the key lookup read the keys
  of 600 base files through Spark's parquet reader (21 tasks), whose per-file cost on small files with
  Hudi's ~430 KB bloom-filter footer text was about 3x pyarrow's;
* the distributed path now runs a few write tasks per core of about equal cost (`dispatch.bucket_tasks`,
  the bin-packer's LPT; a task still holds about one file's worth of records at most), each running its
  buckets' handles with their markers in one file, and looks keys of small base files up with pyarrow in
  executor tasks (`index_simple.existing_locations`); 9 jobs and 34 tasks;
* on a session whose default parallelism is no more than the one task's threads (local[2], a one-executor
  cluster) distributing gains no core, so the one-task path (`writer/single_task.py`: one job, tag, plan
  and write in one Python worker) no longer stops at 256 index files there unless
  `hoodie.pyhudi.write.single.task.max.index.files` is set: 1 job, 1 task.
"""


def render_markdown(r: dict[str, Any]) -> str:
    rows = [scale._cells(x, "**missed**") for x in r["rows"]]
    return (f"`{r['command']}`\n\n{common.run_paragraph(r, with_conf=False)}\n\n"
            + common.format_table(["measurement", "big", "small", "ratio", "target", ""], rows, markdown=True)
            + "\n\nMedians of the runs; each call in its own process; the sides alternate in each round. "
            + NOTES)


if __name__ == "__main__":
    sys.exit(scale.main(NAME, TITLE, render_markdown, "spread_spark,spark_runner"))
