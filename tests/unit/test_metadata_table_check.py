"""The metadata-table check before each completion is cheap (one LIST of `.hoodie/metadata` on an object
store) yet still finds a metadata table a Hudi writer created after the operation loaded the table, and
names left in `hoodie.properties` without the folder."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from pyhudi.model import metadata_table as mdt
from pyhudi.model.properties import parse_properties
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from tests.helpers import hudi_rs, plant_metadata_table
from tests.unit._samples import extract_sample

PROPS = ".hoodie/hoodie.properties"


@pytest.fixture
def table(tmp_path: pathlib.Path) -> pathlib.Path:
    return extract_sample("cow__v6_simplekeygen_nonhivestyle", tmp_path / "t")


def _no_reads(monkeypatch: pytest.MonkeyPatch, storage: Storage) -> None:
    def fail(rel: str) -> bytes:
        raise AssertionError(f"{rel} read again")
    monkeypatch.setattr(storage, "read_bytes", fail)


def test_no_metadata_table_costs_no_properties_read(table: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = Storage(str(table))
    load_table_config(storage)
    _no_reads(monkeypatch, storage)
    assert mdt.drop_metadata_table(storage) == []


def test_created_after_the_operation_loaded_the_table_is_still_removed(table: pathlib.Path) -> None:
    """A Hudi writer creates the metadata table (folder, then the partition names) between this
    operation's load and its completion: the folder's LIST finds it, the fresh properties name it."""
    storage = Storage(str(table))
    before = hudi_rs(table)
    load_table_config(storage)
    plant_metadata_table(table, inflight="")
    assert mdt.drop_metadata_table(storage) == ["hoodie.table.metadata.partitions=files", ".hoodie/metadata"]
    assert mdt.listed_partitions(parse_properties((table / PROPS).read_text())) == {}
    assert not (table / ".hoodie" / "metadata").exists()
    after = hudi_rs(table)
    assert before is not None and after is not None
    assert sorted(after.column("id").to_pylist()) == sorted(before.column("id").to_pylist())


def test_names_without_the_folder_are_cleared(table: pathlib.Path) -> None:
    """Partition names left after the folder was deleted by hand: the loaded properties show them."""
    plant_metadata_table(table)
    shutil.rmtree(table / ".hoodie" / "metadata")
    storage = Storage(str(table))
    load_table_config(storage)
    assert mdt.drop_metadata_table(storage) == ["hoodie.table.metadata.partitions=files",
                                                "hoodie.table.metadata.partitions.inflight=column_stats"]
    assert mdt.listed_partitions(parse_properties((table / PROPS).read_text())) == {}
    assert mdt.drop_metadata_table(storage) == []  # the cleared properties are what it knows now


def test_without_a_load_the_properties_are_read(table: pathlib.Path) -> None:
    """A Storage object that never loaded the table (e.g. a service handed a fresh one) checks in full."""
    plant_metadata_table(table)
    shutil.rmtree(table / ".hoodie" / "metadata")
    assert mdt.drop_metadata_table(Storage(str(table))) == [
        "hoodie.table.metadata.partitions=files", "hoodie.table.metadata.partitions.inflight=column_stats"]


def test_upgrade_trusts_a_loaded_version_6_only(table: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """upgrade_if_needed does not read hoodie.properties again when the operation loaded version 6; a
    loaded older version is confirmed by a fresh read (another writer may have upgraded meanwhile)."""
    from pyhudi.model import upgrade

    storage = Storage(str(table))
    loaded = load_table_config(storage).raw
    assert loaded["hoodie.table.version"] == "6"
    _no_reads(monkeypatch, storage)
    assert upgrade.upgrade_if_needed(storage, loaded=loaded) is False
    with pytest.raises(AssertionError, match="read again"):
        upgrade.upgrade_if_needed(storage, loaded={**loaded, "hoodie.table.version": "5"})
