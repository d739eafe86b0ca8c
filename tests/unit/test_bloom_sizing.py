"""Bloom filters sized to each file's records (hoodie.pyhudi.index.bloom.size.to.records): the shape rule,
the false-positive rate it keeps, what Hudi's deserializer reads, and the footer bytes it saves."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.index import bloom_filter as bf
from pyhudi.io.base_file import MIN_SIZED_BLOOM_ENTRIES, ParquetSettings, bloom_overhead, footer_metadata
from tests.helpers import hudi_rs


@pytest.mark.parametrize("records,want", [(0, 128), (1, 128), (128, 128), (129, 256), (1000, 1024),
                                          (1024, 1024), (1025, 2048), (40_000, 60_000), (10**6, 60_000)])
def test_entries_are_the_next_power_of_two_between_the_floor_and_num_entries(records: int, want: int) -> None:
    assert MIN_SIZED_BLOOM_ENTRIES == 128
    assert ParquetSettings().bloom_entries(records) == want
    assert ParquetSettings(bloom_size_to_records=False).bloom_entries(records) == 60_000
    assert ParquetSettings(bloom_num_entries=50).bloom_entries(records) == 50  # never above num_entries


@pytest.mark.parametrize("kind", ["DYNAMIC_V0", "SIMPLE"])
@pytest.mark.parametrize("n", [1, 129, 3000])
def test_a_sized_filter_keeps_the_configured_rate_and_reads_back(kind: str, n: int) -> None:
    """The footer of a file of n keys: Hudi's serialized form (shape in its header, so Hudi's
    BloomFilterFactory.fromString reads any size), every key positive, and false positives at the
    configured fpp for the file's count (1e-3: ~20 of 20,000 absent keys; a filter sized for fewer
    keys than it holds would show hundreds)."""
    settings = ParquetSettings(bloom_type=kind, bloom_fpp=1e-3)
    keys = [f"key-{i:06d}" for i in range(n)]
    meta = footer_metadata(pa.table({"_hoodie_record_key": keys}), "{}", settings)
    raw = {k.encode(): v.encode() for k, v in meta.items()}
    filt = bf.read_footer_filter(raw)
    assert filt is not None
    assert (filt.type_code, filt.vector_size, filt.num_hashes) == (kind, *bf.filter_shape(settings.bloom_entries(n),
                                                                                          1e-3))
    back = bf.BloomFilter.deserialize(filt.serialize(), kind)
    assert back.might_contain_many(keys).all()
    false_hits = int(back.might_contain_many([f"absent-{i}" for i in range(20_000)]).sum())
    assert false_hits <= 80, false_hits
    assert abs(len(meta[bf.FOOTER_KEY]) - bloom_overhead(n, settings)) <= 64  # the planners' estimate


def test_small_files_lose_hudis_fixed_footer(tmp_path) -> None:
    """A 500-row file's footer: ~431 KB of filter at Hudi's sizing, a few KB sized to its records; the
    table reads the same with hudi-rs either way, and a BLOOM-index upsert finds the stored keys."""
    sizes = {}
    for sized in (False, True):
        path = str(tmp_path / f"t{sized}")
        opts = {"hoodie.table.name": "s", "hoodie.datasource.write.recordkey.field": "id",
                "hoodie.datasource.write.precombine.field": "ts", "hoodie.index.type": "BLOOM",
                "hoodie.pyhudi.index.bloom.size.to.records": str(sized).lower()}
        rows = pa.table({"id": [f"k{i}" for i in range(500)], "ts": [1] * 500, "v": list(range(500))})
        pyhudi.write(rows, path, {**opts, "hoodie.datasource.write.operation": "insert"})
        pyhudi.write(rows.slice(0, 100).set_column(1, "ts", pa.array([2] * 100)), path, opts)  # updates only
        table = hudi_rs(path)
        assert table is not None and table.num_rows == 500
        assert sorted(table.filter(pa.compute.equal(table.column("ts"), 2)).column("id").to_pylist()) == \
            sorted(f"k{i}" for i in range(100))
        files = {f for f in table.column("_hoodie_file_name").to_pylist()}
        assert len(files) == 1
        sizes[sized] = pq.ParquetFile(f"{path}/{files.pop()}").metadata.serialized_size
    assert sizes[False] > 400_000 and sizes[True] < 20_000, sizes
