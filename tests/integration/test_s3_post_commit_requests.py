"""After a commit on an object store, the inline cleaner (with nothing to plan) and archival's check send no
request: they start from the timeline the commit left (issue 31 item 3). A local S3 server behind the
counting proxy; the table reads back equal through pyhudi and hudi-rs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.storage import object_store

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 fixture

OPTS = {"hoodie.table.name": "post", "hoodie.datasource.write.recordkey.field": "k",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.datasource.write.operation": "insert"}


def test_inserts_list_the_timeline_three_times_and_nothing_after_the_commit(
        s3: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the second insert on: `.hoodie` is listed at the start, after taking the instant time and under
    the lock at commit, and by nothing after the commit; the archive folder is listed once per process (the
    first write's check); every write's metrics equal the proxy's counts."""
    lists: list[str] = []
    real = object_store.ObjectBackend.list_dir

    def recording(self: Any, rel: str, *args: Any) -> Any:
        lists.append(rel.strip("/"))
        return real(self, rel, *args)

    monkeypatch.setattr(object_store.ObjectBackend, "list_dir", recording)
    uri, keys = f"s3://{s3.bucket}/post", []
    for step in range(4):
        batch = [f"k{step}-{i}" for i in range(5)]
        keys += batch
        lists.clear()
        s3.proxy.reset_counts()
        with pyhudi.request_metrics() as m:
            pyhudi.write(pa.table({"k": batch, "ts": [step] * 5}), uri, OPTS)
        assert m.counts == s3.proxy.counts, step
        archived = [r for r in lists if r.startswith(".hoodie/archived")]
        assert len(archived) == (1 if step == 0 else 0), (step, lists)
        if step:
            assert lists.count(".hoodie") == 3, (step, lists)
    result = pyhudi.read(uri)
    table = result if isinstance(result, pa.Table) else result.read_all()
    assert sorted(table.column("k").to_pylist()) == sorted(keys)
    assert s3.hudi_rs(uri).num_rows == len(keys)
