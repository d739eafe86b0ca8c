"""The writer schema per option combination, as Hudi 0.14's deduceWriterSchema deduces it (no Spark)."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.engine.spark.schema import spark_to_avro
from pyhudi.errors import SchemaMismatchError
from pyhudi.io.schema import evolve


def _f(name: str, dt: T.DataType, nullable: bool = True) -> T.StructField:
    return T.StructField(name, dt, nullable)


def _s(*fields: T.StructField) -> T.StructType:
    return T.StructType(list(fields))


def _avro(*fields: T.StructField) -> dict:
    return spark_to_avro(_s(*fields), "t")


NESTED = _s(_f("a", T.IntegerType()), _f("b", T.StringType()))
TABLE = _avro(_f("id", T.IntegerType(), False), _f("v", T.IntegerType()), _f("gone", T.StringType()),
              _f("s", NESTED))
# The batch lacks `gone` and `s.b` and adds `extra`.
BATCH = _avro(_f("id", T.IntegerType(), False), _f("v", T.IntegerType()), _f("s", _s(_f("a", T.IntegerType()))),
              _f("extra", T.LongType()))


def _names(avro: dict) -> list[str]:
    out = []
    for f in avro["fields"]:
        t = f["type"][1] if isinstance(f["type"], list) else f["type"]
        out.append(f["name"])
        if isinstance(t, dict) and t.get("type") == "record":
            out += [f"{f['name']}.{g['name']}" for g in t["fields"]]
    return out


def test_default_refuses_a_batch_missing_columns_and_names_every_option() -> None:
    with pytest.raises(SchemaMismatchError) as e:
        evolve(TABLE, BATCH)
    msg = str(e.value)
    assert "'gone', 's.b'" in msg
    for key in (K.SET_NULL_FOR_MISSING_COLUMNS.key, K.RECONCILE_SCHEMA.key, K.SCHEMA_ALLOW_COLUMN_DROP.key):
        assert key in msg


@pytest.mark.parametrize(("reconcile", "set_null", "drop"), [
    (False, True, False), (True, False, False), (True, False, True), (True, True, True)])
def test_missing_columns_are_kept_nullable(reconcile: bool, set_null: bool, drop: bool) -> None:
    got = evolve(TABLE, BATCH, reconcile=reconcile, set_null_for_missing=set_null, allow_column_drop=drop)
    assert _names(got) == ["id", "v", "gone", "s", "s.a", "s.b", "extra"]
    assert got["fields"][2] == {"name": "gone", "type": ["null", "string"], "default": None}


@pytest.mark.parametrize("set_null", [False, True])
def test_column_drop_takes_the_batch_schema(set_null: bool) -> None:
    # Hudi: allow.auto.evolution.column.drop leaves the default path, where set.null.for.missing applies.
    got = evolve(TABLE, BATCH, set_null_for_missing=set_null, allow_column_drop=True)
    assert _names(got) == ["id", "v", "s", "s.a", "extra"]
    assert got["fields"][0] == {"name": "id", "type": "int"}


def test_column_drop_still_checks_types_and_new_columns() -> None:
    bad = _avro(_f("id", T.IntegerType(), False), _f("v", T.StringType()))
    with pytest.raises(SchemaMismatchError, match="Column 'v' is int in the table but string"):
        evolve(TABLE, bad, allow_column_drop=True)
    required_new = _avro(_f("id", T.IntegerType(), False), _f("req", T.IntegerType(), False))
    with pytest.raises(SchemaMismatchError, match="New column 'req'"):
        evolve(TABLE, required_new, allow_column_drop=True)


@pytest.mark.parametrize(("table_t", "batch_t", "expected"), [
    (T.DecimalType(12, 2), T.DecimalType(10, 2), T.DecimalType(12, 2)),
    (T.DecimalType(12, 4), T.DecimalType(10, 2), T.DecimalType(12, 4)),
    (T.DecimalType(10, 2), T.DecimalType(10, 2), T.DecimalType(10, 2)),
])
def test_a_narrower_batch_decimal_is_promoted_to_the_table_type(table_t: T.DataType, batch_t: T.DataType,
                                                                expected: T.DataType) -> None:
    got = evolve(_avro(_f("id", T.IntegerType()), _f("d", table_t)), _avro(_f("id", T.IntegerType()), _f("d", batch_t)))
    assert got == _avro(_f("id", T.IntegerType()), _f("d", expected))


@pytest.mark.parametrize(("table_t", "batch_t"), [
    (T.DecimalType(10, 2), T.DecimalType(12, 2)),  # more integer digits than the table has
    (T.DecimalType(12, 4), T.DecimalType(12, 2)),  # more integer digits (10 vs 8)
    (T.DecimalType(12, 2), T.DecimalType(12, 4)),  # more fraction digits
])
def test_a_wider_batch_decimal_is_refused(table_t: T.DataType, batch_t: T.DataType) -> None:
    with pytest.raises(SchemaMismatchError, match="Column 'd' is decimal"):
        evolve(_avro(_f("d", table_t)), _avro(_f("d", batch_t)))


def test_nested_promotions_and_added_fields_with_options() -> None:
    table = _avro(_f("s", _s(_f("a", T.IntegerType()), _f("d", T.DecimalType(9, 1)))))
    batch = _avro(_f("s", _s(_f("a", T.LongType()), _f("d", T.DecimalType(5, 1)), _f("n", T.StringType()))))
    got = evolve(table, batch, set_null_for_missing=True)
    assert got == _avro(_f("s", _s(_f("a", T.LongType()), _f("d", T.DecimalType(9, 1)), _f("n", T.StringType()))))


def test_options_are_declared_with_hudi_defaults() -> None:
    opts = Options.parse({})
    assert opts.get(K.SET_NULL_FOR_MISSING_COLUMNS) is False
    assert opts.get(K.SCHEMA_ALLOW_COLUMN_DROP) is False
    opts = Options.parse({"hoodie.write.set.null.for.missing.columns": "true",
                          "hoodie.datasource.write.schema.allow.auto.evolution.column.drop": "true"})
    assert opts.get(K.SET_NULL_FOR_MISSING_COLUMNS) is True and opts.get(K.SCHEMA_ALLOW_COLUMN_DROP) is True


# --------------------------------------------------------------------------- which base files Spark can read

def test_spark_reads_only_the_widenings_its_parquet_reader_performs() -> None:
    from pyhudi.engine.spark.read_files import spark_reads_as

    read = _s(_f("v", T.LongType()), _f("m", T.DoubleType()), _f("s", _s(_f("f", T.FloatType()))))
    assert spark_reads_as(_s(_f("v", T.IntegerType()), _f("m", T.IntegerType())), read)  # older file: no `s`
    assert spark_reads_as(_s(_f("s", _s(_f("f", T.FloatType())))), read)
    assert not spark_reads_as(_s(_f("m", T.LongType())), read)  # long -> double: Spark refuses
    assert not spark_reads_as(_s(_f("s", _s(_f("f", T.IntegerType())))), read)  # int -> float, nested
    arr = _s(_f("a", T.ArrayType(T.DoubleType())))
    assert not spark_reads_as(_s(_f("a", T.ArrayType(T.LongType()))), arr)


def test_arrow_read_paths_only_when_a_floating_column_exists() -> None:
    from pyhudi.engine.spark.read_files import arrow_read_paths

    paths = ["p/f1_0-1-1_20240101000000000.parquet"]
    assert arrow_read_paths(paths, _s(_f("v", T.LongType())), None) == []
    # No timeline: the writer schema of the file is unknown, so it is read through Arrow.
    assert arrow_read_paths(paths, _s(_f("m", T.DoubleType())), None) == paths
