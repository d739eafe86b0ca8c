"""Read filters `(column, op, value)` evaluated on Arrow data as Spark evaluates `col <op> F.lit(value)`.

The Spark loader filters rows with Spark expressions; the in-process loader must keep exactly the same
rows, so this module reproduces Spark's semantics where Arrow's differ: a comparison with null is
null and drops the row; NaN equals NaN and sorts above every number; `in` with a null in its list
and no match is null (dropped), and so is `not in` then. Literals are typed as PySpark types them
(`view/partition_values.literal`: a naive datetime is local time). A column/literal pair Arrow cannot
compare (e.g. a string column with a number; Spark would cast and may fail) is refused with the pair
named, rather than guessed.

`pushdown` gives the subset of conditions whose parquet order equals Spark's exactly, over a base file's
own (physical) schema; `row_groups` keeps the row groups whose min/max statistics do not exclude them.
(Checked here rather than by `pyarrow.dataset`, whose import alone costs a second: it loads pandas.)
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import InvalidConfigError
from pyhudi.view.partition_values import literal
from pyhudi.view.partitions import Condition

_INTEGER = re.compile(r"[-+]?[0-9]+")
_OPS = {"=": pc.equal, "==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
        ">": pc.greater, ">=": pc.greater_equal}
# What the op answers for a NaN row compared with a number (NaN sorts above), or for NaN vs NaN (equal).
_NAN_ABOVE = {"=": False, "==": False, "!=": True, "<": False, "<=": False, ">": True, ">=": True}
_NAN_EQUAL = {"=": True, "==": True, "!=": False, "<": False, "<=": True, ">": False, ">=": True}


def column(table: pa.Table, dotted: str) -> pa.ChunkedArray:
    """A top-level or nested (`a.b`) column; a missing one is refused with the columns there are."""
    head, *rest = dotted.split(".")
    if head not in table.column_names:
        raise InvalidConfigError(f"filter column {dotted!r} is not a column of the table (columns: "
                                 f"{', '.join(table.column_names)}); fix the filter")
    arr = table.column(head)
    for part in rest:
        if not pa.types.is_struct(arr.type) or arr.type.get_field_index(part) < 0:
            raise InvalidConfigError(f"filter column {dotted!r}: {part!r} is not a field of {arr.type}")
        arr = pc.struct_field(arr, part)
    return arr


def row_mask(table: pa.Table, conditions: Sequence[Condition]) -> pa.ChunkedArray | pa.Array:
    """True for the rows every condition keeps (null answers drop the row, as Spark's filter does)."""
    mask: Any = pa.repeat(pa.scalar(True), table.num_rows)
    for cond in conditions:
        mask = pc.and_kleene(mask, _holds(column(table, cond.column), cond))
    return pc.fill_null(mask, False)


def apply(table: pa.Table, conditions: Sequence[Condition]) -> pa.Table:
    return table.filter(row_mask(table, conditions)) if conditions else table


def _values(cond: Condition) -> list[Any]:
    v = cond.value
    return list(v) if isinstance(v, (list, tuple, set, frozenset)) else [v]


def _holds(arr: pa.ChunkedArray, cond: Condition) -> Any:
    if cond.op in ("in", "not in"):
        found: Any = pa.repeat(pa.scalar(False), len(arr))
        for value in _values(cond):
            found = pc.or_kleene(found, _compare(arr, "=", value, cond))
        return found if cond.op == "in" else pc.invert(found)
    return _compare(arr, cond.op, cond.value, cond)


def _compare(arr: pa.ChunkedArray, op: str, value: Any, cond: Condition) -> Any:
    kind, lit = literal(value)
    if kind == "null":
        return pa.nulls(len(arr), pa.bool_())
    scalar = _scalar(arr.type, kind, lit, value, cond)
    target = arr
    if pa.types.is_timestamp(arr.type):  # compare as microseconds since the epoch, as Spark does
        target = arr.cast(pa.timestamp("us", tz=arr.type.tz))
    try:
        out = _OPS[op](target, scalar)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise _unsupported(cond, arr.type, value) from exc
    if _floating(arr.type) or pa.types.is_floating(scalar.type):
        out = _nan_fix(target, scalar, op, out)
    return out


def _scalar(dtype: pa.DataType, kind: str, lit: Any, value: Any, cond: Condition) -> pa.Scalar:
    if kind == "timestamp" and pa.types.is_timestamp(dtype) and dtype.tz is None:
        return pa.scalar(_wall_clock(value), pa.timestamp("us"))
    if kind == "timestamp":
        return pa.scalar(lit, pa.timestamp("us", tz=dtype.tz if pa.types.is_timestamp(dtype) else "UTC"))
    if kind == "decimal":
        return pa.scalar(lit)
    if kind in ("integral", "double", "boolean", "string", "date"):
        if kind == "string" and _numeric(dtype):
            return _numeric_text(dtype, lit, cond, value)
        return pa.scalar(lit)
    raise _unsupported(cond, dtype, value)


def _wall_clock(value: dt.datetime) -> dt.datetime:
    """A datetime literal compared with a TIMESTAMP_NTZ column: Spark casts the column to a timestamp in
    the session time zone (the local one); comparing local wall-clock times gives the same answer."""
    return value.astimezone().replace(tzinfo=None) if value.tzinfo is not None else value


def _numeric_text(dtype: pa.DataType, text: str, cond: Condition, value: Any) -> pa.Scalar:
    """A string literal compared with a numeric column: Spark (ANSI) casts the text to the column's
    type; text that does not parse as one is refused (Spark fails the query too)."""
    try:
        if pa.types.is_integer(dtype):
            if not _INTEGER.fullmatch(text.strip()):
                raise ValueError(text)
            return pa.scalar(int(text), pa.int64())
        if pa.types.is_decimal(dtype):
            return pa.scalar(Decimal(text.strip()))
        return pa.scalar(float(text), pa.float64())
    except (ValueError, ArithmeticError) as exc:
        raise _unsupported(cond, dtype, value) from exc


def _unsupported(cond: Condition, dtype: pa.DataType, value: Any) -> InvalidConfigError:
    return InvalidConfigError(
        f"filter ({cond.column!r}, {cond.op!r}, {value!r}): a {type(value).__name__} literal cannot be compared "
        f"with column {cond.column!r} of type {dtype} in-process; use a literal of the column's type")


def _numeric(dtype: pa.DataType) -> bool:
    return pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)


