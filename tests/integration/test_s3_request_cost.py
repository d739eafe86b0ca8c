"""Request cost on a local S3 server (in-process, no Spark): `pyhudi.request_metrics()` counts exactly the
requests the store saw (the fault proxy counts them independently), tasks on the in-process engine's
threads count into the caller's metrics, `--explain` prints them, and a one-partition upsert costs the
same LIST/GET requests on a 300-partition table as on a 10-partition one.

Every table written is read back with pyhudi and with hudi-rs and compared with a model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.cli.main import main as cli_main
from pyhudi.index import key_cache
from pyhudi.io import written_tables
from pyhudi.storage import Storage
from tests.support.s3_server import create_bucket, s3_env

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket, S3Session

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures

SCHEMA = pa.schema([("k", pa.string()), ("d", pa.decimal128(20, 4)), ("part", pa.string()),
                    ("v", pa.string()), ("ts", pa.int64())])
Model = dict[tuple[str, str], tuple[Any, int]]
NO_CLEAN = {"hoodie.clean.automatic": "false"}


def _opts(op: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "cost", "hoodie.datasource.write.recordkey.field": "k,d",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.datasource.write.operation": op, **extra}


def _part(i: int) -> str:
    """Partition values with `/` (two directory levels) and leading-zero digits."""
    return f"r/{i:03d}"


def _write(uri: str, rows: list[dict[str, Any]], op: str, model: Model, **extra: str) -> None:
    pyhudi.write(pa.Table.from_pylist(rows, schema=SCHEMA), uri, _opts(op, **extra))
    for r in rows:
        model[(f"k:{r['k']},d:{r['d']}", r["part"])] = (r["v"], r["ts"])


def _rows(table: pa.Table | None) -> Model:
    out: Model = {}
    for r in ([] if table is None else table.to_pylist()):
        key = (r["_hoodie_record_key"], r["_hoodie_partition_path"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["v"], r["ts"])
    return out


def _check(s3: S3Bucket, uri: str, model: Model) -> None:
    result = pyhudi.read(uri)
    table = result.read_all() if isinstance(result, pa.RecordBatchReader) else result
    assert _rows(table) == model, "pyhudi.read"
    assert _rows(s3.hudi_rs(uri)) == model, "hudi-rs"


def _table(s3: S3Bucket, partitions: int) -> tuple[str, Model]:
    """A table of `partitions` partitions with one row each (unicode keys, a null column), one bulk_insert."""
    uri, model = f"s3://{s3.bucket}/t{partitions}", Model()
    rows = [{"k": f"ü{i}", "d": Decimal("1.5000"), "part": _part(i), "v": None, "ts": 1} for i in range(partitions)]
    _write(uri, rows, "bulk_insert", model, **NO_CLEAN)
    return uri, model


def _upsert_cost(s3: S3Bucket, uri: str, model: Model, step: int, extra: dict[str, str] | None = None
                 ) -> dict[str, int]:
    """One upsert into partition r/000 (an update, an insert with a negative decimal key and a unicode
    value); the proxy's counts of it, checked against the metrics of the same write."""
    rows = [{"k": "ü0", "d": Decimal("1.5000"), "part": _part(0), "v": f"u{step}", "ts": 10 + step},
            {"k": f"新{step}", "d": Decimal("-2.2500"), "part": _part(0), "v": "日本", "ts": 10 + step}]
    s3.proxy.reset_counts()
    with pyhudi.request_metrics() as m:
        _write(uri, rows, "upsert", model, **(extra or {}))
    seen = s3.proxy.counts
    assert m.counts == seen, f"metrics {m.counts} != requests the store saw {seen}"
    return seen


