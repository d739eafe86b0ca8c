"""Appending row groups to a base file without decoding it (io/splice, io/thrift_compact): the footer codec
round-trips real footers byte for byte (pyarrow's and parquet-mr's as Hudi wrote them); a spliced file reads
as the old rows under the new file name followed by the new rows, in every reader the unit suite has; and
splicing declines what it cannot copy faithfully. End to end: insert top-ups through pyhudi.write, read by
pyhudi and hudi-rs against a model, with and without the option, and the row-group cap."""

from __future__ import annotations

import random
import uuid
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.index import key_cache
from pyhudi.index.bloom_filter import BloomFilter, footer_filter_text
from pyhudi.io import thrift_compact as tc
from pyhudi.io.base_file import ParquetSettings, encode_file
from pyhudi.io.splice import MAX_ROW_GROUPS, append_row_groups, file_name_chunks, footer
from pyhudi.writer import merge_handle
from tests.helpers import hudi_rs, rows_by_key

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
AVRO = '{"type":"record","name":"r","fields":[]}'
NAME = "_hoodie_file_name"


def _rows(start: int, n: int, seed: int = 3) -> pa.Table:
    rng = random.Random(seed + start)
    return pa.table({
        "_hoodie_commit_time": pa.array(["20260101000000000"] * n),
        "_hoodie_commit_seqno": pa.array([f"20260101000000000_0_{start + i}" for i in range(n)]),
        "_hoodie_record_key": pa.array([str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(n)]),
        "_hoodie_partition_path": pa.array([""] * n),
        NAME: pa.array([f"old-{start}.parquet"] * n),
        "v": pa.array([rng.random() if i % 7 else None for i in range(n)], pa.float64()),
        "s": pa.array([{"a": i, "b": [f"x{i % 3}"] * (i % 4)} for i in range(start, start + n)]),
        "n": pa.array(range(start, start + n), pa.int64()),
    })


def _file(table: pa.Table, **settings: object) -> bytes:
    return encode_file(table, AVRO, ParquetSettings(**settings)).to_pybytes()  # type: ignore[arg-type]


def _splice(old: bytes, new_rows: pa.Table, name: str = "new.parquet", codec: str = "snappy") -> bytes | None:
    """`old` plus `new_rows` under the file name `name` (the writer names the new rows so: `_named`)."""
    new_rows = _named(new_rows, name)
    return append_row_groups(old, _file(new_rows, codec=codec),
                             file_name_chunks(new_rows.schema, NAME, name, codec), NAME)


def _named(table: pa.Table, name: str) -> pa.Table:
    return table.set_column(table.schema.get_field_index(NAME), NAME, pa.array([name] * table.num_rows))


def _hudi_footers() -> list[bytes]:
    out = []
    for archive in sorted((FIXTURES / "samples" / "tables").glob("*.zip"))[:6]:
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n.endswith(".parquet") and not n.rsplit("/", 1)[-1].startswith(".")]
            out += [z.read(n) for n in names if "/.hoodie/" not in n][:2]
    return out


def test_footers_round_trip_byte_for_byte() -> None:
    files = [_file(_rows(0, 3000)), _file(_rows(0, 50), codec="zstd")] + _hudi_footers()
    sink = pa.BufferOutputStream()
    pq.write_table(_rows(0, 2000), sink, write_page_index=True, row_group_size=300)  # 7 groups, page indexes
    files.append(sink.getvalue().to_pybytes())
    assert len(files) > 6
    for data in files:
        parsed = footer(data)
        assert parsed is not None
        fmd, start = parsed
        assert tc.write_struct(fmd) == data[start:-8]
        assert footer(pa.py_buffer(data)) == parsed  # a pyarrow Buffer's view holds signed chars


def test_compact_protocol_values_round_trip() -> None:
    inner = [tc.Field(1, tc.BOOL, False), tc.Field(20, tc.I64, -(2**63)), tc.Field(21, tc.DOUBLE, -1.5)]
    fields = [tc.Field(1, tc.I32, -1), tc.Field(2, tc.BOOL, True), tc.Field(3, tc.BYTE, -7),
              tc.Field(5, tc.BINARY, b"\x00" * 300), tc.Field(40, tc.I16, 2**15 - 1),
              tc.Field(41, tc.LIST, tc.Seq(tc.STRUCT, [inner] * 20)), tc.Field(42, tc.LIST, tc.Seq(tc.BOOL, [True, False])),
              tc.Field(43, tc.MAP, tc.Map(tc.BINARY, tc.I64, [(b"k", 2**40)])), tc.Field(44, tc.MAP, tc.Map(0, 0, []))]
    assert tc.read_struct(tc.write_struct(fields)) == fields


