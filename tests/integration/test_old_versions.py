"""Tables of version 4/5 end to end: read as they are (compaction plans also under .hoodie/.aux, delete blocks
of log-block versions 1 and 2), upgraded to version 6 by the first pyhudi write, read again by pyhudi and
hudi-rs; refusals of versions 3, 7, 8, 9 and of hoodie.write.auto.upgrade=false.

The old table is made from a table pyhudi wrote (the differences the upgrade handlers name): table version
5 or 4 without a checksum, each pending compaction plan copied to .hoodie/.aux, every delete block rewritten
with Kryo contents of version 1 (HoodieKey[]) or 2 (DeleteRecord[]) as Hudi 0.10 wrote them.
"""

from __future__ import annotations

import pathlib
import shutil

import pytest

import pyhudi
from pyhudi.errors import UnsupportedTableError
from pyhudi.io.log_blocks import delete_records
from pyhudi.io.log_format import BlockType, read_blocks
from pyhudi.model.properties import parse_properties
from pyhudi.model.table_config import load_table_config, table_checksum
from pyhudi.model.upgrade import UpgradeRefusedError
from pyhudi.services import compaction
from pyhudi.storage import Storage
from pyhudi.writer.config import CompactionConfig
from tests.helpers import hudi_rs
from tests.old_tables import copy_plans_to_aux, legacy_delete_block, set_version

pytestmark = pytest.mark.spark
SCHEMA = "id long, name string, part string, ts long"
OPTS = {"hoodie.table.name": "old", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.compact.inline": "false",
        "hoodie.index.type": "SIMPLE"}
_WRAPPER_KIND = {"IntWrapper": "int", "LongWrapper": "long", "StringWrapper": "string", "DoubleWrapper": "double"}


def _write(spark, path: str, rows: list[tuple], **extra: str) -> str | None:  # type: ignore[no-untyped-def]
    return pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, {**OPTS, **extra})


def _rows(table) -> dict[int, tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    if table is None:
        return {}
    return {r["id"]: (r["name"], r["part"], r["ts"]) for r in table.select(["id", "name", "part", "ts"]).to_pylist()}


def _pyhudi_rows(spark, path: str) -> dict[int, tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    return {r["id"]: (r["name"], r["part"], r["ts"]) for r in pyhudi.read(spark, path).select(
        "id", "name", "part", "ts").collect()}


@pytest.fixture(scope="module")
def v6_table(spark, tmp_path_factory) -> tuple[pathlib.Path, dict[int, tuple[str, str, int]]]:  # type: ignore[no-untyped-def]
    """A v6 MOR table with base files, log data blocks, two delete blocks and a pending compaction."""
    root = tmp_path_factory.mktemp("old") / "t"
    path = str(root)
    _write(spark, path, [(i, f"n{i}", f"p{i % 2}", 1) for i in range(8)])
    _write(spark, path, [(1, "u1", "p1", 2), (2, "u2", "p0", 2)])
    _write(spark, path, [(3, "x", "p1", 3)], **{"hoodie.datasource.write.operation": "delete"})
    _write(spark, path, [(4, "x", "p0", 3)], **{"hoodie.datasource.write.operation": "delete"})
    model = {i: (f"n{i}", f"p{i % 2}", 1) for i in range(8) if i not in (3, 4)}
    model.update({1: ("u1", "p1", 2), 2: ("u2", "p0", 2)})
    storage = Storage(path)
    assert compaction.schedule(storage, load_table_config(storage), CompactionConfig(), force=True)
    _write(spark, path, [(5, "after-plan", "p1", 5)])  # a log of the slice after the pending compaction
    model[5] = ("after-plan", "p1", 5)
    return root, model


def _legacy_logs(root: pathlib.Path) -> list[tuple[str, int]]:
    """Rewrite every delete block to Kryo contents: the first of version 1, the others of version 2."""
    done: list[tuple[str, int]] = []
    for log in sorted(root.glob("p*/.*.log.*")):
        data = log.read_bytes()
        out, changed = bytearray(), False
        for block in read_blocks(data):
            raw = data[block.offset:block.offset + block.size]
            if block.block_type == BlockType.DELETE_BLOCK:
                version = 1 if not done else 2
                records = [(k, p, None if w is None else (_WRAPPER_KIND[w], v))
                           for k, p, w, v in delete_records(block)]
                raw = legacy_delete_block(version, records, block.instant_time or "")
                done.append((log.name, version))
                changed = True
            out += raw
        if changed:
            log.write_bytes(bytes(out))
    return done


def _make_old(src: pathlib.Path, dest: pathlib.Path, version: int) -> tuple[pathlib.Path, list[str]]:
    root = dest / "t"
    shutil.copytree(src, root)
    set_version(root, version)
    aux = copy_plans_to_aux(root)
    assert aux, "the fixture has a pending compaction"
    assert [v for _, v in _legacy_logs(root)] == [1, 2]
    return root, aux


def _props(root: pathlib.Path) -> dict[str, str]:
    return parse_properties((root / ".hoodie" / "hoodie.properties").read_text())


@pytest.mark.parametrize("version", [5, 4])
def test_old_table_read_then_upgraded_by_first_write(spark, v6_table, tmp_path, version: int) -> None:  # type: ignore[no-untyped-def]
    src, model = v6_table[0], dict(v6_table[1])
    root, aux = _make_old(src, tmp_path, version)
    path = str(root)
    assert _pyhudi_rows(spark, path) == model  # read as it is, v1/v2 delete blocks decoded
    assert _props(root)["hoodie.table.version"] == str(version)

    _write(spark, path, [(6, "first-write", "p0", 9)])
    model[6] = ("first-write", "p0", 9)
    props = _props(root)
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.table.checksum"] == str(table_checksum(props["hoodie.database.name"],
                                                                props["hoodie.table.name"]))
    assert not any((root / ".hoodie" / ".aux" / name).exists() for name in aux)
    assert all((root / ".hoodie" / name).stat().st_size > 0 for name in aux)
    assert _pyhudi_rows(spark, path) == model

    # hudi-rs refuses log blocks below version 3 ("Only support log block version 3"), so it reads the table
    # once the pending plan, carried over by the upgrade, has merged the Kryo delete blocks away.
    pyhudi.compact(spark, path, OPTS)
    assert _pyhudi_rows(spark, path) == model
    assert _rows(hudi_rs(path)) == model


