"""Cross-reader property: Spark's parquet reader, with every pushdown on, keeps the rows Spark's own
evaluation keeps, on base files pyhudi wrote in-process and on Spark executors.

Java readers (parquet-mr, so Spark and Hudi's own Spark reader) skip whole row groups by footer
statistics and by dictionary pages. A file whose min/max leave NaN out, or whose dictionary holds -0.0
where the literal is 0.0 (`Double.equals` tells them apart, Spark does not), loses rows silently. Each
row group here holds one or two adversarial values per column, so any wrong skip shows as a missing
row. The expected side is Spark evaluating the same predicate over the rows `pyhudi.read(path)` returns
(no parquet reader involved); the actual side is `spark.read.parquet` of the table's base files and
`pyhudi.read(spark, path)`, with filter pushdown, dictionary filtering and column-index filtering on.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view

pytestmark = pytest.mark.spark

NAN, INF = math.nan, math.inf
ROWS_PER_GROUP = 1000  # the fewest rows base_file puts in a row group; a tiny block size gives exactly this
D38_MAX, D38_MIN = Decimal("99999999999999999999.999999999999999999"), Decimal("-99999999999999999999.999999999999999999")
D9_MAX, D9_MIN = Decimal("9999999.99"), Decimal("-9999999.99")  # (unary minus would round to 28 digits)
LONG = "x" * 70  # longer than parquet-mr's 64-byte column-index truncation
# Each column's values: NaN first and a finite number second, so the first mixed row group holds both.
COLUMNS: dict[str, tuple[pa.DataType, str, list[Any]]] = {
    "d": (pa.float64(), "double", [NAN, 1.5, -0.0, 0.0, INF, -INF, None, -1.5, 5e-324, 1.7976931348623157e308]),
    "f": (pa.float32(), "float", [NAN, 1.5, -0.0, 0.0, INF, -INF, None, -1.5, 1e-45, 3.4028234663852886e38]),
    "dec38": (pa.decimal128(38, 18), "decimal(38,18)",
              [D38_MAX, D38_MIN, Decimal(0), Decimal("1E-18"), Decimal("-1E-18"), None, Decimal("0.5")]),
    "dec9": (pa.decimal128(9, 2), "decimal(9,2)", [D9_MAX, D9_MIN, Decimal(0), Decimal("0.01"), None]),
    "s": (pa.string(), "string", ["", LONG, LONG + "y", "é", "\ue000", "\uffff", "\U0001f600", "\U0010ffff",
                                  None, "z"]),
    "i": (pa.int64(), "bigint", [-(2**63), 2**63 - 1, 0, None, -1]),
    "n": (pa.int32(), "int", [-(2**31), 2**31 - 1, 0, None]),
}
FILE_NAME = "_hoodie_file_name"
NESTED = "st.x"  # a double inside a struct: Spark pushes nested predicates down to parquet too


def _group_values(values: list[Any], groups: int, rng: random.Random | None) -> list[list[Any]]:
    """Per row group, the values it holds: every value alone (a one-entry dictionary), then pairs
    of neighbours (NaN next to a number: statistics that leave NaN out); random subsets with `rng`."""
    if rng is not None:
        return [rng.sample(values, rng.randint(1, min(3, len(values)))) for _ in range(groups)]
    alone = [[v] for v in values]
    pairs = [[values[i], values[(i + 1) % len(values)]] for i in range(len(values))]
    cycle = alone + pairs
    return [cycle[g % len(cycle)] for g in range(groups)]


def adversarial_table(groups: int, rng: random.Random | None = None) -> pa.Table:
    """`groups` row groups' worth of rows; record keys sort in row-group order, so a writer that
    sorts by key (bulk_insert GLOBAL_SORT) keeps each group's values together."""
    n = groups * ROWS_PER_GROUP
    cols: dict[str, pa.Array] = {
        "id": pa.array([f"g{r // ROWS_PER_GROUP:03d}-{r % ROWS_PER_GROUP:04d}" for r in range(n)]),
        "ts": pa.array(range(n), pa.int64()),
        "p": pa.array(["x"] * n),
    }
    for name, (arrow_type, _, values) in COLUMNS.items():
        per_group = _group_values(values, groups, rng)
        picked = [per_group[r // ROWS_PER_GROUP][r % len(per_group[r // ROWS_PER_GROUP])] for r in range(n)]
        if pa.types.is_decimal(arrow_type):  # from text: pyarrow infers one precision from the first value
            cols[name] = pa.array([None if v is None else str(v) for v in picked]).cast(arrow_type)
        else:
            cols[name] = pa.array(picked, arrow_type)
    doubles = _group_values(COLUMNS["d"][2], groups, rng)
    x = pa.array([doubles[-1 - r // ROWS_PER_GROUP][r % len(doubles[-1 - r // ROWS_PER_GROUP])] for r in range(n)],
                 pa.float64())
    cols["st"] = pa.StructArray.from_arrays([x, pa.array(range(n), pa.int64())], names=["x", "y"])
    return pa.table(cols)


def _options(name: str, operation: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": operation, "hoodie.parquet.block.size": "1024",
            "hoodie.index.bloom.num_entries": "1000",  # a small footer: every scan reads it
            "hoodie.bulkinsert.sort.mode": "GLOBAL_SORT", "hoodie.bulkinsert.shuffle.parallelism": "1"}


def write_both(spark: Any, tmp_path: Path, table: pa.Table) -> dict[str, str]:
    """The same rows written in-process (insert: the create handle) and on Spark executors
    (bulk_insert, sorted by key); the engine name -> table path."""
    local, on_spark = str(tmp_path / "local"), str(tmp_path / "spark")
    pyhudi.write(table, local, _options("xr_local", "insert"))
    pyhudi.write(spark.createDataFrame(table), on_spark, _options("xr_spark", "bulk_insert"))
    return {"local": local, "spark": on_spark}


def base_files(path: str) -> list[str]:
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    files = [f"{path}/{bf.path}" for bf in view.all_latest_base_files()]
    assert files, f"no base files under {path}"
    return files


# -- predicates -------------------------------------------------------------------------------------

Predicate = tuple[str, Callable[[], Any]]
OPS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
# The default run: each way a row group was wrongly skipped, on each column type, and the edges of the
# other types (a Spark scan costs ~0.1-0.3 s of CPU on a shared 2-core machine, so not the whole matrix:
# test_cross_reader_matrix runs every operator against every value).
DEFAULT: list[tuple[str, str, Any]] = [
    ("d", "=", NAN), ("d", ">", 1.5), ("d", "=", 0.0), ("d", "<=", -0.0), ("d", ">=", 0.0), ("d", ">=", INF),
    ("d", "!=", 1.5), ("d", "<=>", NAN), ("d", "in", [NAN, -0.0]), ("d", "is null", None),
    ("f", "=", NAN), ("f", ">", 1.5), ("f", "=", -0.0), ("f", ">=", 0.0),
    (NESTED, "=", NAN), (NESTED, ">", 1.5), (NESTED, "=", 0.0),
    ("dec38", "=", D38_MAX), ("dec38", "<=", D38_MIN), ("dec38", "<", Decimal("1E-18")),
    ("dec9", ">=", D9_MAX), ("dec9", "<", Decimal("0.01")),
    ("s", ">", LONG), ("s", "=", LONG + "y"), ("s", "=", "\U0001f600"), ("s", ">", "\uffff"), ("s", "<", "\U0001f600"),
    ("i", "=", -(2**63)), ("i", ">=", 2**63 - 1), ("n", "<=", -(2**31)), ("n", "=", 2**31 - 1),
]
# Of those, the ones also read through pyhudi.read(spark, path) (the same parquet reader, below a union).
VIA_PYHUDI = {"d = nan", "d > 1.5", "d = 0.0", "d <= -0.0"}


def _lit(value: Any, sql_type: str) -> Any:
    from pyspark.sql import functions as F

    return F.lit(value).cast(sql_type)  # the column's own type, so Spark pushes the comparison down


def _column_types() -> dict[str, tuple[str, list[Any]]]:
    types = {c: (t, v) for c, (_, t, v) in COLUMNS.items()}
    types[NESTED] = ("double", COLUMNS["d"][2])
    return types


def predicate(name: str, op: str, value: Any) -> Predicate:
    """(label, builder of the Spark Column `name <op> value`)."""
    from pyspark.sql import functions as F

    sql_type = _column_types()[name][0]

    def build() -> Any:
        col = F.col(name)
        if op == "in":
            return col.isin(*[_lit(v, sql_type) for v in value])
        if op in ("is null", "is not null"):
            return col.isNull() if op == "is null" else col.isNotNull()
        fn = {"=": col.__eq__, "!=": col.__ne__, "<": col.__lt__, "<=": col.__le__, ">": col.__gt__,
              ">=": col.__ge__, "<=>": col.eqNullSafe}[op]
        return fn(_lit(value, sql_type))

    return f"{name} {op} {value!r}" if value is not None or op == "<=>" else f"{name} {op}", build


def matrix() -> list[Predicate]:
    """Every operator against every value of every column, then IN (all values), IS [NOT] NULL.
    (`col IN (v)` alone is `col = v` after Spark's OptimizeIn.)"""
    out: list[Predicate] = []
    for name, (_, values) in _column_types().items():
        present = [v for v in values if v is not None]
        out += [predicate(name, op, v) for v in [*present, None] for op in OPS if v is not None or op == "<=>"]
        out += [predicate(name, "in", present), predicate(name, "is null", None),
                predicate(name, "is not null", None)]
    return out


PUSHDOWN_CONF = {
    "spark.sql.parquet.filterPushdown": "true",
    "spark.sql.parquet.filterPushdown.decimal": "true",
    "spark.sql.parquet.filterPushdown.string.startsWith": "true",
    "spark.sql.parquet.filterPushdown.stringPredicate": "true",
    "spark.sql.optimizer.nestedPredicatePushdownSupportedFileSources": "parquet,orc",
    "spark.sql.parquet.enableVectorizedReader": "true",
    # each scan's literal would compile a class of its own: interpreted is cheaper for one-off scans
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # parquet-mr's row-group filters (Spark copies session confs into the Hadoop conf of a read)
    "parquet.filter.statistics.enabled": "true",
    "parquet.filter.dictionary.enabled": "true",
    "parquet.filter.columnindex.enabled": "true",
}


def _with_conf(spark: Any, conf: dict[str, str]) -> dict[str, str | None]:
    old = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    return old


def _restore(spark: Any, old: dict[str, str | None]) -> None:
    for k, v in old.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


def pushed_counts(frames: dict[str, tuple[Any, list[tuple[int, Predicate]]]]) -> dict[tuple[str, str, int], int]:
    """(source, base file name, predicate index) -> rows kept, for every filtered scan in one Spark job."""
    from functools import reduce

    from pyspark.sql import functions as F

    branches = [df.filter(build()).select(F.lit(source).alias("src"), F.col(FILE_NAME).alias("file"),
                                          F.lit(i).alias("q"))
                for source, (df, preds) in frames.items() for i, (_, build) in preds]
    counted = reduce(lambda a, b: a.unionAll(b), branches).groupBy("src", "file", "q").count()
    return {(r["src"], r["file"], r["q"]): r["count"] for r in counted.collect()}


def expected_counts(spark: Any, rows: pa.Table, preds: list[Predicate]) -> dict[tuple[str, int], int]:
    """(base file name, predicate index) -> rows Spark's own evaluation keeps, over rows brought in
    from memory (no parquet reader involved)."""
    from pyspark.sql import functions as F

    aggs = [F.sum(F.when(build(), 1).otherwise(0)).alias(f"q{i}") for i, (_, build) in enumerate(preds)]
    out = spark.createDataFrame(rows).groupBy(FILE_NAME).agg(*aggs).collect()
    return {(r[FILE_NAME], i): int(r[f"q{i}"] or 0) for r in out for i in range(len(preds))}


def check_cross_reader(spark: Any, tmp_path: Path, table: pa.Table, every_value: bool = False,
                       all_via_pyhudi: bool = False) -> None:
    """Spark's parquet reader (base files read directly, and through `pyhudi.read(spark, path)`) keeps
    the rows Spark's evaluation of `pyhudi.read(path)` keeps, for every predicate, on both engines' files."""
    paths = write_both(spark, tmp_path, table)
    preds = matrix() if every_value else [predicate(*spec) for spec in DEFAULT]
    numbered = list(enumerate(preds))
    via_pyhudi = numbered if all_via_pyhudi else [(i, p) for i, p in numbered if p[0] in VIA_PYHUDI]
    rows = pa.concat_tables([pyhudi.read(path).select([FILE_NAME, *table.column_names]) for path in paths.values()])
    assert rows.num_rows == 2 * table.num_rows, f"pyhudi.read(path) gave {rows.num_rows} rows in all"
    old = _with_conf(spark, PUSHDOWN_CONF)
    try:
        files = [f for path in paths.values() for f in base_files(path)]
        tables = [pyhudi.read(spark, path) for path in paths.values()]
        got = pushed_counts({"spark.read.parquet": (spark.read.parquet(*files), numbered),
                             "pyhudi.read(spark)": (tables[0].unionByName(tables[1]), via_pyhudi)})
    finally:
        _restore(spark, old)
    want = expected_counts(spark, rows, preds)
    engine_of = {name: engine for engine, path in paths.items() for name in set(
        pyhudi.read(path, columns=[FILE_NAME]).column(FILE_NAME).to_pylist())}
    wrong = [f"{engine_of[file]} {source}: {label}: {got.get((source, file, i), 0)} rows, Spark's own "
             f"evaluation {want[(file, i)]}"
             for source, source_preds in (("spark.read.parquet", numbered), ("pyhudi.read(spark)", via_pyhudi))
             for file in engine_of for i, (label, _) in source_preds
             if got.get((source, file, i), 0) != want[(file, i)]]
    assert not wrong, f"{len(wrong)} scans lose or gain rows under pushdown:\n" + "\n".join(wrong[:40])


def test_cross_reader_adversarial(spark: Any, tmp_path: Path) -> None:
    check_cross_reader(spark, tmp_path, adversarial_table(groups=12))


@pytest.mark.extended
def test_cross_reader_matrix(spark: Any, tmp_path: Path) -> None:
    check_cross_reader(spark, tmp_path, adversarial_table(groups=12), every_value=True, all_via_pyhudi=True)


@pytest.mark.extended
@pytest.mark.parametrize("seed", [1])
def test_cross_reader_random(spark: Any, tmp_path: Path, seed: int) -> None:
    check_cross_reader(spark, tmp_path, adversarial_table(groups=16, rng=random.Random(seed)), every_value=True)
