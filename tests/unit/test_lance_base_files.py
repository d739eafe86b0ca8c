"""Lance base files (Hudi 1.2 LANCE tables): `pyhudi.io.lance_file` and the base-file reads routed to it.

The sample `cow_v9_lance_nonpartitioned` (Hudi 1.2.0-rc1, tests/fixtures/samples-1x) is a copy-on-write
table whose base files are `.lance`; its gold is the snapshot hudi-rs 0.5 reads. A full table read needs
the 1.x timeline, so these tests read the files themselves: the latest base file of each file group
(every commit of the sample completed, none was replaced) must hold exactly the gold rows.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pyhudi.errors import CorruptFileError, UnsupportedTableError
from pyhudi.io import schema as S
from pyhudi.io.base_file import read_parquet
from pyhudi.io.lance_file import INSTALL_HINT, is_lance_file, read_lance_base_file
from pyhudi.model.file_names import parse_base_file
from pyhudi.reader.arrow_read import ArrowJob, Unit
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice
from pyhudi.storage import Storage
from tests.helpers import SAMPLES_1X, extract_sample_1x, samples_1x

pytest_plugins = ["tests.support.s3_fixtures"]

NAME = "cow_v9_lance_nonpartitioned"
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]


@pytest.fixture(scope="module")
def table_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert samples_1x()[NAME]["base_file_format"] == "LANCE"  # a missing sample fails, never skips
    return extract_sample_1x(NAME, tmp_path_factory.mktemp("lance"))


def latest_base_files(root: Path) -> list[str]:
    """The newest `.lance` file of each file group (by base instant), as table-relative paths."""
    latest: dict[str, tuple[str, str]] = {}
    for name in os.listdir(root):
        parsed = parse_base_file(name)
        if parsed is not None and parsed.instant > latest.get(parsed.file_id, ("", ""))[0]:
            latest[parsed.file_id] = (parsed.instant, name)
    return sorted(name for _, name in latest.values())


def table_schema(root: Path) -> pa.Schema:
    """The Arrow schema of the table with meta fields, from `hoodie.table.create.schema` (the sample's
    schema never evolved)."""
    for line in (root / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith("hoodie.table.create.schema="):
            text = line.split("=", 1)[1].replace("\\:", ":")
            return S.avro_to_arrow(S.with_meta_fields(S.from_json(text)))
    raise AssertionError("no hoodie.table.create.schema")


def gold() -> pa.Table:
    return pq.read_table(SAMPLES_1X / "gold" / f"{NAME}.parquet")


def by_key(table: pa.Table, columns: list[str]) -> list[dict]:
    return sorted(table.select(columns).to_pylist(), key=lambda r: r["_hoodie_record_key"])


# ----------------------------------------------------------------------------- file names

def test_lance_names_parse_and_round_trip(table_root: Path) -> None:
    names = sorted(n for n in os.listdir(table_root) if n.endswith(".lance"))
    assert len(names) == 5
    for name in names:
        parsed = parse_base_file(name)
        assert parsed is not None and parsed.extension == ".lance" and parsed.name == name
        assert is_lance_file(name) and is_lance_file(f"p/{name}".upper())
    assert parse_base_file(names[0].replace(".lance", ".parquet")).extension == ".parquet"  # type: ignore[union-attr]
    assert parse_base_file(names[0] + ".tmp") is None and parse_base_file("._" + names[0]) is None


# ----------------------------------------------------------------------------- rows vs gold

def test_latest_base_files_hold_the_gold_rows(table_root: Path) -> None:
    storage = Storage(str(table_root))
    files = latest_base_files(table_root)
    assert [parse_base_file(f).instant for f in files] == ["20260503194255628", "20260503194256942"]  # type: ignore[union-attr]
    parts = [read_lance_base_file(storage, f) for f in files]
    got, want = pa.concat_tables(parts), gold()
    assert got.num_rows == want.num_rows == 9
    assert by_key(got, want.column_names) == by_key(want, want.column_names)


def test_meta_columns_are_hudis(table_root: Path) -> None:
    """Meta columns as a parquet base file of a non-partitioned table holds them: the file's own name, an
    empty partition path, the key as text, and the commit that last wrote each record."""
    storage = Storage(str(table_root))
    for name in latest_base_files(table_root):
        rows = read_lance_base_file(storage, name).to_pylist()
        instant = parse_base_file(name).instant  # type: ignore[union-attr]
        for row in rows:
            assert row["_hoodie_file_name"] == name and row["_hoodie_partition_path"] == ""
            assert row["_hoodie_record_key"] == str(row["id"])
            assert row["_hoodie_commit_time"] <= instant
            assert row["_hoodie_commit_seqno"].startswith(row["_hoodie_commit_time"] + "_")
    updated = {r["id"]: r["_hoodie_commit_time"] for r in read_lance_base_file(storage, latest_base_files(table_root)[0]).to_pylist()}
    assert updated[1] == "20260503194252317" and updated[2] == "20260503194254232"  # the two UPDATEs
    assert updated[3] == "20260503194246834"  # untouched since the INSERT


def test_schema_is_the_tables_arrow_schema(table_root: Path) -> None:
    """Lance vs parquet: same column order (meta columns first), same Arrow types as pyhudi derives from
    the Avro schema, every field nullable; Hudi's BLOOM footer keys sit in the schema metadata, and
    there is no `parquet.avro.schema` (the table schema comes from the commit metadata)."""
    storage = Storage(str(table_root))
    expected = table_schema(table_root)
    for name in os.listdir(table_root):
        if not name.endswith(".lance"):
            continue
        table = read_lance_base_file(storage, name)
        assert table.schema.remove_metadata() == expected, name
        meta = {k.decode() for k in (table.schema.metadata or {})}
        assert {"org.apache.hudi.bloomfilter", "hoodie_bloom_filter_type_code", "hoodie_min_record_key",
                "hoodie_max_record_key"} <= meta
        assert "parquet.avro.schema" not in meta


# ----------------------------------------------------------------------------- the read contract

def test_projection_order_filter_and_evolved_columns(table_root: Path) -> None:
    storage = Storage(str(table_root))
    name = latest_base_files(table_root)[0]
    got = read_lance_base_file(storage, name, ["updated_at", "id", "not_in_file"])
    assert got.column_names == ["updated_at", "id"] and got.num_rows == 7
    target = pa.schema([pa.field("id", pa.int64()), pa.field("added_later", pa.string()), pa.field("score", pa.float64())])
    conformed = read_lance_base_file(storage, name, target.names, pc.field("id") > 5, schema=target)
    assert conformed.schema == target
    assert conformed.to_pylist() == [{"id": i, "added_later": None, "score": s}
                                     for i, s in [(6, 0.89), (7, 0.88), (8, 0.82)]]
    only_new = read_lance_base_file(storage, name, ["added_later"], schema=pa.schema([target.field("added_later")]))
    assert only_new.num_rows == 7 and only_new.column("added_later").null_count == 7


def test_zero_columns_is_a_row_count(table_root: Path) -> None:
    storage = Storage(str(table_root))
    counted = read_lance_base_file(storage, latest_base_files(table_root)[1], [])
    assert counted.num_rows == 2 and counted.num_columns == 0


def test_routed_from_every_base_file_read(table_root: Path) -> None:
    """`read_parquet` (index and merge reads), the in-process reader's base-only unit and the MOR merge's
    base file all open `.lance` names with the Lance reader, and all see the same rows."""
    storage = Storage(str(table_root))
    name = latest_base_files(table_root)[0]
    schema = table_schema(table_root)
    direct = read_lance_base_file(storage, name, schema=schema)
    assert read_parquet(storage, name).equals(read_lance_base_file(storage, name))
    assert read_parquet(storage, name, ["_hoodie_record_key"]).column(0).to_pylist() == \
        direct.column("_hoodie_record_key").to_pylist()
    job = ArrowJob(storage, [], schema, schema, (), None)
    assert job.load(Unit("", parse_base_file(name).file_id, name)).equals(direct)  # type: ignore[union-attr]
    spec = MergeSpec(committed=frozenset(), as_of=None, event_time_field=None, target_schema=schema)
    merged, _ = merge_file_slice(storage, parse_base_file(name).file_id, name, [], spec)  # type: ignore[union-attr]
    assert merged.equals(direct)


# ----------------------------------------------------------------------------- refusals and errors

def test_without_pylance_the_read_is_refused_with_the_fix(table_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lance", None)  # `import lance...` now raises ImportError
    monkeypatch.setitem(sys.modules, "lance.file", None)
    storage = Storage(str(table_root))
    name = latest_base_files(table_root)[0]
    for read in (lambda: read_lance_base_file(storage, name), lambda: read_parquet(storage, name)):
        with pytest.raises(UnsupportedTableError) as err:
            read()
        assert name in str(err.value) and INSTALL_HINT in str(err.value) and "pylance" in str(err.value)


def test_damaged_and_missing_files(table_root: Path, tmp_path: Path) -> None:
    name = latest_base_files(table_root)[1]
    data = (table_root / name).read_bytes()
    (tmp_path / name).write_bytes(data[: len(data) // 2])
    storage = Storage(str(tmp_path))
    with pytest.raises(CorruptFileError, match=name):
        read_lance_base_file(storage, name)
    with pytest.raises(FileNotFoundError):
        read_lance_base_file(storage, "missing_0-1-2_20260101000000000.lance")


# ----------------------------------------------------------------------------- object stores

def test_read_from_s3_through_storage(table_root: Path, s3) -> None:  # type: ignore[no-untyped-def]
    """On an object store the file comes through Storage (its credentials and retries): a throttled GET
    (every 2nd answered 503) is retried and the rows are the local ones."""
    local = Storage(str(table_root))
    remote = Storage(s3.uri)
    names = latest_base_files(table_root)
    for name in names:
        remote.write_bytes(f"{name}", (table_root / name).read_bytes())
    throttle = s3.proxy.add("status", status=503, every=2, op="GET")
    for name in names:
        got = read_lance_base_file(remote, name, ["_hoodie_record_key", "score"], pc.field("score") > 0.9)
        want = read_lance_base_file(local, name, ["_hoodie_record_key", "score"], pc.field("score") > 0.9)
        assert got.equals(want) and got.num_rows > 0
    assert throttle.fired > 0
