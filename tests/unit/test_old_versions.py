"""Tables of version 4/5 read as Hudi 0.14 reads them: the version gate, delete blocks of log-block
versions 1 and 2 (Kryo), compaction plans kept under .hoodie/.aux.

The KRYO_* bytes were written by Kryo 4.0.3 (Spark's copy) configured as Hudi's SerializationUtils, for
stand-in classes with Hudi 0.14's field layout of HoodieKey and DeleteRecord (frozen by HUDI-5760):
`kryo.writeClassAndObject(new HoodieKey[]{...})` and `(new DeleteRecord[]{...})`.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import pytest

from pyhudi.errors import CorruptFileError, UnsupportedTableError
from pyhudi.io.kryo_delete import decode_kryo_deletes
from pyhudi.io.log_blocks import decode_delete_block, delete_records
from pyhudi.io.log_format import read_blocks
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import compaction_plan_bytes
from tests.old_tables import kryo_deletes, legacy_delete_block

# new HoodieKey[]{("k1", p), ("k2", p), ("ké中3", null)}, p one String instance
KRYO_KEYS = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b6579bb010401016f"
    "72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101323032342f30312f30"
    "b2016bb101010104016bb20101010001856bc3a9e4b8ad33")
KRYO_KEYS_EMPTY = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b6579bb0101")
KRYO_KEYS_NULL_ELEMENT = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b6579bb010301016f"
    "72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101826201826100")
# DeleteRecord[] with orderings 0, 5L, "s", null, 2.5d, 7, 1.5f, true ("x" is an interned literal)
KRYO_RECORDS = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f7264bb0109"
    "01016f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f72e40101026f72"
    "672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101323032342f30312f30b2"
    "016bb1020001010101020105016bb2090a010101010201018278016bb3030182730101010102010c016bb40001010101"
    "020105016bb50a400400000000000001010101020105016bb6020e0101010102010181016bb7043fc000000101010102"
    "0105016bb80501")
# two DeleteRecords sharing one HoodieKey instance, ordering Integer(1)
KRYO_SHARED_KEY = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f7264bb0103"
    "01016f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f72e40101026f72"
    "672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101323032342f30312f30b2"
    "0173616de502020101010102040202")
# BigDecimal("-12345.678") and BigDecimal("1E+3")
KRYO_DECIMALS = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f7264bb0103"
    "01016f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f72e40101026f72"
    "672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101323032342f30312f30b2"
    "0164b101036a6176612e6d6174682e426967446563696d61ec0105ff439eb206010101010201050164b2010301020105")
# LocalDate.of(2024, 1, 2)
KRYO_DATE = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f7264bb0102"
    "01016f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f72e40101026f72"
    "672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101323032342f30312f30b2"
    "0174b101036a6176612e74696d652e4c6f63616c446174e501e80f0102")
# key "\ud83d\ude00k" (a surrogate pair), ordering -3
KRYO_SURROGATE = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f7264bb0102"
    "01016f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f72e40101026f72"
    "672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101323032342f30312f30b2"
    "0184eda0bdedb8806b0205")
# a 70-character key, ordering 123456789012L
KRYO_LONG_KEY = bytes.fromhex(
    "01005b4c6f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f7264bb0102"
    "01016f72672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e44656c6574655265636f72e40101026f72"
    "672e6170616368652e687564692e636f6d6d6f6e2e6d6f64656c2e486f6f6469654b65f90101323032342f30312f30b2"
    "01c701787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
    "7878787878787878787878787878787878787878787878787809a8e8c8e99707")
P = "2024/01/02"


def test_kryo_hoodie_keys_version_1() -> None:
    """v1: HoodieKey[] -> DeleteRecord.create(key): ordering Integer(0), the 'no ordering' default."""
    assert decode_kryo_deletes(1, KRYO_KEYS, "f") == [
        ("k1", P, "IntWrapper", 0), ("k2", P, "IntWrapper", 0), ("ké中3", None, "IntWrapper", 0)]
    assert decode_kryo_deletes(1, KRYO_KEYS_EMPTY, "f") == []


def test_kryo_delete_records_version_2() -> None:
    got = decode_kryo_deletes(2, KRYO_RECORDS, "f")
    assert got == [("k1", P, "IntWrapper", 0), ("k2", P, "LongWrapper", 5), ("k3", "x", "StringWrapper", "s"),
                   ("k4", "x", None, None), ("k5", P, "DoubleWrapper", 2.5), ("k6", P, "IntWrapper", 7),
                   ("k7", "", "FloatWrapper", 1.5), ("k8", P, "BooleanWrapper", True)]


def test_kryo_back_references_and_other_values() -> None:
    assert decode_kryo_deletes(2, KRYO_SHARED_KEY, "f") == [("same", P, "IntWrapper", 1)] * 2
    assert decode_kryo_deletes(2, KRYO_DECIMALS, "f") == [("d1", P, "DecimalWrapper", Decimal("-12345.678")),
                                                          ("d2", P, "DecimalWrapper", Decimal("1E+3"))]
    days = (dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days
    assert decode_kryo_deletes(2, KRYO_DATE, "f") == [("t1", P, "DateWrapper", days)]
    assert decode_kryo_deletes(2, KRYO_SURROGATE, "f") == [("\U0001F600k", P, "IntWrapper", -3)]
    assert decode_kryo_deletes(2, KRYO_LONG_KEY, "f") == [("x" * 70, P, "LongWrapper", 123456789012)]


def test_test_encoder_matches_real_kryo_bytes() -> None:
    """tests/old_tables.kryo_deletes (used to build old tables) writes exactly what Kryo wrote."""
    assert kryo_deletes(1, [("k1", P, None), ("k2", P, None), ("ké中3", None, None)]) == KRYO_KEYS
    assert kryo_deletes(2, [("k1", P, ("int", 0)), ("k2", P, ("long", 5)), ("k3", "x", ("string", "s")),
                            ("k4", "x", None), ("k5", P, ("double", 2.5)), ("k6", P, ("int", 7)),
                            ("k7", "", ("float", 1.5)), ("k8", P, ("boolean", True))]) == KRYO_RECORDS
    assert kryo_deletes(2, [("\U0001F600k", P, ("int", -3))]) == KRYO_SURROGATE
    assert kryo_deletes(2, [("x" * 70, P, ("long", 123456789012))]) == KRYO_LONG_KEY


def test_legacy_delete_block_in_a_log_file_decodes() -> None:
    raw = legacy_delete_block(2, [("a", "p", ("long", 3)), ("b", "p", None)], "20240101000000000")
    (block,) = read_blocks(raw)
    assert decode_delete_block(block) == [("a", "p", 3), ("b", "p", None)]
    raw1 = legacy_delete_block(1, [("a", "p", None)], "20240101000000000")
    (block1,) = read_blocks(raw1)
    assert delete_records(block1) == [("a", "p", "IntWrapper", 0)]


def test_undecodable_kryo_blocks_are_refused_naming_the_file() -> None:
    """Never skipped: a class pyhudi cannot decode, or malformed bytes, raise with the file's name."""
    odd = KRYO_DATE.replace(bytes.fromhex("6a6176612e74696d652e4c6f63616c446174e5"), b"java.sql.Timestam\xf0")
    with pytest.raises(UnsupportedTableError, match=r"p/\.f\.log\.1.*java\.sql\.Timestamp"):
        decode_kryo_deletes(2, odd, "p/.f.log.1")
    with pytest.raises(CorruptFileError, match=r"p/\.f\.log\.1"):
        decode_kryo_deletes(2, KRYO_RECORDS[:-3], "p/.f.log.1")
    with pytest.raises(CorruptFileError, match="null element"):
        decode_kryo_deletes(1, KRYO_KEYS_NULL_ELEMENT, "f")
    with pytest.raises(UnsupportedTableError, match="HoodieKey"):
        decode_kryo_deletes(2, KRYO_KEYS, "f")  # a v1 payload labelled v2
    raw = legacy_delete_block(2, [("a", "p", None)], "1")
    (block,) = read_blocks(raw)
    bad = block.content[:8] + b"\x01\x00\x83zz"  # an array class named "zz"
    from dataclasses import replace

    with pytest.raises(UnsupportedTableError, match=r"part/\.x\.log\.1 \(delete block at offset 0\)"):
        delete_records(replace(block, content=struct.pack(">ii", 2, len(bad) - 8) + bad[8:], source="part/.x.log.1"))


