"""`log_merge` on version-6 tables: Hudi 0.14/0.15's rules (HoodieMergedLogRecordScanner with the payload's
preCombine among log records, then combineAndGetUpdateValue against the base row), case by case, where they
differ from Hudi 1.x's merge modes (what hudi-rs 0.5 reads; tests/unit/test_log_merge.py), and which mode a
table's hoodie.properties selects."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyhudi.errors import UnsupportedTableError
from pyhudi.io import schema as S
from pyhudi.io.log_blocks import encode_avro_data_block
from pyhudi.model.table_config import TableConfig
from pyhudi.reader.log_deletes import _java_wrapper
from pyhudi.reader.log_merge import MergeMode, MergeSpec, merge_file_slice, table_merge_mode
from pyhudi.storage import Storage
from tests.unit.test_log_merge import FID, TABLE_AVRO, TARGET, Slice, T, data, delete
from tests.unit.test_log_merge import I as IntW
from tests.unit.test_log_merge import L as LongW

OVERWRITE, DEFAULT = MergeMode.OVERWRITE_PAYLOAD, MergeMode.DEFAULT_PAYLOAD
IS_DELETED = "_hoodie_is_deleted"
FLAGGED_AVRO = {**TABLE_AVRO, "fields": [*TABLE_AVRO["fields"], {"name": IS_DELETED, "type": ["null", "boolean"], "default": None}]}
FLAGGED = S.avro_to_arrow(S.with_meta_fields(FLAGGED_AVRO))


@pytest.fixture
def mk(tmp_path: Path) -> Callable[[], Slice]:
    counter = iter(range(1000))
    return lambda: Slice(tmp_path / f"t{next(counter)}")


def state(s: Slice, mode: MergeMode, target: pa.Schema = TARGET) -> dict[str, tuple[Any, Any]]:
    spec = MergeSpec(frozenset(s.committed), None, "ts", target, mode=mode)
    table, _ = merge_file_slice(Storage(str(s.root)), FID, s.base_path, list(s.logs), spec)
    return {r["id"]: (r["ts"], r["val"]) for r in table.to_pylist()}


def history(mk: Callable[[], Slice], base: list[tuple[str, Any, str]] | None, *blocks: bytes) -> Slice:
    s = mk()
    if base:
        s.base(*base)
    s.log(*blocks)
    s.commit(*[T(n) for n in range(2, 2 + len(blocks))])
    return s


# (name, base rows, log blocks, OverwriteWithLatestAvroPayload result, DefaultHoodieRecordPayload result)
CASES: list[tuple[str, Any, list[bytes], dict[str, Any], dict[str, Any]]] = [
    ("the review's case: the greater value wins among logs, the log replaces the base row",
     [("k", 5, "base")], [data(T(2), ("k", 3, "10")), data(T(3), ("k", 2, "20"))],
     {"k": (3, "10")}, {"k": (5, "base")}),
    ("equal values among logs: the later record", None, [data(T(2), ("k", 3, "a")), data(T(3), ("k", 3, "b"))],
     {"k": (3, "b")}, {"k": (3, "b")}),
    ("a base row with a greater value: Default keeps it, ties go to the log", [("k", 5, "base"), ("j", 4, "jb")],
     [data(T(2), ("k", 4, "low"), ("j", 4, "tie"))], {"k": (4, "low"), "j": (4, "tie")},
     {"k": (5, "base"), "j": (4, "tie")}),
    ("a null base value: any update replaces it", [("k", None, "base")], [data(T(2), ("k", -7, "log"))],
     {"k": (-7, "log")}, {"k": (-7, "log")}),
    ("a delete older than the log record is dropped", None, [data(T(2), ("k", 5, "x")), delete(T(3), ("k", LongW(3)))],
     {"k": (5, "x")}, {"k": (5, "x")}),
    ("a delete equal to the log record applies", None, [data(T(2), ("k", 5, "x")), delete(T(3), ("k", LongW(5)))],
     {}, {}),
    ("IntWrapper against a long column: not the same Java class, the delete applies", None,
     [data(T(2), ("k", 5, "x")), delete(T(3), ("k", IntW(3)))], {}, {}),
    ("IntWrapper(0) and null: natural order, the delete applies", None,
     [data(T(2), ("k", 5, "x"), ("j", 5, "y")), delete(T(3), ("k", IntW(0)), ("j", None))], {}, {}),
    ("a data record after a delete wins whatever its value", [("k", 9, "base")],
     [delete(T(2), ("k", LongW(9))), data(T(3), ("k", 1, "re"))], {"k": (1, "re")}, {"k": (9, "base")}),
    ("a delete-block delete removes the base row whatever its value", [("k", 5, "base")],
     [delete(T(2), ("k", LongW(3)))], {}, {}),
    ("a dropped delete leaves the greater record to meet the base row", [("k", 1, "base")],
     [data(T(2), ("k", 6, "six")), delete(T(3), ("k", LongW(4))), data(T(4), ("k", 5, "five"))],
     {"k": (6, "six")}, {"k": (6, "six")}),
    ("only the greatest record since the last applied delete counts", [("k", 1, "base")],
     [data(T(2), ("k", 6, "six")), delete(T(3), ("k", LongW(7))), data(T(4), ("k", 2, "two")),
      delete(T(5), ("k", LongW(1))), data(T(6), ("k", 3, "three"))], {"k": (3, "three")}, {"k": (3, "three")}),
]


@pytest.mark.parametrize(("name", "base", "blocks", "overwrite", "default"), CASES, ids=[c[0] for c in CASES])
def test_hudi_014_rules(mk: Callable[[], Slice], name: str, base: Any, blocks: list[bytes],
                        overwrite: dict[str, Any], default: dict[str, Any]) -> None:
    s = history(mk, base, *blocks)
    assert state(s, OVERWRITE) == overwrite
    assert state(s, DEFAULT) == default


def _flagged(instant: str, flag: bool, *records: tuple[str, int, str]) -> bytes:
    rows = Slice.rows(instant, *records, schema=FLAGGED)
    rows = rows.set_column(rows.schema.get_field_index(IS_DELETED), IS_DELETED, pa.array([flag] * len(records)))
    return encode_avro_data_block(rows, S.to_json(S.with_meta_fields(FLAGGED_AVRO)), instant)


def test_is_deleted_record_in_a_log_competes_by_value(mk: Callable[[], Slice]) -> None:
    """A `_hoodie_is_deleted` record is a data record to preCombine (it has bytes) and a delete once chosen;
    DefaultHoodieRecordPayload keeps a base row with a greater value (needUpdatingPersistedRecord first)."""
    s = mk()
    s.base(("k", 5, "base"), ("j", 1, "jb"), schema=FLAGGED)
    s.log(_flagged(T(2), True, ("k", 3, "gone"), ("j", 2, "gone")), _flagged(T(3), False, ("j", 1, "stale")))
    s.commit(T(2), T(3))
    assert state(s, OVERWRITE, FLAGGED) == {}  # j: the flagged record (2) beats the later, lower one (1)
    assert state(s, DEFAULT, FLAGGED) == {"k": (5, "base")}


def test_no_ordering_field_is_commit_order(mk: Callable[[], Slice]) -> None:
    s = history(mk, [("k", 5, "base")], data(T(2), ("k", 9, "nine")), data(T(3), ("k", 1, "one")),
                delete(T(4), ("j", LongW(1))))
    spec = MergeSpec(frozenset(s.committed), None, None, TARGET, mode=OVERWRITE)
    table, _ = merge_file_slice(Storage(str(s.root)), FID, s.base_path, list(s.logs), spec)
    assert table.select(["id", "ts", "val"]).to_pylist() == [{"id": "k", "ts": 1, "val": "one"}]


def test_many_keys_with_deletes(mk: Callable[[], Slice]) -> None:
    """Thousands of keys, half with deletes (the ordered pass over keys with deletes, about 3 ms per
    thousand such keys, then the vectorized pick), against the rules read key by key."""
    n = 4000
    s = mk()
    s.base(*[(f"k{i}", 5, "b") for i in range(n)])
    s.log(data(T(2), *[(f"k{i}", i % 7, "d") for i in range(n)]),
          delete(T(3), *[(f"k{i}", LongW(i % 5)) for i in range(0, n, 2)]),
          data(T(4), *[(f"k{i}", i % 3, "e") for i in range(0, n, 4)]))
    s.commit(T(2), T(3), T(4))
    got = state(s, OVERWRITE)
    assert len(got) == sum(1 for i in range(n) if not (i % 2 == 0 and i % 4 and not i % 7 > i % 5))
    for i in range(200):  # an independent reading of the rules, key by key
        cur: tuple[int, str] | None = (i % 7, "d")
        if i % 2 == 0 and not i % 7 > i % 5:
            cur = None  # the delete applies (LongWrapper(0) included: only IntWrapper(0) is natural order)
        if i % 4 == 0 and (cur is None or not cur[0] > i % 3):
            cur = (i % 3, "e")
        assert got.get(f"k{i}") == cur, i


@pytest.mark.parametrize(("props", "mode", "ordering"), [
    ({}, OVERWRITE, "ts"),
    ({"hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"},
     OVERWRITE, "ts"),
    ({"hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}, DEFAULT, "ts"),
    ({"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}, MergeMode.COMMIT_TIME_ORDERING, None),
    ({"hoodie.record.merge.mode": "event_time_ordering"}, MergeMode.EVENT_TIME_ORDERING, "ts"),
])
def test_table_merge_mode(props: dict[str, str], mode: MergeMode, ordering: str | None) -> None:
    config = TableConfig(name="t", precombine_field="ts", payload_class=props.get("hoodie.compaction.payload.class"),
                         raw=props)
    assert table_merge_mode(config) == (mode, ordering)


def test_custom_merge_mode_is_refused() -> None:
    config = TableConfig(name="t", precombine_field="ts", raw={"hoodie.record.merge.mode": "CUSTOM"})
    with pytest.raises(UnsupportedTableError, match="hoodie.record.merge.mode=CUSTOM"):
        table_merge_mode(config)


@pytest.mark.parametrize(("arrow_type", "wrapper"), [
    (pa.int32(), "IntWrapper"), (pa.date32(), "IntWrapper"), (pa.int64(), "LongWrapper"),
    (pa.timestamp("us"), "LongWrapper"), (pa.float32(), "FloatWrapper"), (pa.float64(), "DoubleWrapper"),
    (pa.bool_(), "BooleanWrapper"), (pa.string(), None), (pa.decimal128(10, 2), None),
])
def test_delete_compares_only_with_its_java_class(arrow_type: pa.DataType, wrapper: str | None) -> None:
    assert _java_wrapper(arrow_type) == wrapper
