"""Which writes need a non-null precombine value (Hudi 0.14: BaseAvroPayload refuses a null ordering value
whenever the datasource writer combines), and the one-task write's in-task check."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from pyhudi.config.registry import Options
from pyhudi.model.table_config import TableConfig
from pyhudi.writer import single_task as st
from pyhudi.writer.config import build_write_config
from pyhudi.writer.operation import WriteOperation as Op
from pyhudi.writer.prepare import null_ordering_error, ordering_required

TABLE = TableConfig(name="t", record_key_fields=("id",), partition_fields=("p",), precombine_field="ts")


def _cfg(op: Op, table: TableConfig = TABLE, **options: str):
    return build_write_config(Options.parse(options), table, op)


@pytest.mark.parametrize(("op", "options", "required"), [
    (Op.UPSERT, {}, True),
    (Op.UPSERT, {"hoodie.combine.before.upsert": "false"}, True),  # Hudi reads it for every upsert record
    (Op.INSERT, {}, False),
    (Op.INSERT, {"hoodie.combine.before.insert": "true"}, True),
    (Op.BULK_INSERT, {}, False),
    (Op.BULK_INSERT, {"hoodie.combine.before.insert": "true"}, True),
    (Op.INSERT_OVERWRITE, {"hoodie.combine.before.insert": "true"}, True),
    (Op.DELETE, {}, False),
])
def test_which_writes_need_an_ordering_value(op, options, required):
    assert ordering_required(_cfg(op, **options)) is required


def test_no_precombine_field_needs_none():
    assert not ordering_required(_cfg(Op.UPSERT, TABLE.evolve(precombine_field=None)))


def test_error_names_field_and_fix():
    message = str(null_ordering_error(_cfg(Op.UPSERT), 3))
    assert "3 record(s)" in message and "'ts'" in message and "hoodie.datasource.write.precombine.field" in message
    assert "Fill the field" in message and "Nothing was written" in message


def test_task_refusal_counts_nulls_including_under_a_null_parent():
    ctx = SimpleNamespace(require_ordering=True, precombine_field="meta.ts")
    meta = pa.array([{"ts": 1}, None, {"ts": None}], pa.struct([("ts", pa.int64())]))
    assert st.null_ordering_refusal(ctx, pa.table({"meta": meta})) == {"error": st.ERR_NULL_ORDERING, "count": 2}
    flat = SimpleNamespace(require_ordering=True, precombine_field="ts")
    assert st.null_ordering_refusal(flat, pa.table({"ts": [1, 2]})) is None
    off = SimpleNamespace(require_ordering=False, precombine_field="ts")
    assert st.null_ordering_refusal(off, pa.table({"ts": pa.array([None], pa.int64())})) is None