def test_a_spliced_file_reads_as_the_old_rows_renamed_then_the_new_rows() -> None:
    old = _file(_rows(0, 3000))
    for step in range(3):  # chained: each splice's output is the next one's old file
        new_rows = _rows(10_000 * (step + 1), 1000 + step)
        spliced = _splice(old, new_rows, f"new-{step}.parquet")
        assert spliced is not None
        expected = _named(pa.concat_tables([pq.read_table(pa.BufferReader(old)), new_rows]), f"new-{step}.parquet")
        f = pq.ParquetFile(pa.BufferReader(spliced))
        assert f.metadata.num_row_groups == step + 2
        assert f.read().equals(expected)
        assert pa.Table.from_batches(list(f.iter_batches(batch_size=777))).equals(expected)
        for g in range(f.metadata.num_row_groups):  # every group's statistics describe its own rows
            group = f.metadata.row_group(g)
            name_stats = group.column(4).statistics
            assert name_stats.min == name_stats.max == f"new-{step}.parquet"
            n_stats = next(group.column(j) for j in range(group.num_columns) if group.column(j).path_in_schema == "n")
            assert n_stats.statistics.min == f.read_row_group(g).column("n")[0].as_py()
        # The footer's key-value metadata is the new file's (Hudi's bloom filter and key range go there).
        alone = pq.ParquetFile(pa.BufferReader(_file(_named(new_rows, f"new-{step}.parquet"))))
        assert f.metadata.metadata == alone.metadata.metadata
        old = spliced


def test_kept_footers_change_no_byte_of_a_chained_splice() -> None:
    """Footers are parsed once and kept by their bytes' digest (a splice also keeps the footer it wrote):
    a chain of splices must come out byte for byte as it does when every footer is parsed afresh, and a
    kept footer must equal a fresh parse of the same bytes."""
    from pyhudi.io import splice

    chains = []
    for fresh in (False, True):
        old = _file(_rows(0, 2000))
        out = []
        for step in range(4):
            if fresh:
                splice._FOOTERS.clear()
            spliced = _splice(old, _rows(10_000 * (step + 1), 500 + step), f"new-{step}.parquet")
            again = _splice(old, _rows(10_000 * (step + 1), 500 + step), f"new-{step}.parquet")
            assert spliced is not None and again is not None
            assert again.to_pybytes() == spliced.to_pybytes()  # a kept footer is not changed by its use
            out.append(spliced.to_pybytes())
            old = out[-1]
        chains.append(out)
    assert chains[0] == chains[1]
    last = chains[0][-1]
    kept = footer(last)
    splice._FOOTERS.clear()
    assert footer(last) == kept
    assert not splice._FOOTERS  # a footer only read is not kept: only the ones splices write are


def test_what_may_append_tells_from_pyarrows_metadata() -> None:
    """`may_append` declines, before anything is encoded, what `append_row_groups` would decline anyway:
    a file another writer wrote (every Hudi-written file) and one at MAX_ROW_GROUPS."""
    from pyhudi.io.splice import may_append

    def meta(data: bytes) -> pq.FileMetaData:
        return pq.ParquetFile(pa.BufferReader(data)).metadata

    assert may_append(meta(_file(_rows(0, 100))))
    hudi = _hudi_footers()
    assert hudi and not any(may_append(meta(data)) for data in hudi)
    sink = pa.BufferOutputStream()
    pq.write_table(_rows(0, MAX_ROW_GROUPS), sink, row_group_size=1)
    assert not may_append(meta(sink.getvalue().to_pybytes()))


