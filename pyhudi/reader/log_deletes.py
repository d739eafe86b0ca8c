"""Delete blocks' ordering values, as the log merge compares them with data records (`log_merge`).

A delete carries its ordering value wrapped in the Java class Hudi wrote it with (IntWrapper, LongWrapper,
ArrayWrapper...); which wrapper matters as much as the value: Hudi 0.14's scanner compares only a value of
the column's own Java class, Hudi 1.x converts it to the column's type, and a null or ``IntWrapper(0)`` is a
delete that always applies. Split from `log_merge` so that the merge itself stays about merging.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from pyhudi.io.log_blocks import delete_records
from pyhudi.io.log_format import LogBlock


def _decode_deletes(block: LogBlock) -> list[tuple[str | None, str | None, Any]]:
    """(record key, wrapper short name, raw wrapped value); the wrapper class matters for comparisons
    (``log_blocks.decode_delete_block`` unwraps values, losing the Int/Long distinction Java's
    ``isSameClass`` and ``IntWrapper(0)`` default test depend on). Every block version: v1/v2 are Kryo."""
    return [(key, wrapper, value) for key, _, wrapper, value in delete_records(block)]


def delete_events(block: LogBlock, ord_type: pa.DataType | None,
                   same_class: bool = False) -> tuple[pa.Array, pa.Array | None, np.ndarray]:
    """Keys, ordering values (as the ordering column's type) and reset flags of a delete block.

    A reset delete cannot be compared: it applies whatever the ordering
    values. A delete whose ordering value is null or ``IntWrapper(0)`` is
    such a commit-time-ordering delete (Java ``OrderingValues.isDefault``,
    0.14's ``deleteOrderingVal.equals(0)``; a genuine ``LongWrapper(0)`` is
    not). By Hudi 1.x event time (hudi-rs), other values are converted to the
    ordering column's type (an ``IntWrapper(3)`` against a long column
    compares as 3); a value that cannot be converted cannot be compared.
    With ``same_class`` (Hudi 0.14's scanner), only a wrapper whose value has
    the Java class the Avro log record holds for the column is compared
    (``_JAVA_WRAPPERS``); any other delete applies.
    """
    records = _decode_deletes(block)
    keys = pa.array([r[0] for r in records], pa.string())
    if ord_type is None:
        return keys, None, np.ones(len(records), dtype=bool)
    if pa.types.is_struct(ord_type):
        return (keys, *_array_delete_ordering(records, ord_type))
    values: list[Any] = [None] * len(records)
    reset = np.ones(len(records), dtype=bool)
    by_wrapper: dict[str, list[int]] = {}
    wanted = _java_wrapper(ord_type)
    for i, (_, wrapper, value) in enumerate(records):
        if wrapper is not None and not (wrapper == "IntWrapper" and value == 0) and \
                (not same_class or wrapper == wanted):
            by_wrapper.setdefault(wrapper, []).append(i)
    for wrapper, idx in by_wrapper.items():
        raw = [records[i][2] for i in idx]
        try:
            converted = (pa.array(raw, _JAVA_WRAPPERS[wrapper]).cast(ord_type) if same_class
                         else _convert_ordering(wrapper, raw, ord_type)).to_pylist()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError):
            continue
        for i, v in zip(idx, converted):
            values[i], reset[i] = v, False
    return keys, pa.array(values, ord_type), reset


def _array_delete_ordering(records: list[tuple[str | None, str | None, Any]],
                           ord_type: pa.StructType) -> tuple[pa.Array, np.ndarray]:
    """Ordering values and reset flags of deletes when several fields are compared (Hudi 1.1).

    Such a delete's value is an ``ArrayComparable``, stored as an ``ArrayWrapper`` whose raw value is
    the list of its elements' ``(wrapper, raw value)`` (a null element is ``(None, None)`` and ranks as
    a null field). Each element is converted to its field's type as a single value is. Any other value
    - null, ``IntWrapper(0)`` (``OrderingValues.isDefault``), a single wrapper Java could not compare
    with an ``ArrayComparable`` - or one that cannot be converted is a delete that always applies.
    """
    values: list[Any] = [None] * len(records)
    reset = np.ones(len(records), dtype=bool)
    for i, (_, wrapper, raw) in enumerate(records):
        if wrapper != "ArrayWrapper" or not isinstance(raw, (list, tuple)) or len(raw) != ord_type.num_fields:
            continue
        try:
            values[i] = {ord_type.field(j).name: None if w is None else
                         _convert_ordering(w, [v], ord_type.field(j).type).to_pylist()[0]
                         for j, (w, v) in enumerate(raw)}
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError):
            continue
        reset[i] = False
    return pa.array(values, ord_type), reset


# Wrappers whose unwrapped value has the Java class of an Avro int/long/float/double/boolean, which is what
# Hudi 0.14's log scanner compares a delete with (strings read as Utf8 against a String, dates as Integer
# against a LocalDate, decimals as bytes against a BigDecimal: never the same class).
_JAVA_WRAPPERS = {"IntWrapper": pa.int32(), "LongWrapper": pa.int64(), "FloatWrapper": pa.float32(),
                  "DoubleWrapper": pa.float64(), "BooleanWrapper": pa.bool_()}


def _java_wrapper(ord_type: pa.DataType) -> str | None:
    """The delete wrapper of the same Java class as the Avro value of a column of this type."""
    if pa.types.is_int8(ord_type) or pa.types.is_int16(ord_type) or pa.types.is_int32(ord_type) \
            or pa.types.is_date32(ord_type):
        return "IntWrapper"
    if pa.types.is_int64(ord_type) or pa.types.is_timestamp(ord_type) or pa.types.is_time64(ord_type):
        return "LongWrapper"
    if pa.types.is_float32(ord_type):
        return "FloatWrapper"
    if pa.types.is_float64(ord_type):
        return "DoubleWrapper"
    return "BooleanWrapper" if pa.types.is_boolean(ord_type) else None


def _convert_ordering(wrapper: str, raw: list[Any], ord_type: pa.DataType) -> pa.Array:
    if wrapper == "DateWrapper":  # raw epoch days
        return pa.array(raw, pa.int32()).cast(pa.date32()).cast(ord_type)
    if pa.types.is_timestamp(ord_type) and wrapper in ("LongWrapper", "TimestampMicrosWrapper"):
        micros = pa.array(raw, pa.int64()).cast(pa.timestamp("us", ord_type.tz))  # Hudi keeps them as epoch micros
        return micros.cast(ord_type, safe=False)
    return pa.array(raw).cast(ord_type)