def _floating(dtype: pa.DataType) -> bool:
    return pa.types.is_floating(dtype)


def _nan_fix(arr: Any, scalar: pa.Scalar, op: str, out: Any) -> Any:
    """Spark's NaN order: NaN = NaN, NaN above every number (Arrow answers false for any NaN)."""
    lit_nan = pa.types.is_floating(scalar.type) and math.isnan(scalar.as_py())
    arr_nan = pc.is_nan(arr) if _floating(arr.type) else pa.repeat(pa.scalar(False), len(arr))
    if lit_nan:  # non-NaN rows are below the literal; NaN rows equal it
        below = {"=": False, "==": False, "!=": True, "<": True, "<=": True, ">": False, ">=": False}[op]
        return pc.if_else(arr_nan, _NAN_EQUAL[op], pc.if_else(pc.is_null(arr), None, below))
    return pc.if_else(arr_nan, _NAN_ABOVE[op], out)


# -- pushdown to parquet row groups -------------------------------------------------------------------

@dataclass(frozen=True)
class Pushed:
    """A condition checked against a row group's statistics: `values` are in the statistics' domain."""

    column: str
    op: str
    values: tuple[Any, ...]


def pushdown(schema: pa.Schema, conditions: Sequence[Condition]) -> list[Pushed]:
    """The conditions whose Arrow/parquet order is exactly Spark's, on top-level columns of a base file's
    physical `schema` (strings, signed integers, booleans, dates, timestamps with a zone, decimals; no
    floats: NaN), with literals converted exactly to the column's type (else not pushed)."""
    out = []
    for cond in conditions:
        values = _values(cond)
        if "." in cond.column or schema.get_field_index(cond.column) < 0 or cond.op == "not in":
            continue
        if not values or any(v is None for v in values):
            continue
        dtype = schema.field(cond.column).type
        scalars = [_push_scalar(dtype, v) for v in values]
        if all(sc is not None for sc in scalars):
            out.append(Pushed(cond.column, cond.op, tuple(_stat_key(dtype, sc) for sc in scalars if sc is not None)))
    return out


