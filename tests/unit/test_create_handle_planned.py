"""A create handle whose bucket the planner sized as one file (`Bucket.record_size`) encodes it straight
away instead of probing a sample first; a planner estimate that was too low re-splits the records as a
probed plan would. Files are read back and their sizes checked against the max and the small-file limit."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.index import key_cache
from pyhudi.io import schema as S
from pyhudi.io.base_file import ParquetSettings, encode_within
from pyhudi.storage import Storage
from pyhudi.writer import handles as H
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import Bucket, BucketKind

MB = 1024 * 1024
SIZING = SizingConfig(max_file_size=MB, small_file_limit=MB * 3 // 4, block_size=MB)
AVRO = S.with_meta_fields({"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "id", "type": "string"}, {"name": "v", "type": "double"}, {"name": "s", "type": "string"}]})


def _ctx(root: Path) -> H.HandleContext:
    return H.HandleContext(
        storage=Storage(str(root)), instant="20260101000000000", operation=WriteOperation.INSERT,
        file_schema=S.avro_to_arrow(AVRO), avro_schema_with_meta=S.to_json(AVRO), populate_meta=True,
        precombine_field=None, event_time_ordering=False, combine=False, allow_duplicate_on_inserts=False,
        sizing=SIZING, parquet=ParquetSettings(), buckets=(), salts=())


def _records(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = [f"key-{seed}-{i:08d}" for i in range(n)]
    return pa.table({H.RECORD_KEY: keys, H.PARTITION: ["p"] * n, "id": keys, "v": rng.normal(size=n),
                     "s": [f"{x:x}" for x in rng.integers(0, 2**48, n)]})


def _per_row(records: pa.Table) -> float:
    """What a record of `records` takes in a whole file (a probe's sample can be off by a quarter)."""
    ctx = _ctx(Path("."))
    data, n, _, _ = encode_within(lambda k: H.file_layout(ctx, records.slice(0, k), "f" * 60, 0, 0), records.num_rows,
                            sys.maxsize, ctx.avro_schema_with_meta, ctx.parquet)
    return (len(data) - H.file_overhead(n, ctx.parquet)) / n


def _write(tmp_path: Path, records: pa.Table, record_size: int, monkeypatch: pytest.MonkeyPatch
           ) -> tuple[list[int], int]:
    probes: list[int] = []
    real = H._probe

    def counting(ctx, recs, pid):  # type: ignore[no-untyped-def]
        probes.append(recs.num_rows)
        return real(ctx, recs, pid)

    monkeypatch.setattr(H, "_probe", counting)
    bucket = Bucket(0, BucketKind.INSERT, "p", "fg", expected_inserts=records.num_rows, record_size=record_size)
    stats, _ = H.create_handle(_ctx(tmp_path), Storage(str(tmp_path)), bucket, records, "0-1-1", 0)
    sizes = [s.file_size_in_bytes for s in stats]
    for s in stats:
        assert (tmp_path / s.path).stat().st_size == s.file_size_in_bytes
    keys = [k for s in stats for k in pq.read_table(tmp_path / s.path, columns=[H.RECORD_KEY]).column(0).to_pylist()]
    assert keys == records.column(H.RECORD_KEY).to_pylist(), "every record once, in order"
    for s in stats:  # write-through: the keys kept are the written file's, also after a re-split
        kept = key_cache.cached_keys(Storage(str(tmp_path)).uri(s.path))
        assert kept is not None and kept.equals(pq.read_table(tmp_path / s.path).column(H.RECORD_KEY).combine_chunks())
    return sizes, len(probes)


def test_a_bucket_planned_as_one_file_is_written_without_a_probe(tmp_path: Path, monkeypatch) -> None:
    per_row = _per_row(_records(30_000))
    full = int(SIZING.max_file_size / per_row)  # the planner's size includes a full file's footer share
    planned = int(per_row + H.file_overhead(full, ParquetSettings()) / full) + 1
    n = SIZING.max_file_size // planned
    sizes, probes = _write(tmp_path, _records(n), planned, monkeypatch)
    assert probes == 0 and len(sizes) == 1
    assert SIZING.small_file_limit < sizes[0] <= SIZING.max_file_size * H.SPREAD_MAX


@pytest.mark.parametrize("low", [1.15, 1.6, 2.0])
def test_a_planner_estimate_too_low_resplits_as_a_probe_would(tmp_path: Path, monkeypatch, low: float) -> None:
    """The records are `low` times the planned size: the first attempt comes out too big and the rows are
    re-split at the measured size per row, into the files a probed plan makes (none small beside full
    ones, none over the max by more than the spread)."""
    per_row = _per_row(_records(30_000))
    planned = int(per_row / low * 1.05)
    n = SIZING.max_file_size // planned
    sizes, probes = _write(tmp_path / "planned", _records(n), planned, monkeypatch)
    probed, probed_probes = _write(tmp_path / "probed", _records(n), 0, monkeypatch)
    assert (probes, probed_probes) == (0, 1), "only the unsized bucket probes"
    assert len(sizes) == len(probed) >= 2
    assert all(size <= SIZING.max_file_size * H.SPREAD_MAX for size in sizes)

    def small(files: list[int]) -> int:
        return sum(size < SIZING.small_file_limit for size in files)

    assert small(sizes) <= small(probed) and small(sizes) <= 1, (sizes, probed)


def test_unsized_buckets_and_arrow_heavy_ones_still_probe(tmp_path: Path, monkeypatch) -> None:
    """No planner size (bulk_insert's buckets, hoodie.parquet.auto.split off): the probe, as before; and a
    bucket whose Arrow bytes are far past the file, whatever the planner's size, probes rather than
    encoding many files' worth to learn it."""
    records = _records(12_000)
    _, probes = _write(tmp_path / "a", records, 0, monkeypatch)
    assert probes == 1
    ctx = _ctx(tmp_path)
    bucket = Bucket(0, BucketKind.INSERT, "p", "fg", expected_inserts=records.num_rows, record_size=80)
    assert records.num_rows * 80 <= MB * H.SPREAD_MAX  # planned as one file
    assert H._planned_one_file(ctx, bucket, records)
    wide = records.append_column("pad", pa.array(["x" * 400] * records.num_rows))
    assert wide.nbytes > MB * H.PLANNED_ARROW_MAX
    assert not H._planned_one_file(ctx, bucket, wide)