def test_engine_threads_count_into_the_callers_metrics() -> None:
    """LocalEngine's pool threads start with an empty context; their requests still reach the caller's
    collector, and two collectors in two threads at once stay apart."""
    from concurrent.futures import ThreadPoolExecutor

    from pyhudi.engine.local import LocalEngine
    from pyhudi.storage import metrics

    def task(n: int, _info: Any) -> list[int]:
        metrics.count("GET", "test", n, read=10 * n)
        return [n]

    def run(n_tasks: int) -> tuple[list[int], dict[str, int], int]:
        with pyhudi.request_metrics() as m:
            out = LocalEngine(4).map_tasks(task, list(range(1, n_tasks + 1)), 4)
        return out, m.counts, m.bytes_read

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(run, [5, 9])
    assert a == ([1, 2, 3, 4, 5], {**dict.fromkeys(metrics.OPS, 0), "GET": 15}, 150)
    assert b[1]["GET"] == 45 and b[2] == 450
    metrics.count("GET", "nobody listens")  # no collector: free, no error


def test_metrics_count_what_the_store_sees(s3: S3Bucket) -> None:
    """Writes (bulk_insert, upsert, delete, an empty batch) and a read: the metrics equal the proxy's
    counts kind by kind, the in-process engine's worker threads included (parallelism 4)."""
    uri, model = f"s3://{s3.bucket}/t", Model()
    threads = {"hoodie.pyhudi.engine.local.parallelism": "4", "hoodie.pyhudi.write.single.task.max.bytes": "0"}
    rows = [{"k": k, "d": Decimal(d).quantize(Decimal("0.0001")), "part": p, "v": v, "ts": 1}
            for k, d, p, v in [("a,b", "0", "2024/01", None), ("Ω", "-2.25", "007", "x"),
                               ("x y", "1.5", "a b", "名前"), ("0", "0", "2024/01", "")]]
    for op, batch in (("bulk_insert", rows), ("upsert", [{**rows[0], "v": "new", "ts": 2}, {**rows[1], "ts": 2}]),
                      ("upsert", [])):
        s3.proxy.reset_counts()
        with pyhudi.request_metrics() as m:
            _write(uri, batch, op, model, **threads)
        assert m.counts == s3.proxy.counts, op
        assert m.total > 0 and m.bytes_written > 0, op
    s3.proxy.reset_counts()
    with pyhudi.request_metrics() as outer:
        with pyhudi.request_metrics() as inner:
            pyhudi.write(pa.Table.from_pylist([rows[2]], schema=SCHEMA), uri, _opts("delete", **threads))
        model.pop(("k:x y,d:1.5000", "a b"))  # decimal keys print with the column's scale
        assert inner.counts == s3.proxy.counts
        result = pyhudi.read(uri)
    assert outer.counts == s3.proxy.counts, "an outer collector counts the inner one's requests too"
    assert outer.counts["GET"] > inner.counts["GET"] and outer.bytes_read > inner.bytes_read
    assert _rows(result if isinstance(result, pa.Table) else result.read_all()) == model
    _check(s3, uri, model)


