"""When the one-task write may look keys up in more base files than hoodie.pyhudi.write.single.task.max.index.files."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("pyspark")

from pyhudi.config.registry import Options  # noqa: E402
from pyhudi.engine.spark.write import SparkWriteClient  # noqa: E402


def _client(options: dict[str, str]) -> SparkWriteClient:
    client = SparkWriteClient.__new__(SparkWriteClient)  # only the config is read
    opts = Options.parse(options)
    client.config = SimpleNamespace(options=opts,  # type: ignore[assignment]
                                    single_task_max_index_files=int(options.get(
                                        "hoodie.pyhudi.write.single.task.max.index.files", 256)))
    return client


def test_limit_applies_when_spark_has_more_cores_than_the_task():
    assert _client({})._max_index_files(threads=4, parallelism=16) == 256
    assert _client({})._max_index_files(threads=2, parallelism=3) == 256


def test_no_limit_when_the_task_has_every_core_unless_set():
    assert _client({})._max_index_files(threads=2, parallelism=2) == float("inf")
    assert _client({})._max_index_files(threads=1, parallelism=1) == float("inf")
    explicit = _client({"hoodie.pyhudi.write.single.task.max.index.files": "10"})
    assert explicit._max_index_files(threads=2, parallelism=2) == 10
