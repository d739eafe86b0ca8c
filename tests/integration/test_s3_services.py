"""Every write operation and table service in-process (no Spark) on a bucket of the local S3 server,
configured only through the AWS_* environment: upsert, insert, delete, insert_overwrite, compaction,
clustering, clean, archival, savepoint, rollback and restore, COW and MOR. After every step the table is
read with `pyhudi.read` and with hudi-rs and compared with a plain-Python model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import pyhudi
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from tests.integration import s3_model as m

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures

SERVICE_OPTS = {"hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2",
                "hoodie.keep.max.commits": "3",
                "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 20),
                "hoodie.clustering.plan.strategy.target.file.max.bytes": str(4 << 20)}


def _write(s3: S3Bucket, model: m.Model, opts: dict[str, str], rows: list, op: str, step: str) -> str:
    instant = pyhudi.write(m.arrow(rows), s3.uri, {**opts, "hoodie.datasource.write.operation": op})
    assert instant is not None, step
    m.apply(model, rows, op)
    m.check(s3, model, step)
    return instant


def _writes(s3: S3Bucket, model: m.Model, opts: dict[str, str]) -> None:
    keys = m.all_keys()
    first = _write(s3, model, opts, m.rows_for(keys[:12], 1), "upsert", "upsert 1")
    at_first = dict(model)
    _write(s3, model, opts, m.rows_for(keys[6:18], 2, "u"), "upsert", "upsert 2")
    assert m.as_model(pyhudi.read(s3.uri, {"as.of.instant": first})) == at_first, "time travel"
    changed = pyhudi.read(s3.uri, {"hoodie.datasource.query.type": "incremental",
                                   "hoodie.datasource.read.begin.instanttime": first})
    assert m.as_model(changed) == {k: v for k, v in model.items() if v[1] == 2}, "incremental read"
    _write(s3, model, opts, m.rows_for(keys[18:], 3, "i"), "insert", "insert")
    _write(s3, model, opts, m.rows_for(keys[::5], 4), "delete", "delete")
    _write(s3, model, opts, [], "upsert", "empty batch")
    overwrite = [r for r in m.rows_for(keys[1:24:3], 5, "o") if r["part"] == "2024/01"]
    _write(s3, model, opts, overwrite, "insert_overwrite", "insert_overwrite 2024/01")


def _completed(uri: str) -> list[str]:
    return [i.timestamp for i in ActiveTimeline.load(Storage(uri)).completed().instants]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", pytest.param("MERGE_ON_READ", marks=pytest.mark.extended)])
def test_writes_and_services_in_process(s3: S3Bucket, table_type: str) -> None:
    opts = m.options(table_type, **{"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"},
                     **SERVICE_OPTS)
    model: m.Model = {}
    _writes(s3, model, opts)
    assert bool(m.log_files(s3.uri)) == (table_type == "MERGE_ON_READ")
    if table_type == "MERGE_ON_READ":
        assert len(pyhudi.compact(None, s3.uri, opts)) == 1
        m.check(s3, model, "compaction")
    assert len(pyhudi.cluster(None, s3.uri, opts)) == 1
    m.check(s3, model, "clustering")
    _write(s3, model, opts, m.rows_for(m.all_keys()[2:9], 6, "v"), "upsert", "upsert after services")
    cleaned = pyhudi.clean(None, s3.uri, opts)
    assert cleaned, "clean deleted nothing"
    m.check(s3, model, "clean")
    before = len(_completed(s3.uri))
    assert pyhudi.archive(None, s3.uri, opts) is not None
    assert len(_completed(s3.uri)) < before
    assert Storage(s3.uri).list_dir(".hoodie/archived"), "no archive file on the bucket"
    m.check(s3, model, "archival")
    saved = pyhudi.savepoint(None, s3.uri, options=opts)
    at_savepoint = dict(model)
    _write(s3, model, opts, m.rows_for(m.all_keys()[:5], 7, "w"), "upsert", "upsert after savepoint")
    before_last = dict(model)
    last = _write(s3, model, opts, m.rows_for(m.all_keys()[10:14], 8, "x"), "delete", "delete after savepoint")
    pyhudi.rollback(None, s3.uri, last, opts)
    assert last not in _completed(s3.uri)
    m.check(s3, before_last, "rollback")
    pyhudi.restore(None, s3.uri, saved, opts)
    m.check(s3, at_savepoint, "restore")
    model = at_savepoint
    _write(s3, model, opts, m.rows_for(m.all_keys()[3:7], 9, "y"), "upsert", "upsert after restore")


def test_automatic_services_in_process(s3: S3Bucket) -> None:
    """MOR with inline compaction, automatic clean and archival after each commit, on the bucket."""
    opts = m.options("MERGE_ON_READ", **{"hoodie.compact.inline": "true",
                                         "hoodie.compact.inline.max.delta.commits": "2"}, **SERVICE_OPTS)
    model: m.Model = {}
    keys = m.all_keys()
    for step in range(6):
        _write(s3, model, opts, m.rows_for(keys[step * 3:step * 3 + 8], step, f"s{step}"), "upsert", f"upsert {step}")
    assert Storage(s3.uri).list_dir(".hoodie/archived"), "automatic archival archived nothing"
