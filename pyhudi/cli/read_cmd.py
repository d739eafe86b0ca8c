"""`pyhudi read PATH`: a table's rows on the terminal, in-process (pyhudi.read: no Spark, no Java).

For a quick look or a pipe into other tools: `--columns` and `--filter` are pushed down to the reader
(partition pruning, parquet row groups), `--as-of` is time travel, `--limit` stops reading once enough
rows are there (file slices are read one at a time). Filter values are typed by the table's schema, so
`--filter id=5` compares numbers on a numeric column and strings on a string column.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

import pyarrow as pa

from pyhudi.cli import render
from pyhudi.cli.common import add_option_argument, open_table, parse_options
from pyhudi.errors import InvalidConfigError

PROG = "pyhudi read"
FORMATS = ("table", "json", "csv")
_FILTER = re.compile(r"^\s*([^=!<>\s]+)\s*(==|=|!=|<=|>=|<|>)\s*(.*)$")


def register(sub: Any) -> None:
    p = sub.add_parser("read", help="print a table's rows (in-process; filters and columns pushed down)",
                       description="Read the table at PATH with pyhudi.read (snapshot, or as of --as-of) and print "
                                   "the rows as a table, JSON lines or CSV. Never starts Spark.")
    p.add_argument("path", help="table base path")
    p.add_argument("--columns", default=None, metavar="A,B", help="only these columns (default: all)")
    p.add_argument("--filter", dest="filters", action="append", default=[], metavar="COL=VAL",
                   help="keep rows where COL=VAL (also !=, <, <=, >, >=); repeatable, all must hold")
    p.add_argument("--limit", type=_positive, default=None, metavar="N", help="at most N rows")
    p.add_argument("--as-of", dest="as_of", default=None, metavar="TS", help="time travel to this instant")
    p.add_argument("--format", choices=FORMATS, default="table", help="table (default), json (lines) or csv")
    add_option_argument(p, "hoodie.datasource.query.type=read_optimized")
    p.set_defaults(func=run)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def parse_filters(texts: list[str], schema: pa.Schema | None) -> list[tuple[str, str, Any]]:
    """`COL=VAL` -> (col, op, value typed as the column); an unknown column or a value the column's type
    cannot hold is an InvalidConfigError naming both."""
    out = []
    for text in texts:
        m = _FILTER.match(text)
        if not m:
            raise InvalidConfigError(f"--filter {text!r} is not COL=VAL (or COL!=VAL, COL<VAL, ...)")
        col, op, raw = m.group(1), m.group(2), m.group(3).strip()
        out.append((col, "=" if op == "==" else op, _typed(col, raw, schema)))
    return out


def _typed(col: str, raw: str, schema: pa.Schema | None) -> Any:
    if schema is None:
        return raw
    if col not in schema.names:
        raise InvalidConfigError(f"--filter column {col!r} is not a column of the table; columns: "
                                 f"{', '.join(schema.names)}")
    target = schema.field(col).type
    try:
        return pa.scalar(raw, pa.string()).cast(target).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidConfigError(f"--filter value {raw!r} is not a {target} (the type of column {col!r})") from exc


def table_arrow_schema(path: str) -> pa.Schema | None:
    """The latest schema, with the meta columns (filters may name them too)."""
    from pyhudi.io import schema as S
    from pyhudi.timeline.table_schema import table_schema

    t = open_table(path)
    avro = table_schema(t.timeline, t.config)
    if avro is None:
        return None
    data = S.avro_to_arrow(avro)
    meta = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
            "_hoodie_file_name"]
    return pa.schema([pa.field(m, pa.string()) for m in meta if m not in data.names] + list(data))


def run(args: argparse.Namespace) -> int:
    import pyhudi

    options, _ = parse_options(args.options, PROG)
    if args.as_of:
        options["as.of.instant"] = args.as_of
    filters = parse_filters(args.filters, table_arrow_schema(args.path))
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    reader = pyhudi.read(args.path, options, filters or None, columns, batches=True)
    rows = _take(reader, args.limit)
    emit(rows, args.format)
    return 0


def _take(reader: pa.RecordBatchReader, limit: int | None) -> pa.Table:
    """Batches until `limit` rows (the rest of the table is never read)."""
    batches, count = [], 0
    for batch in reader:
        batches.append(batch)
        count += batch.num_rows
        if limit is not None and count >= limit:
            break
    table = pa.Table.from_batches(batches, schema=reader.schema)
    return table.slice(0, limit) if limit is not None else table


def emit(table: pa.Table, fmt: str) -> None:
    if fmt == "csv":
        import pyarrow.csv as pcsv

        sink = pa.BufferOutputStream()
        pcsv.write_csv(table, sink)
        sys.stdout.write(sink.getvalue().to_pybytes().decode("utf-8"))
        return
    records = table.to_pylist()
    if fmt == "json":
        for r in records:
            print(json.dumps(r, ensure_ascii=False, default=str))
        return
    lines = render.table(table.column_names, [["null" if r[c] is None else r[c] for c in table.column_names]
                                              for r in records])
    render.emit([*lines, f"({render.plural(len(records), 'row')})"])
