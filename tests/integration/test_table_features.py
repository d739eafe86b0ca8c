"""Issue 16, item 7: tables carrying a feature pyhudi does not implement are refused by every entry point.

One small MOR table is written by pyhudi once; each case copies it and adds the feature (a property in
hoodie.properties, a folder, or a log block of an unknown type), then checks pyhudi.read, pyhudi.write,
compaction, clustering, clean and the CLI's `files` / `timeline` commands refuse it with
UnsupportedTableError naming the feature's property, and that nothing was written.
"""

from __future__ import annotations

import shutil
import struct
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import pyhudi
from pyhudi.cli.main import main as cli_main
from pyhudi.errors import UnsupportedTableError
from pyhudi.io.log_format import MAGIC, BlockType, encode_block
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.model.table_features import CONSISTENT_HASHING_DIR

pytestmark = pytest.mark.spark

OPTIONS = {"hoodie.table.name": "feat", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
SCHEMA = "id long, name string, part string, ts long"

# (case, properties added, the property the error must name); all refused on read and on write.
READ_FEATURES = [
    ("bootstrap", {"hoodie.bootstrap.base.path": "/data/source"}, "hoodie.bootstrap.base.path"),
    ("orc", {"hoodie.table.base.file.format": "ORC"}, "hoodie.table.base.file.format"),
    ("payload", {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.PartialUpdateAvroPayload"},
     "hoodie.compaction.payload.class"),
    ("keygen", {"hoodie.table.keygenerator.class": "com.example.KeyGen"}, "hoodie.table.keygenerator.class"),
    ("unknown_table_property", {"hoodie.table.storage.layout": "lsm"}, "hoodie.table.storage.layout"),
    ("drop_partition_columns", {"hoodie.datasource.write.drop.partition.columns": "true"},
     "hoodie.datasource.write.drop.partition.columns"),
    ("timeline_layout_0", {"hoodie.timeline.layout.version": "0"}, "hoodie.timeline.layout.version=0"),
]
# Read as before; every write and table service refused.
WRITE_FEATURES = [
    ("cdc", {"hoodie.table.cdc.enabled": "true"}, "hoodie.table.cdc.enabled"),
    ("secondary_index", {"hoodie.table.secondary.indexes.metadata": "{}"}, "hoodie.table.secondary.indexes.metadata"),
]


@pytest.fixture(scope="module")
def written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("features") / "t"
    df = spark.createDataFrame([(1, "a", "p0", 1), (2, "b", "p1", 1)], SCHEMA)
    pyhudi.write(df, str(path), {**OPTIONS, "hoodie.datasource.write.operation": "insert"})
    upd = spark.createDataFrame([(1, "a2", "p0", 2)], SCHEMA)
    pyhudi.write(upd, str(path), OPTIONS)  # a log file for the MOR read and compaction
    return path


def _copy(src: Path, dest: Path, extra: dict[str, str] | None = None) -> Path:
    shutil.copytree(src, dest)
    if extra:
        props_file = dest / ".hoodie" / "hoodie.properties"
        props = parse_properties(props_file.read_text())
        props_file.write_text(format_properties({**props, **extra}))
    return dest


def _timeline_files(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())


def _refused(call: Any, needle: str) -> None:
    with pytest.raises(UnsupportedTableError) as exc:
        call()
    assert needle in str(exc.value), str(exc.value)


def _write_and_services_refused(spark: Any, path: Path, needle: str) -> None:
    before = _timeline_files(path)
    df = spark.createDataFrame([(3, "c", "p0", 3)], SCHEMA)
    _refused(lambda: pyhudi.write(df, str(path), OPTIONS), needle)
    _refused(lambda: pyhudi.write(df, str(path), {**OPTIONS, "hoodie.datasource.write.operation": "bulk_insert"}),
             needle)
    _refused(lambda: pyhudi.compact(spark, str(path)), needle)
    _refused(lambda: pyhudi.cluster(spark, str(path)), needle)
    _refused(lambda: pyhudi.clean(spark, str(path)), needle)
    assert _timeline_files(path) == before  # nothing was started


def _cli_refused(path: Path, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["files", str(path)], ["timeline", str(path)]):
        code = cli_main(command)
        err = capsys.readouterr().err
        assert code != 0 and needle in err, (command, code, err)


@pytest.mark.parametrize("case, extra, needle", READ_FEATURES, ids=[c[0] for c in READ_FEATURES])
def test_read_feature_refused_everywhere(spark: Any, written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         case: str, extra: dict[str, str], needle: str) -> None:
    path = _copy(written, tmp_path / case, extra)
    _refused(lambda: pyhudi.read(spark, str(path)), needle)
    _write_and_services_refused(spark, path, needle)
    _cli_refused(path, needle, capsys)


@pytest.mark.parametrize("case, extra, needle", WRITE_FEATURES, ids=[c[0] for c in WRITE_FEATURES])
def test_write_feature_read_but_not_written(spark: Any, written: Path, tmp_path: Path, case: str,
                                            extra: dict[str, str], needle: str) -> None:
    path = _copy(written, tmp_path / case, extra)
    rows = {(r["id"], r["name"]) for r in pyhudi.read(spark, str(path)).collect()}
    assert rows == {(1, "a2"), (2, "b")}
    _write_and_services_refused(spark, path, needle)


def test_write_options_refused(spark: Any, written: Path, tmp_path: Path) -> None:
    """A write asking for the record-level index, the consistent-hashing engine or CDC is refused, on an
    existing table and when it would create one (nothing is created)."""
    path = _copy(written, tmp_path / "opts")
    df = spark.createDataFrame([(3, "c", "p0", 3)], SCHEMA)
    asks = [({"hoodie.index.type": "RECORD_INDEX"}, "hoodie.index.type=RECORD_INDEX"),
            ({"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "CONSISTENT_HASHING"},
             "hoodie.index.bucket.engine=CONSISTENT_HASHING"),
            ({"hoodie.table.cdc.enabled": "true"}, "hoodie.table.cdc.enabled")]
    for extra, needle in asks:
        _refused(partial(pyhudi.write, df, str(path), {**OPTIONS, **extra}), needle)
        fresh = tmp_path / "fresh"
        _refused(partial(pyhudi.write, df, str(fresh), {**OPTIONS, **extra}), needle)
        assert not (fresh / ".hoodie" / "hoodie.properties").exists()


def test_consistent_hashing_folder_refuses_writes(spark: Any, written: Path, tmp_path: Path) -> None:
    path = _copy(written, tmp_path / "ch")
    (path / CONSISTENT_HASHING_DIR / "p0").mkdir(parents=True)
    assert pyhudi.read(spark, str(path)).count() == 2
    _write_and_services_refused(spark, path, "consistent-hashing")


def test_unknown_log_block_type_refused_naming_the_file(spark: Any, written: Path, tmp_path: Path) -> None:
    """A well-framed log block of a type pyhudi does not know was skipped as corrupt (its records silently
    lost); now the read fails naming the log file."""
    path = _copy(written, tmp_path / "block")
    (log,) = [p for p in path.rglob(".*.log.*") if p.is_file()]
    block = bytearray(encode_block(BlockType.COMMAND_BLOCK, {}, b""))
    assert block.startswith(MAGIC)
    struct.pack_into(">i", block, len(MAGIC) + 8 + 4, 42)  # the block type field, after length and version
    with log.open("ab") as fh:
        fh.write(bytes(block))
    with pytest.raises(Exception) as exc:
        pyhudi.read(spark, str(path)).collect()
    assert "UnsupportedTableError" in str(exc.value) or isinstance(exc.value, UnsupportedTableError)
    assert log.name in str(exc.value) and "block type 42" in str(exc.value)