def test_write_interrupted_mid_upgrade_is_completed_by_the_next(spark, v6_table, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A write that fails inside the upgrade (just before the version bump) leaves a readable version-5
    table; the next write completes the upgrade and its own commit."""
    from pyhudi import faults

    src, model = v6_table[0], dict(v6_table[1])
    root, aux = _make_old(src, tmp_path, 5)
    monkeypatch.setenv(faults.RAISE_ENV, "upgrade.before_bump")
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        _write(spark, str(root), [(6, "lost", "p0", 9)])
    monkeypatch.delenv(faults.RAISE_ENV)
    faults.reset()
    assert _props(root)["hoodie.table.version"] == "5"
    assert not any((root / ".hoodie" / ".aux" / name).exists() for name in aux)  # steps before the bump done
    assert _pyhudi_rows(spark, str(root)) == model
    _write(spark, str(root), [(7, "next", "p1", 9)])
    model[7] = ("next", "p1", 9)
    assert _props(root)["hoodie.table.version"] == "6"
    assert _pyhudi_rows(spark, str(root)) == model


def test_auto_upgrade_false_refuses_to_write(spark, v6_table, tmp_path) -> None:  # type: ignore[no-untyped-def]
    src, model = v6_table[0], dict(v6_table[1])
    root, aux = _make_old(src, tmp_path, 5)
    before = (root / ".hoodie" / "hoodie.properties").read_bytes()
    with pytest.raises(UpgradeRefusedError, match="hoodie.write.auto.upgrade=false"):
        _write(spark, str(root), [(6, "no", "p0", 9)], **{"hoodie.write.auto.upgrade": "false"})
    assert (root / ".hoodie" / "hoodie.properties").read_bytes() == before
    assert all((root / ".hoodie" / ".aux" / name).exists() for name in aux)
    assert _pyhudi_rows(spark, str(root)) == model


@pytest.mark.parametrize("version", [3, 7, 8, 9])
def test_unsupported_versions_are_refused(spark, v6_table, tmp_path, version: int) -> None:  # type: ignore[no-untyped-def]
    src, _ = v6_table
    root = tmp_path / "t"
    shutil.copytree(src, root)
    set_version(root, version, drop_checksum=False)
    with pytest.raises(UnsupportedTableError, match=f"version {version}"):
        pyhudi.read(spark, str(root))
    with pytest.raises(UnsupportedTableError, match=f"version {version}"):
        _write(spark, str(root), [(6, "no", "p0", 9)])
    assert _props(root)["hoodie.table.version"] == str(version)
