"""Landing files (json lines, csv, parquet) read with pyarrow: `pyhudi write` and the streamer without Spark.

The reading rules follow Spark's file sources as the Spark path uses them (source.py, write_cmd), so a
file gives the same table either way where the formats allow:
- a directory means the files directly in it, in name order; names starting with `_` or `.` are skipped
  (Hadoop's hidden-file rule: `_SUCCESS`, `.crc`, files still being written as `.name.tmp`), and so are
  empty files (Spark reads no rows from them);
- csv has a header row, column types are inferred, and an empty field is null (Spark's nullValue "");
- json is one object per line; types are inferred, but a string that looks like a timestamp stays a
  string, as Spark's json source leaves it (pyarrow would parse it into a timestamp).
Files of one read are combined with compatible types widened (int + double -> double, missing columns
null), as Spark's schema inference over several files does. A column that is null in every record has
no type in Arrow; it takes the target table's type for that column (as the Spark streamer reads with the
table's schema), else string (Spark's json inference).

Deliberate difference: Spark's partition discovery (`k=v` subdirectories become columns) is not done; a
source directory with subdirectories is refused with a hint (give the files, or use --master).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pyarrow as pa

from pyhudi.errors import HudiError, MalformedRecordError

FORMATS = ("json", "csv", "parquet")


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def list_files(path: str, fmt: str) -> list[str]:
    """The files a read of `path` covers (see the module doc), as local paths."""
    check_format(fmt)
    local = _local(path)
    if "://" in local:
        raise HudiError(f"{path!r}: only local files are read in-process; give a local path, or use --master "
                        "to read it with Spark")
    if not os.path.exists(local):
        raise HudiError(f"{path!r} does not exist; give a file or a directory of {fmt} files")
    if os.path.isfile(local):
        return [local] if os.path.getsize(local) > 0 else []
    entries = sorted(os.scandir(local), key=lambda e: e.name)
    subdirs = [e.name for e in entries if e.is_dir() and not _hidden(e.name)]
    if subdirs:
        raise HudiError(f"{path!r} holds directories ({', '.join(subdirs[:3])}); in-process reads take the files "
                        "directly in a directory (no partition discovery): give the files' directory itself, "
                        "or use --master to read it with Spark")
    return [e.path for e in entries if e.is_file() and not _hidden(e.name) and e.stat().st_size > 0]


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise HudiError(f"source format {fmt!r} is not one of {', '.join(FORMATS)}")


def read_file(path: str, fmt: str) -> pa.Table:
    """One file as an Arrow table; a file pyarrow cannot parse is a MalformedRecordError naming it."""
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path)
        if fmt == "csv":
            return _read_csv(path)
        return _read_json(path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        raise MalformedRecordError(f"cannot read {path} as {fmt}: {' '.join(str(exc).split())}; fix or "
                                   "remove the file") from exc


def _read_csv(path: str) -> pa.Table:
    import pyarrow.csv as pcsv

    return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(strings_can_be_null=True))


def _read_json(path: str) -> pa.Table:
    import pyarrow.json as pjson

    table = pjson.read_json(path)
    wanted = pa.schema([f.with_type(_no_timestamps(f.type)) for f in table.schema])
    if wanted.equals(table.schema):
        return table
    # Re-read with timestamp-looking fields as strings: the text is kept exactly, as Spark keeps it.
    return pjson.read_json(path, parse_options=pjson.ParseOptions(explicit_schema=wanted))


def _no_timestamps(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_no_timestamps(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_no_timestamps(t.value_type)))
    return t


def combine(tables: Sequence[pa.Table], names: Sequence[str]) -> pa.Table:
    """One table from several files' tables, types widened where they differ (Spark's merged inference)."""
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise MalformedRecordError(f"the files {', '.join(os.path.basename(n) for n in names[:5])} do not share "
                                   f"compatible column types: {' '.join(str(exc).split())}") from exc


def read_files(paths: Sequence[str], fmt: str) -> pa.Table | None:
    """The rows of these files as one table; None when there are none (no files, or only empty ones)."""
    tables = [read_file(p, fmt) for p in paths]
    tables = [t for t in tables if t.num_columns]
    return combine(tables, paths) if tables else None


def read_source(path: str, fmt: str) -> pa.Table | None:
    """`pyhudi write --source PATH`: the file, or the files of the directory, as one table."""
    return read_files(list_files(path, fmt), fmt)


def table_schema(target: str) -> pa.Schema | None:
    """The target table's latest data schema as Arrow, None if there is no table or no schema yet."""
    from pyhudi.errors import TableNotFoundError
    from pyhudi.io import schema as S
    from pyhudi.model.table_config import load_table_config
    from pyhudi.storage import Storage
    from pyhudi.timeline.table_schema import table_schema as avro_schema
    from pyhudi.timeline.timeline import ActiveTimeline

    storage = Storage(target)
    try:
        config = load_table_config(storage)
    except TableNotFoundError:
        return None
    avro = avro_schema(ActiveTimeline.load(storage), config)
    return S.avro_to_arrow(avro) if avro is not None else None


def type_null_columns(table: pa.Table, target: pa.Schema | None) -> pa.Table:
    """Columns of Arrow type null (null in every record) get the target table's type, else string."""
    for i, f in enumerate(table.schema):
        if pa.types.is_null(f.type):
            typ = target.field(f.name).type if target is not None and f.name in target.names else pa.string()
            table = table.set_column(i, f.with_type(typ), pa.nulls(table.num_rows, typ))
    return table
