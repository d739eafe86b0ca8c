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


def _is_object_store(path: str) -> bool:
    from pyhudi.storage.config import parse_location

    return "://" in path and parse_location(path.rstrip("/")).is_object_store


def _split(uri: str) -> tuple[str, str]:
    """An object URI as (its folder, its name)."""
    parent, _, name = uri.rstrip("/").rpartition("/")
    return parent, name


def list_entries(path: str, fmt: str) -> list[tuple[int, str]]:
    """(modification time in ms, path) of every file a read of `path` covers: local paths, or URIs on an
    object store (one LIST, which gives the times; no request per file)."""
    check_format(fmt)
    if not _is_object_store(_local(path)):
        return [(mtime_ms(p), p) for p in list_files(path, fmt)]
    from pyhudi.storage import Storage

    folder = Storage(path)
    entries = sorted(folder.list_dir(""), key=lambda e: e.name)
    if not entries:  # no folder of that name: a single object, or nothing (object stores have no empty folders)
        parent, name = _split(folder.base_uri)
        if "/" not in folder.base_uri.split("://", 1)[1]:
            return []  # a bucket's root
        store = Storage(parent)
        return [(store.mtime_ms(name) or 0, folder.base_uri)] if store.size(name) > 0 else []
    _refuse_subdirs(path, [e.name for e in entries if e.is_dir and not _hidden(e.name)])
    return [(e.mtime_ns // 1_000_000, f"{folder.base_uri}/{e.name}") for e in entries
            if not e.is_dir and not _hidden(e.name) and e.size > 0]


def _refuse_subdirs(path: str, subdirs: list[str]) -> None:
    if subdirs:
        raise HudiError(f"{path!r} holds directories ({', '.join(subdirs[:3])}); in-process reads take the files "
                        "directly in a directory (no partition discovery): give the files' directory itself, "
                        "or use --master to read it with Spark")


def mtime_ms(path: str) -> int:
    """A landing file's modification time in milliseconds (local file or object)."""
    if _is_object_store(path):
        from pyhudi.storage import Storage

        parent, name = _split(path)
        return Storage(parent).mtime_ms(name) or 0
    return os.stat(_local(path)).st_mtime_ns // 1_000_000


def list_files(path: str, fmt: str) -> list[str]:
    """The files a read of `path` covers (see the module doc): local paths, or object URIs for a folder
    or object on s3://, gs://, abfs(s):// (read through Storage, configured as the table is)."""
    check_format(fmt)
    local = _local(path)
    if _is_object_store(local):
        return [p for _, p in list_entries(local, fmt)]
    if "://" in local:
        raise HudiError(f"{path!r}: only local files and object stores (s3://, gs://, abfs://) are read "
                        "in-process; give such a path, or use --master to read it with Spark")
    if not os.path.exists(local):
        raise HudiError(f"{path!r} does not exist; give a file or a directory of {fmt} files")
    if os.path.isfile(local):
        return [local] if os.path.getsize(local) > 0 else []
    entries = sorted(os.scandir(local), key=lambda e: e.name)
    _refuse_subdirs(path, [e.name for e in entries if e.is_dir() and not _hidden(e.name)])
    return [e.path for e in entries if e.is_file() and not _hidden(e.name) and e.stat().st_size > 0]


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise HudiError(f"source format {fmt!r} is not one of {', '.join(FORMATS)}")


def _source(path: str) -> str | pa.BufferReader:
    """What pyarrow's readers open: the local path, or an object's bytes (landing files are read whole)."""
    if not _is_object_store(path):
        return path
    from pyhudi.storage import Storage

    parent, name = _split(path)
    return pa.BufferReader(Storage(parent).read_bytes(name))


def read_file(path: str, fmt: str) -> pa.Table:
    """One file as an Arrow table; a file pyarrow cannot parse is a MalformedRecordError naming it."""
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.read_table(_source(path))
        if fmt == "csv":
            return _read_csv(path)
        return _read_json(path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        raise MalformedRecordError(f"cannot read {path} as {fmt}: {' '.join(str(exc).split())}; fix or "
                                   "remove the file") from exc


def _read_csv(path: str) -> pa.Table:
    import pyarrow.csv as pcsv

    return pcsv.read_csv(_source(path), convert_options=pcsv.ConvertOptions(strings_can_be_null=True))


def _read_json(path: str) -> pa.Table:
    import pyarrow.json as pjson

    table = pjson.read_json(_source(path))
    wanted = pa.schema([f.with_type(_no_timestamps(f.type)) for f in table.schema])
    if wanted.equals(table.schema):
        return table
    # Re-read with timestamp-looking fields as strings: the text is kept exactly, as Spark keeps it.
    return pjson.read_json(_source(path), parse_options=pjson.ParseOptions(explicit_schema=wanted))


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
