"""The `hudi` data source on a Spark Connect session (issue 30, items 4 and 5): registration, a bulk_insert
write, a filtered read and an availableNow stream through `format("hudi")` on
`SparkSession.builder.remote("local[2]")`, in a subprocess (a classic SparkContext and a local Connect server
do not share one Python process cleanly)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
import pyhudi, pyhudi.spark

path = sys.argv[1]
spark = SparkSession.builder.remote("local[2]").getOrCreate()
pyhudi.spark.register(spark)
pyhudi.spark.register(spark)
opts = {"hoodie.table.name": "connect_ds", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": "bulk_insert"}
df = spark.range(300).selectExpr("concat('k', id) id", "concat('p', id % 3) p", "id ts").repartition(2)
df.write.format("hudi").options(**opts).mode("append").save(path)
out = {"connect": type(spark).__module__, "written": pyhudi.read(path).num_rows,
       "p1": spark.read.format("hudi").load(path).filter("p = 'p1'").count()}
query = (spark.readStream.format("hudi").load(path).writeStream.format("memory").queryName("ds_stream")
         .trigger(availableNow=True).start())
query.awaitTermination(300)
out["streamed"] = spark.sql("SELECT count(*) AS n FROM ds_stream").collect()[0]["n"]
spark.stop()
print("CONNECT_RESULT " + json.dumps(out), flush=True)
"""


def test_data_source_on_spark_connect(tmp_path):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "t")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("CONNECT_RESULT ")]
    assert lines, f"exit {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    out = json.loads(lines[-1][len("CONNECT_RESULT "):])
    assert out == {"connect": "pyspark.sql.connect.session", "written": 300, "p1": 100, "streamed": 300}