@pytest.mark.parametrize("version", [3, 7, 8, 9, 0])
def test_versions_outside_4_to_6_are_refused(version: int) -> None:
    props = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": str(version),
             "hoodie.timeline.layout.version": "1"}
    with pytest.raises(UnsupportedTableError, match=f"version {version} .*reads table versions 4-6") as err:
        TableConfig.from_properties(props, where="/t")
    assert ("Hudi 1.x" in str(err.value)) == (version > 6)
    assert "/t" in str(err.value)


@pytest.mark.parametrize("version", [4, 5, 6])
def test_versions_4_to_6_are_read(version: int) -> None:
    props = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": str(version)}
    if version == 6:
        props["hoodie.timeline.layout.version"] = "1"
    assert TableConfig.from_properties(props, where="/t").version == version


def test_compaction_plan_falls_back_to_aux(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A requested compaction whose timeline copy is empty is read from .hoodie/.aux (Hudi 0.11-0.13)."""
    meta = tmp_path / ".hoodie"
    (meta / ".aux").mkdir(parents=True)
    (meta / "001.compaction.requested").write_bytes(b"")
    (meta / ".aux" / "001.compaction.requested").write_bytes(b"PLAN")
    (meta / "002.compaction.requested").write_bytes(b"OWN")
    (meta / ".aux" / "002.compaction.requested").write_bytes(b"STALE")
    tl = ActiveTimeline.load(Storage(str(tmp_path)))
    assert compaction_plan_bytes(tl, Instant("001", Action.COMPACTION, State.REQUESTED)) == b"PLAN"
    assert compaction_plan_bytes(tl, Instant("002", Action.COMPACTION, State.REQUESTED)) == b"OWN"