def row_groups(metadata: pq.FileMetaData, schema: pa.Schema, pushed: Sequence[Pushed]) -> list[int]:
    """The row groups whose statistics do not exclude every row for some pushed condition (a row group
    without usable statistics is kept)."""
    chunks = {metadata.schema.column(j).path: j for j in range(metadata.num_columns)}
    keep = []
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        if all(_may_match(group, chunks, schema, p) for p in pushed):
            keep.append(i)
    return keep


def _may_match(group: pq.RowGroupMetaData, chunks: dict[str, int], schema: pa.Schema, pushed: Pushed) -> bool:
    j = chunks.get(pushed.column)
    stats = group.column(j).statistics if j is not None else None
    if stats is None or not stats.has_min_max:
        return True
    bounds = _stat_bounds(schema.field(pushed.column).type, stats)
    if bounds is None:
        return True
    low, high = bounds
    if pushed.op == "in":
        return any(low <= v <= high for v in pushed.values)
    v = pushed.values[0]
    return {"=": low <= v <= high, "==": low <= v <= high, "!=": not (low == high == v), "<": low < v,
            "<=": low <= v, ">": high > v, ">=": high >= v}[pushed.op]


def _stat_key(dtype: pa.DataType, scalar: pa.Scalar) -> Any:
    """A literal in the domain `_stat_bounds` compares in: raw integers for dates and timestamps (the
    scalar has the column's unit), UTF-8 bytes for strings, Python values otherwise."""
    if pa.types.is_timestamp(dtype) or pa.types.is_date32(dtype):
        return scalar.value
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return scalar.as_py().encode()
    return scalar.as_py()


def _stat_bounds(dtype: pa.DataType, stats: pq.Statistics) -> tuple[Any, Any] | None:
    if pa.types.is_timestamp(dtype) or pa.types.is_date32(dtype):
        low, high = stats.min_raw, stats.max_raw
        return (low, high) if isinstance(low, int) and isinstance(high, int) else None  # INT96: not used
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        low, high = stats.min_raw, stats.max_raw
        low = low.encode() if isinstance(low, str) else low
        high = high.encode() if isinstance(high, str) else high
        return (low, high) if isinstance(low, bytes) and isinstance(high, bytes) else None
    return stats.min, stats.max


def _push_scalar(dtype: pa.DataType, value: Any) -> pa.Scalar | None:
    """The literal as a scalar of exactly `dtype` when that loses nothing, else None (not pushed)."""
    kind, lit = literal(value)
    try:
        if kind == "string" and (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            return pa.scalar(lit, dtype)
        if kind == "integral" and pa.types.is_signed_integer(dtype):
            return pa.scalar(lit, dtype)  # out of the type's range raises: not pushed
        if kind == "boolean" and pa.types.is_boolean(dtype):
            return pa.scalar(lit, dtype)
        if kind == "date" and pa.types.is_date32(dtype) and not isinstance(value, dt.datetime):
            return pa.scalar(lit, dtype)
        if kind == "timestamp" and pa.types.is_timestamp(dtype) and dtype.tz is not None:
            return pa.scalar(lit, pa.timestamp("us", tz=dtype.tz)).cast(dtype, safe=True)
        if kind == "decimal" and pa.types.is_decimal(dtype) and isinstance(lit, Decimal):
            return pa.scalar(lit).cast(dtype, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError, TypeError):
        return None
    return None


__all__ = ["Pushed", "apply", "column", "pushdown", "row_groups", "row_mask"]
