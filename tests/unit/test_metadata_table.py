"""Hudi's metadata table is removed before a pyhudi instant completes (as Hudi's writer does with
`hoodie.metadata.enable=false`): partitions cleared in hoodie.properties first, then `.hoodie/metadata`."""

from __future__ import annotations

import logging
import pathlib

import pytest

import pyhudi
from pyhudi.model import metadata_table as mdt
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.model.table_config import load_table_config, table_checksum
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs, plant_metadata_table
from tests.unit._samples import extract_sample

PROPS = ".hoodie/hoodie.properties"


@pytest.fixture
def table(tmp_path: pathlib.Path) -> pathlib.Path:
    return extract_sample("cow__v6_simplekeygen_nonhivestyle", tmp_path / "t")


def test_cleared_keeps_every_other_entry_and_order() -> None:
    props = {"a": "1", "hoodie.table.metadata.partitions": "files,column_stats", "b": "2",
             "hoodie.table.metadata.partitions.inflight": "record_index", "hoodie.table.checksum": "7"}
    out = mdt.cleared(props)
    assert list(out) == list(props)
    assert out == {**props, "hoodie.table.metadata.partitions": "", "hoodie.table.metadata.partitions.inflight": ""}
    assert mdt.listed_partitions(out) == {}
    assert mdt.listed_partitions({"hoodie.table.metadata.partitions": " "}) == {}


def test_drop_removes_partitions_then_folder(table: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    before = parse_properties((table / PROPS).read_text())
    plant_metadata_table(table)
    with caplog.at_level(logging.WARNING, logger="pyhudi.model.metadata_table"):
        removed = mdt.drop_metadata_table(Storage(str(table)))
    assert removed == ["hoodie.table.metadata.partitions=files",
                       "hoodie.table.metadata.partitions.inflight=column_stats", ".hoodie/metadata"]
    after = parse_properties((table / PROPS).read_text())
    assert after == {**before, "hoodie.table.metadata.partitions": "", "hoodie.table.metadata.partitions.inflight": ""}
    cfg = load_table_config(Storage(str(table)))
    assert after["hoodie.table.checksum"] == str(table_checksum(cfg.database, cfg.name))
    assert not (table / ".hoodie" / "metadata").exists()
    assert "removed Hudi's metadata table" in caplog.text and "Hudi rebuilds it" in caplog.text
    assert mdt.drop_metadata_table(Storage(str(table))) == []  # idempotent: nothing left to remove


def test_leftover_folder_alone_is_removed(table: pathlib.Path) -> None:
    """A crash after the properties edit leaves the folder; the next instant finishes the job."""
    plant_metadata_table(table)
    props = parse_properties((table / PROPS).read_text())
    (table / PROPS).write_text(format_properties(mdt.cleared(props)))
    assert mdt.drop_metadata_table(Storage(str(table))) == [".hoodie/metadata"]
    assert not (table / ".hoodie" / "metadata").exists()


def test_every_completion_drops_it(table: pathlib.Path) -> None:
    """Through a real operation without Spark: rolling back the latest commit completes a rollback
    instant; the metadata table is gone before it, and the table still reads right."""
    plant_metadata_table(table)
    storage = Storage(str(table))
    commits = [i.timestamp for i in ActiveTimeline.load(storage).write_timeline().completed()]
    expected = hudi_rs(table, as_of=commits[-2])
    pyhudi.rollback(None, str(table), commits[-1])
    assert not (table / ".hoodie" / "metadata").exists()
    assert mdt.listed_partitions(parse_properties((table / PROPS).read_text())) == {}
    got = hudi_rs(table)
    assert got is not None and expected is not None
    assert sorted(got.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())


def test_enable_is_told_once(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mdt, "_told_enable", False)
    with caplog.at_level(logging.WARNING, logger="pyhudi.model.metadata_table"):
        mdt.note_enable_requested()
        mdt.note_enable_requested()
    assert caplog.text.count("does not maintain Hudi's metadata table") == 1