def test_splicing_declines_what_it_cannot_copy() -> None:
    old = _file(_rows(0, 3000))
    assert _splice(old, _rows(5000, 10).drop_columns(["v"])) is None  # another schema
    assert _splice(old, _rows(5000, 10).cast(_rows(0, 10).schema.set(7, pa.field("n", pa.int32())))) is None
    sink = pa.BufferOutputStream()
    pq.write_table(_rows(0, 3000), sink, write_page_index=True, store_schema=False)
    assert _splice(sink.getvalue().to_pybytes(), _rows(5000, 10)) is None  # page indexes point past the chunks
    sink = pa.BufferOutputStream()
    pq.write_table(_rows(0, 3000), sink, store_schema=False, row_group_size=3000 // (MAX_ROW_GROUPS - 1) + 1)
    many = sink.getvalue().to_pybytes()
    assert pq.ParquetFile(pa.BufferReader(many)).metadata.num_row_groups == MAX_ROW_GROUPS - 1
    assert _splice(many, _rows(5000, 10)) is not None
    sink = pa.BufferOutputStream()
    pq.write_table(_rows(0, 3000), sink, store_schema=False, row_group_size=3000 // MAX_ROW_GROUPS + 1)
    assert _splice(sink.getvalue().to_pybytes(), _rows(5000, 10)) is None  # would pass MAX_ROW_GROUPS
    size = int.from_bytes(old[-8:-4], "little")
    assert _splice(old[:-8 - size] + b"\x19" * size + old[-8:], _rows(5000, 10)) is None  # a garbage footer
    for hudi in _hudi_footers():  # parquet-mr's files: another writer
        assert append_row_groups(hudi, old, lambda rows: b"", NAME) is None
    assert append_row_groups(old[:100], old, lambda rows: b"", NAME) is None


@pytest.mark.parametrize("append", ["true", "false"])
def test_insert_top_ups_append_row_groups_and_read_back_everywhere(tmp_path: Path, append: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merge_handle, "APPEND_MIN_BYTES", 0)  # small files here: every top-up splices
    path = str(tmp_path / "t")
    opts = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "k",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "insert", "hoodie.pyhudi.insert.append.row.groups": append,
            "hoodie.parquet.max.file.size": str(600 * 1024), "hoodie.parquet.small.file.limit": str(450 * 1024)}
    model: dict[str, tuple[object, ...]] = {}
    rng = random.Random(11)
    for batch in range(MAX_ROW_GROUPS + 3):
        n = rng.randint(1, 1500)
        keys = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(n)]
        rows = pa.table({"k": keys, "p": [("a", "b")[i % 2] for i in range(n)], "ts": [batch] * n,
                         "v": [f"value {batch} {i}" for i in range(n)],
                         "deep": [{"x": [i, batch]} for i in range(n)]})
        pyhudi.write(rows, path, opts)
        model.update(rows_by_key(rows, "k", ["p", "ts", "v", "deep"]))
        got = rows_by_key(pyhudi.read(path), "k", ["p", "ts", "v", "deep"])
        assert got == model
        if batch % 6 == 5:
            assert rows_by_key(hudi_rs(path), "k", ["p", "ts", "v", "deep"]) == model
    # The BLOOM index finds keys of every batch through the spliced files' bloom filters and key ranges:
    # an upsert of keys from the first, a middle and the last batch updates them in place.
    picked = sorted(model)[::97]
    update = pa.table({"k": picked, "p": [model[k][0] for k in picked], "ts": [999] * len(picked),
                       "v": ["updated"] * len(picked), "deep": [{"x": [0]}] * len(picked)})
    key_cache.KEY_CACHE.clear()  # else the lookup takes the keys this process wrote, not the footers
    pyhudi.write(update, path, {**opts, "hoodie.datasource.write.operation": "upsert", "hoodie.index.type": "BLOOM"})
    model.update(rows_by_key(update, "k", ["p", "ts", "v", "deep"]))
    assert rows_by_key(pyhudi.read(path), "k", ["p", "ts", "v", "deep"]) == model
    assert rows_by_key(hudi_rs(path), "k", ["p", "ts", "v", "deep"]) == model
    table = pyhudi.read(path, columns=["k", "_hoodie_file_name", "_hoodie_commit_time", "_hoodie_commit_seqno"])
    files = {f.name: f for f in (tmp_path / "t").rglob("*.parquet")}
    for name in set(table.column("_hoodie_file_name").to_pylist()):  # every record names its own file
        assert name in files
    seqnos = table.column("_hoodie_commit_seqno").to_pylist()
    assert len(set(seqnos)) == len(seqnos)  # old records keep their commit time and sequence number
    for f in files.values():  # each file's footer key range is its keys' (uuids: Java's order is Python's)
        keys = pq.read_table(f, columns=["_hoodie_record_key"]).column(0).to_pylist()
        meta = pq.ParquetFile(f).metadata.metadata
        assert (meta[b"hoodie_min_record_key"].decode(), meta[b"hoodie_max_record_key"].decode()) == (min(keys), max(keys))
        found = footer_filter_text(meta)
        assert found is not None and BloomFilter.deserialize(*found).might_contain_many(pa.array(keys)).all()
    groups = [pq.ParquetFile(f).metadata.num_row_groups for f in files.values()]
    assert len(set(table.column("_hoodie_file_name").to_pylist())) >= 4  # full files and open ones
    assert max(groups) <= MAX_ROW_GROUPS
    assert (max(groups) > 1) == (append == "true")
