"""The metadata table of a Hudi 1.x table (versions 8 and 9): removed as Hudi does with hoodie.metadata.enable=false
when it holds only what Hudi rebuilds from the data files (files, column_stats, partition_stats); an index
pyhudi cannot rebuild (record_index, secondary_index_*, expr_index_*, ...) is never removed without the write's
permission. Reads never use it."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from pyhudi.errors import UnsupportedTableError
from pyhudi.model import metadata_table as mdt
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.storage import Storage
from tests.helpers import extract_sample_1x, hudi_rs, same_rows

SAMPLE = "cow_v9_txns_simple_meta"  # files, column_stats, partition_stats, record_index, two secondary indexes
PROPS = ".hoodie/hoodie.properties"


@pytest.fixture
def table(tmp_path: pathlib.Path) -> pathlib.Path:
    return extract_sample_1x(SAMPLE, tmp_path)


@pytest.fixture(autouse=True)
def no_earlier_permission() -> None:
    """Permissions a write check gave in this process (other tests' writes of the same sample) do not count."""
    mdt._allowed_states.clear()


def _props(root: pathlib.Path) -> dict[str, str]:
    return parse_properties((root / PROPS).read_text())


def _set(root: pathlib.Path, **changes: str) -> None:
    props = _props(root)
    props.update({k.replace("__", "."): v for k, v in changes.items()})
    (root / PROPS).write_text(format_properties(props))


@pytest.mark.parametrize(("props", "version", "found"), [
    ({"hoodie.table.version": "9", "hoodie.table.metadata.partitions": "column_stats,files,partition_stats"}, None, []),
    ({"hoodie.table.version": "8", "hoodie.table.metadata.partitions": "files,record_index",
      "hoodie.table.metadata.partitions.inflight": "secondary_index_a,expr_index_b"}, None,
     ["expr_index_b", "record_index", "secondary_index_a"]),
    ({"hoodie.table.version": "9", "hoodie.table.metadata.partitions": "files,bloom_filters"}, None, ["bloom_filters"]),
    ({"hoodie.table.version": "6", "hoodie.table.metadata.partitions": "files,record_index"}, None, []),
    ({"hoodie.table.version": "6", "hoodie.table.metadata.partitions": "files,record_index"}, 8, ["record_index"]),
])
def test_unrebuildable_indexes(props: dict[str, str], version: int | None, found: list[str]) -> None:
    assert mdt.unrebuildable_indexes(props, version) == found


def test_rebuildable_metadata_table_is_removed_as_hudi_removes_it(table: pathlib.Path) -> None:
    """deleteMetadataTable: both partition keys emptied first, then the folder; the index definitions stay
    (a Hudi writer with the metadata table enabled rebuilds the indexes they define)."""
    _set(table, hoodie__table__metadata__partitions="column_stats,files,partition_stats",
         hoodie__table__metadata__partitions__inflight="column_stats")
    before = _props(table)
    defs = (table / ".hoodie" / ".index_defs" / "index.json").read_bytes()
    storage = Storage(str(table))
    removed = mdt.drop_metadata_table(storage)
    assert removed[-1] == ".hoodie/metadata" and not (table / ".hoodie" / "metadata").exists()
    after = _props(table)
    assert after["hoodie.table.metadata.partitions"] == "" and after["hoodie.table.metadata.partitions.inflight"] == ""
    assert {k: v for k, v in after.items() if not k.startswith("hoodie.table.metadata.")} == \
        {k: v for k, v in before.items() if not k.startswith("hoodie.table.metadata.")}
    assert after["hoodie.table.index.defs.path"] == ".hoodie/.index_defs/index.json"
    assert (table / ".hoodie" / ".index_defs" / "index.json").read_bytes() == defs


def test_unrebuildable_index_is_never_removed_silently(table: pathlib.Path) -> None:
    text = (table / PROPS).read_text()
    storage = Storage(str(table))
    with pytest.raises(UnsupportedTableError, match="record_index, secondary_index_merchant_idx.*hoodie.write.drop"
                                                    r".unrebuildable.metadata.indexes=true"):
        mdt.drop_metadata_table(storage)
    assert (table / PROPS).read_text() == text and (table / ".hoodie" / "metadata" / "record_index").is_dir()
    mdt.allow_index_drop(storage, True)
    assert mdt.drop_metadata_table(storage)
    assert not (table / ".hoodie" / "metadata").exists() and _props(table)["hoodie.table.metadata.partitions"] == ""


def test_reads_never_use_the_metadata_table(table: pathlib.Path) -> None:
    """The same rows with the metadata table, without its folder, and without it listed at all."""
    import pyhudi

    with_mdt = pyhudi.read(str(table))
    shutil.rmtree(table / ".hoodie" / "metadata")  # listed in the properties, gone from storage
    assert same_rows(pyhudi.read(str(table)), with_mdt)
    _set(table, hoodie__table__metadata__partitions="", hoodie__table__metadata__partitions__inflight="")
    assert same_rows(pyhudi.read(str(table)), with_mdt)
    reference = hudi_rs(table)
    assert reference is not None and same_rows(with_mdt, reference, [c for c in reference.column_names
                                                                     if not c.startswith("_hoodie")])


def test_upgrade_of_a_version_6_table_checks_its_indexes_as_version_8() -> None:
    """A write taking a version-6 table to 8 removes the metadata table by 1.x's rule, checked up front."""
    from pyhudi.config.registry import Options
    from pyhudi.model.table_config import TableConfig
    from pyhudi.model.table_features import check_writable

    props = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
             "hoodie.timeline.layout.version": "1", "hoodie.table.recordkey.fields": "id",
             "hoodie.table.metadata.partitions": "files,record_index"}
    cfg = TableConfig.from_properties(props)
    check_writable(cfg, Options.parse({}), False)  # version 6 stays: its metadata table goes as always
    with pytest.raises(UnsupportedTableError, match="holds record_index"):
        check_writable(cfg, Options.parse({"hoodie.write.table.version": "8"}), False)
    check_writable(cfg, Options.parse({"hoodie.write.table.version": "8", DROP: "true"}), False)


DROP = "hoodie.write.drop.unrebuildable.metadata.indexes"


def test_services_that_do_not_upgrade_take_the_permission_from_their_write_check(table: pathlib.Path) -> None:
    """pyhudi.rollback / restore / savepoint / archive build their configuration (and so pass check_writable)
    without upgrade_for_write: the option given there is what lets their completion remove the indexes."""
    from pyhudi.config.registry import Options
    from pyhudi.model.table_config import load_table_config
    from pyhudi.writer.config import build_write_config
    from pyhudi.writer.operation import WriteOperation

    storage = Storage(str(table))
    cfg = load_table_config(storage)
    with pytest.raises(UnsupportedTableError, match="holds record_index"):
        build_write_config(Options.parse({}), cfg, WriteOperation.INSERT)
    build_write_config(Options.parse({DROP: "true"}), cfg, WriteOperation.INSERT)
    assert mdt.drop_metadata_table(storage) and not (table / ".hoodie" / "metadata").exists()