def test_multipart_upload_and_batch_delete_are_counted_as_s3_bills_them(s3: S3Bucket) -> None:
    """An upload above obstore's 5 MiB multipart threshold is POST + a PUT per part + POST; deletes go
    through S3's batch API (POST ?delete)."""
    storage = Storage(s3.uri)
    blob = bytes(range(256)) * (6 * 1024 * 1024 // 256)
    s3.proxy.reset_counts()
    with pyhudi.request_metrics() as m:
        storage.write_bytes("big/x.bin", blob)
        storage.write_bytes("big/small.bin", b"")
        assert storage.read_bytes("big/x.bin") == blob
        storage.delete_dir("big")
    assert m.counts == s3.proxy.counts
    assert m.counts["POST"] >= 3 and m.counts["PUT"] == 3  # 2 parts + 1 small PUT
    assert m.bytes_written == len(blob) and m.bytes_read == len(blob)
    assert not storage.exists("big/x.bin")


@dataclass
class Wide:
    """A 10-partition and a 300-partition table in one bucket, built once for the module."""

    s3: S3Bucket
    tables: dict[int, tuple[str, Model]]


@pytest.fixture(scope="module")
def wide(s3_session: S3Session) -> Iterator[Wide]:
    from tests.support.s3_fixtures import S3Bucket  # loaded by pytest as a plugin first (assert rewriting)

    bucket = f"pyhudi-{uuid.uuid4().hex[:12]}"
    create_bucket(s3_session.server.endpoint, bucket)
    env = s3_env(s3_session.proxy.url)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        s3 = S3Bucket(bucket, f"s3://{bucket}/table", s3_session.proxy.url, s3_session.server.endpoint,
                      s3_session.proxy, env)
        yield Wide(s3, {n: _table(s3, n) for n in (10, 300)})


def test_inline_clean_scans_only_partitions_written_since_last_clean(wide: Wide) -> None:
    """With the inline cleaner on (one commit retained: from the second upsert on, each one cleans r/000):
    the first clean, with no clean on the timeline, scans only the partitions where a commit superseded a
    file version (Hudi scans every partition there; clean_plan.scope_without_clean), later ones only those
    where commits since the last clean did (hoodie.cleaner.incremental.mode), so no LIST count grows with
    the table."""
    keep_one = {"hoodie.cleaner.commits.retained": "1"}
    costs = [(_upsert_cost(wide.s3, *wide.tables[10], 100 + step, keep_one),
              _upsert_cost(wide.s3, *wide.tables[300], 100 + step, keep_one)) for step in range(4)]
    print(f"1-partition upserts with the inline cleaner (10 vs 300 partitions): {costs}")
    for step, (small, big) in enumerate(costs):
        assert big["LIST"] <= small["LIST"] + 2, f"step {step}: {small} vs {big}"
    for partitions, (uri, _) in wide.tables.items():
        names = [i.name for i in Storage(uri).list_dir(_part(0)) if i.name.endswith(".parquet")]
        assert len(names) < 4, f"{partitions} partitions: old versions of r/000 not cleaned: {names}"


def test_upsert_lists_and_reads_only_the_partition_it_touches(wide: Wide) -> None:
    """LIST/GET/HEAD/PUT of a 1-partition upsert (cleaner off): within +2 on 300 partitions of the counts
    on 10; then both tables (every write of this module) read equal to their models."""
    for step in range(2):
        small = _upsert_cost(wide.s3, *wide.tables[10], step, NO_CLEAN)
        big = _upsert_cost(wide.s3, *wide.tables[300], step, NO_CLEAN)
        print(f"1-partition upsert, step {step}: 10 partitions {small}, 300 partitions {big}")
        for kind in ("LIST", "GET", "HEAD", "PUT"):
            assert big[kind] <= small[kind] + 2, f"step {step}: {kind} {small[kind]} on 10 partitions, " \
                                                 f"{big[kind]} on 300: {small} vs {big}"
    for uri, model in wide.tables.values():
        _check(wide.s3, uri, model)


def test_cli_explain_prints_the_runs_requests(s3: S3Bucket, tmp_path: Any, capsys: pytest.CaptureFixture[str]
                                              ) -> None:
    """`pyhudi write --explain` and `pyhudi clean --explain` end with the run's request counts, equal to
    what the store saw; without --explain nothing is printed about requests."""
    src = tmp_path / "in.json"
    src.write_text('{"k": "ü/ß", "d": 1.5, "part": "2024/01", "v": null, "ts": 1}\n'
                   '{"k": "007", "d": -2.25, "part": "007", "v": "名前", "ts": 1}\n', encoding="utf-8")
    uri = f"s3://{s3.bucket}/cli"
    args = ["write", "--source", str(src), "--source-format", "json", "--target", uri,
            "-o", "hoodie.table.name=cli", "-o", "hoodie.datasource.write.recordkey.field=k",
            "-o", "hoodie.datasource.write.partitionpath.field=part",
            "-o", "hoodie.datasource.write.precombine.field=ts"]
    s3.proxy.reset_counts()
    assert cli_main([*args, "--explain"]) == 0
    out = capsys.readouterr().out
    seen = s3.proxy.counts
    line = next(ln for ln in out.splitlines() if ln.startswith("requests: "))
    assert line.startswith(f"requests: {sum(seen.values())} (")
    for kind, n in seen.items():
        assert f"{kind} {n}" in line, (kind, n, line)
    assert "by storage call:" in out
    assert cli_main([*args, "--operation", "upsert"]) == 0
    assert "requests:" not in capsys.readouterr().out
    s3.proxy.reset_counts()
    assert cli_main(["clean", uri, "--explain", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.out.lstrip().startswith("{") and f"requests: {sum(s3.proxy.counts.values())} (" in captured.err
    model = {(k, p): (v, 1) for k, p, v in [("ü/ß", "2024/01", None), ("007", "007", "名前")]}
    assert _rows(s3.hudi_rs(uri)) == model


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, tuple[int, int] | None]]:
    """Record (kind, object key below the table, byte range of a ranged GET) of every request the object
    store backend sends; the proxy counts only kinds."""
    from pyhudi.storage import object_store

    calls: list[tuple[str, str, tuple[int, int] | None]] = []
    cls = object_store.ObjectBackend
    for name, kind in (("read", "GET"), ("read_range", "GET"), ("head", "HEAD"), ("list_dir", "LIST"),
                       ("has_children", "LIST"), ("put", "PUT"), ("create_tagged", "PUT")):
        orig = getattr(cls, name)

        def wrapped(self: Any, rel: str, *args: Any, _orig: Any = orig, _kind: str = kind) -> Any:
            calls.append((_kind, rel.strip("/"), tuple(args[:2]) if len(args) >= 2 else None))
            return _orig(self, rel, *args)
        monkeypatch.setattr(cls, name, wrapped)
    return calls


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_small_upsert_pays_each_request_once(s3: S3Bucket, monkeypatch: pytest.MonkeyPatch,
                                             table_type: str) -> None:
    """A 2-row upsert (an update and an insert into the small file of partition r/000, the inline cleaner
    on): hoodie.properties is read once; the metadata-table check on completion and the consistent-hashing
    check cost no request of their own (the `.hoodie` listings taken anyway show both folders); `.hoodie` is
    listed at most 6 times (properties + begin, instant start, commit, clean check, clean plan, archival);
    nothing is HEADed: no base file (the view's listing gave the sizes), no timeline file (one listing after
    the requested and inflight creates serves the instant's start); the one file written is marked by one
    DIRECT marker (no MARKERS.type); the index and the merge each read the old base file in one GET (the
    merge reads it whole; the index's footer read prefetches the file's last MB, here all of it); and the
    whole upsert costs at most 17 requests (19 before the start listing and DIRECT marking, 42 and 60
    before earlier savings)."""
    uri, model = f"s3://{s3.bucket}/small_{table_type}", Model()
    tt = {"hoodie.datasource.write.table.type": table_type}
    rows = [{"k": k, "d": Decimal(d), "part": _part(i % 3), "v": v, "ts": 1}
            for i, (k, d, v) in enumerate([("ü0", "1.5000", None), ("a/b", "-0.0001", "x"), ("", "0.0000", "é"),
                                           ("0", "12.0000", None), ("Ω", "-2.2500", "日本")])]
    _write(uri, rows, "bulk_insert", model, **tt)
    model[("k:__empty__,d:0.0000", "r/002")] = model.pop(("k:,d:0.0000", "r/002"))  # Hudi's empty key part
    _write(uri, [{**rows[1], "v": "y", "ts": 2}], "upsert", model, **tt)
    calls = _recording(monkeypatch)
    base = [i.path for i in Storage(uri).list_dir(_part(0)) if i.name.endswith(".parquet")]
    key_cache.KEY_CACHE.clear()  # a process that has not written the file: the index and the merge read it
    written_tables.TABLES.clear()
    calls.clear()
    seen = _upsert_cost(s3, uri, model, 5, tt)
    total = sum(seen.values())
    print(f"{table_type} 2-row upsert: {total} requests {seen}")
    props = [c for c in calls if c[1] == ".hoodie/hoodie.properties"]
    assert props == [("GET", ".hoodie/hoodie.properties", None)], props
    folders = [c for c in calls if c[1].startswith((".hoodie/metadata", ".hoodie/.bucket_index"))]
    assert not folders, folders
    assert sum(1 for c in calls if c == ("LIST", ".hoodie", None)) <= 6, [c for c in calls if c[0] == "LIST"]
    assert seen["HEAD"] == 0 and not [c for c in calls if c[0] == "HEAD"], calls
    marks = [c[1] for c in calls if c[0] == "PUT" and c[1].startswith(".hoodie/.temp/")]
    assert len(marks) == 1 and marks[0].endswith((".marker.MERGE", ".marker.APPEND")), marks
    assert len(base) == 1
    reads = [c for c in calls if c[0] == "GET" and c[1] == base[0]]
    size = Storage(uri).size(base[0])
    assert reads == [("GET", base[0], (0, size))] * 2, reads  # the index, then the merge
    assert total <= 17, seen
    _check(s3, uri, model)
    # the next upsert in the same process: the index finds the keys of the file the last one wrote in the
    # key cache (write-through) and the merge its kept table, footer and size (io/written_tables), so
    # nothing reads it
    newest = max((i for i in Storage(uri).list_dir(_part(0)) if i.name.endswith(".parquet")),
                 key=lambda i: i.name.rsplit("_", 1)[-1])
    calls.clear()
    warm = _upsert_cost(s3, uri, model, 6, tt)
    print(f"{table_type} next 2-row upsert, same process: {sum(warm.values())} requests {warm}")
    reads = [c for c in calls if c[0] == "GET" and c[1] == newest.path]
    assert not reads, reads  # an insert into the small file merges into it on MOR too
    assert sum(warm.values()) <= total - 2, (warm, seen)
    _check(s3, uri, model)


def test_whole_file_reads_take_one_get(s3: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_parquet of every column: one HEAD and one GET up to WHOLE_READ_MAX_BYTES, ranged GETs above
    it; a column subset (the index's key column) of a file up to TAIL_PREFETCH_BYTES is one GET too (the
    footer read's tail prefetch holds it all), of a larger one ranged GETs that never fetch the whole file;
    the same table either way. write_parquet's size (bytes written, no HEAD) is the object's size."""
    from pyhudi.io import base_file
    from pyhudi.storage import object_files

    storage = Storage(f"s3://{s3.bucket}/files")
    table = pa.table({"_hoodie_record_key": ["ü", "a/b", "__empty__", "007"], "v": [None, "日本", "x", ""],
                      "d": pa.array([Decimal("-1.5"), None, Decimal("0"), Decimal("12.25")], pa.decimal128(10, 2)),
                      "n": [1, None, 3, 4]})
    avro = '{"type":"record","name":"r","fields":[]}'
    calls = _recording(monkeypatch)
    # Hudi's bloom sizing: a ~440 KB file, larger than the tail prefetch limit set below
    size = base_file.write_parquet(storage, "p/f.parquet", table, avro, base_file.ParquetSettings(bloom_size_to_records=False))
    assert calls == [("PUT", "p/f.parquet", None)], calls  # nothing read or HEADed
    assert size == storage.size("p/f.parquet")
    calls.clear()
    assert base_file.read_parquet(storage, "p/f.parquet").equals(table)
    assert calls == [("HEAD", "p/f.parquet", None),
                     ("GET", "p/f.parquet", (0, size))], calls
    calls.clear()
    keys = base_file.read_parquet(storage, "p/f.parquet", columns=["_hoodie_record_key"])
    assert keys.column(0).to_pylist() == ["ü", "a/b", "__empty__", "007"]
    assert calls == [("HEAD", "p/f.parquet", None), ("GET", "p/f.parquet", (0, size))], calls
    monkeypatch.setattr(object_files, "TAIL_PREFETCH_BYTES", 64)
    calls.clear()
    keys = base_file.read_parquet(storage, "p/f.parquet", columns=["_hoodie_record_key"])
    assert keys.column(0).to_pylist() == ["ü", "a/b", "__empty__", "007"]
    assert all(c[2] != (0, size) for c in calls) and len(calls) >= 3, calls
    monkeypatch.setattr(base_file, "WHOLE_READ_MAX_BYTES", size - 1)
    calls.clear()
    assert base_file.read_parquet(storage, "p/f.parquet").equals(table)
    assert len(calls) >= 4 and ("GET", "p/f.parquet", (0, size)) not in calls, calls


def test_a_stream_of_writes_reads_nothing_twice(s3: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four small inserts into one table by one process (the storage-based lock, the cleaner on): from the
    second on the table lock is taken by one conditional PUT on the ETag of this process's own release (no
    GET of the lock object); no completed commit is read back at all (the record-size walk and the schema
    lookup ask for them on every write: the process keeps what it wrote under the ETag the store answered,
    which the next listing shows); the
    commit's markers are neither listed nor read back (the in-process engine wrote them all). Every write's
    metrics equal the proxy's counts, and the table reads back equal to the model."""
    uri, model = f"s3://{s3.bucket}/stream", Model()
    calls = _recording(monkeypatch)
    commit_reads: list[str] = []
    for step in range(4):
        rows = [{"k": f"s{step}-{i}", "d": Decimal("1.0000"), "part": _part(i % 2), "v": "x", "ts": step}
                for i in range(3)]
        calls.clear()
        s3.proxy.reset_counts()
        with pyhudi.request_metrics() as m:
            _write(uri, rows, "insert", model)
        assert m.counts == s3.proxy.counts, step
        print(f"insert {step}: {m.total} requests {m.counts}")
        lock_reads = [c for c in calls if c[1] == ".hoodie/.locks/table_lock.json"]
        assert step == 0 or not lock_reads, (step, lock_reads)
        assert not [c for c in calls if c[1].startswith(".hoodie/.temp") and c[0] != "PUT"], (step, calls)
        commit_reads += [c[1] for c in calls if c[0] == "GET" and c[1].endswith(".commit")]
    assert not commit_reads, commit_reads
    _check(s3, uri, model)


def test_kept_commit_details_follow_the_object_version(s3: S3Bucket) -> None:
    """The process keeps completed instant files by ETag: a timeline whose listing shows another version
    of the same name (rewritten since) reads that version, not the kept bytes."""
    from pyhudi.timeline.timeline import ActiveTimeline

    storage = Storage(f"s3://{s3.bucket}/kept")
    name = ".hoodie/20240101000000000.commit"
    storage.write_atomic(name, b'{"partitionToWriteStats": {}, "v": 1}')
    first = ActiveTimeline.load(storage)
    (instant,) = first.instants
    assert first.details(instant).endswith(b'"v": 1}')
    s3.proxy.reset_counts()
    assert ActiveTimeline.load(storage).details(instant).endswith(b'"v": 1}')
    assert s3.proxy.counts["GET"] == 0, "the same version is read once per process"
    storage.write_atomic(name, b'{"partitionToWriteStats": {}, "v": 2}')
    assert ActiveTimeline.load(storage).details(instant).endswith(b'"v": 2}')
    assert first.details(instant).endswith(b'"v": 1}')  # a timeline keeps what its own listing saw
