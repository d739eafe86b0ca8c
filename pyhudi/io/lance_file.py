"""Lance base files: the `.lance` files of Hudi 1.2 tables with `hoodie.table.base.file.format=LANCE`.

Hudi 1.2 writes each base file as one standalone Lance data file (`HoodieSparkLanceWriter`, not a Lance
dataset): the same name as a parquet base file but `.lance`, the same columns in the same order (the five
meta columns, then the table's), every field nullable, Spark's types converted to Arrow with timestamps
in UTC. What a parquet footer carries for the BLOOM index (`org.apache.hudi.bloomfilter`,
`hoodie_min_record_key`, ...) is the Arrow schema's metadata instead; there is no `parquet.avro.schema`,
so a reader takes the table schema from the commit metadata, never from the file. Hudi's reader
(`HoodieSparkLanceReader`) projects columns and pushes no filter down; hudi-rs reads them with the
`lance-file` crate (`file_group/base_file/lance.rs`). Both read all rows of a file: Lance keeps no
row-group statistics a predicate could skip by.

Reading needs the optional `pylance` package (`pip install 'pyhudi[lance]'`); without it a read raises
UnsupportedTableError naming the file, never a bare ImportError. pyhudi writes parquet only.

Where the bytes come from: a table on the local file system is opened in place (Lance reads just the
pages of the projected columns). On an object store the file is first copied through `Storage` into a
temporary local file: the same credentials, endpoints, retries, request counts and fault points as every
other pyhudi read, for every store `Storage` reaches (s3://, gs://, abfs(s)://, or a caller's own
pyarrow file system). Handing Lance the URI and its own `storage_options` instead would fetch only the
projected columns, but it would resolve credentials a second way (profiles, `AWS_*` variables and
pyhudi's key aliases are resolved by `storage/config.py`, not by Lance), skip pyhudi's retries of a
throttled store, and not reach a `Storage` built on an explicit pyarrow file system. A copy costs one
download of the file (Hudi sizes Lance files to `hoodie.lance.max.file.size`, 120 MiB by default), a
cost a full parquet read pays too (`read_parquet` fetches whole files of up to 64 MB in one GET).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import CorruptFileError, UnsupportedTableError
from pyhudi.io.schema import conform_table
from pyhudi.model.file_names import LANCE_FILE_EXTENSION
from pyhudi.storage import Storage

INSTALL_HINT = "pip install 'pyhudi[lance]'"
# Files up to this size come from an object store in one GET; larger ones by ranged GETs of _COPY_CHUNK.
_WHOLE_GET_MAX_BYTES = 64 * 1024 * 1024
_COPY_CHUNK = 16 * 1024 * 1024


def is_lance_file(path: str) -> bool:
    """Whether `path` names a Lance base file (hudi-rs matches the extension case-insensitively too)."""
    return path.lower().endswith(LANCE_FILE_EXTENSION)


def read_lance_base_file(storage: Storage, path: str, columns: Sequence[str] | None = None,
                         filter: pc.Expression | None = None, *, schema: pa.Schema | None = None) -> pa.Table:
    """The rows of the Lance base file `path` (relative to the table), as a parquet base file reads.

    `columns`: the columns to read, in this order; names the file lacks are skipped (a column added by
    schema evolution after the file was written), so `schema` can fill them with nulls. None reads every
    column; an empty list reads none and returns only the row count (a table of that many rows and no
    columns, what a count needs). `filter`: an Arrow expression applied exactly to the rows read (its
    columns must be among `columns`); Lance has no statistics to skip data by, so it cannot prune like
    parquet's row groups. `schema`: conform the result to it (column order, widening casts, missing
    columns null), as `conform_table` does for parquet files.

    Raises UnsupportedTableError when `pylance` is not installed, CorruptFileError when the file is not a
    readable Lance file, FileNotFoundError when it does not exist.
    """
    reader_class = _reader_class(path)
    with _local_path(storage, path) as local:
        table = _read(reader_class, local, path, columns)
    if filter is not None:
        table = table.filter(filter)
    if schema is not None and columns != []:
        table = _conform(table, schema)
    return table


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`conform_table`, keeping the row count of a table without columns (none of the wanted columns is
    in the file): conform_table would see no rows in it."""
    if table.num_columns == 0:
        return pa.Table.from_arrays([pa.nulls(table.num_rows, f.type) for f in schema], schema=schema)
    return conform_table(table, schema)


def lance_available() -> bool:
    """Whether `pylance` can be imported (tests and callers that want to skip rather than fail)."""
    try:
        _import_reader()
    except ImportError:
        return False
    return True


def _import_reader() -> Any:
    from lance.file import LanceFileReader

    return LanceFileReader


def _reader_class(path: str) -> Any:
    """pylance's file reader, or UnsupportedTableError naming the file and the fix."""
    try:
        return _import_reader()
    except ImportError as exc:
        raise UnsupportedTableError(
            f"{path} is a Lance base file (a Hudi 1.2 table with hoodie.table.base.file.format=LANCE) and "
            f"reading it needs the optional package pylance, which is not installed ({exc}); install it with "
            f"{INSTALL_HINT}") from exc


@contextmanager
def _local_path(storage: Storage, path: str) -> Iterator[str]:
    """A local path Lance can open: the file itself on a local table, else a temporary copy made
    through Storage (see the module docstring), deleted on exit."""
    if storage.is_local:
        local = storage.full_path(path)
        if not os.path.isfile(local):
            raise FileNotFoundError(f"Lance base file {local} does not exist")
        yield local
        return
    with tempfile.TemporaryDirectory(prefix="pyhudi-lance-") as tmp:
        local = os.path.join(tmp, path.rsplit("/", 1)[-1])
        with storage.open_input_file(path, whole_below=_WHOLE_GET_MAX_BYTES) as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, _COPY_CHUNK)
        yield local


def _read(reader_class: Any, local: str, path: str, columns: Sequence[str] | None) -> pa.Table:
    """Open and read one file; Lance's own errors (OSError/ValueError from Rust) become CorruptFileError."""
    try:
        reader = reader_class(local)
        if columns is None:
            return reader.read_all().to_table()
        present = set(reader.metadata().schema.names)
        wanted = list(dict.fromkeys(c for c in columns if c in present))
        if not wanted:  # Lance refuses a zero-column read: the row count is in the file's metadata
            return pa.table({"_": pa.nulls(reader.num_rows())}).select([])
        return reader_class(local, columns=wanted).read_all().to_table()
    except (OSError, ValueError) as exc:
        raise CorruptFileError(
            f"Lance base file {path} cannot be read ({str(exc).splitlines()[0]}); it is damaged or not a Lance "
            "file: restore it from a backup or roll back the commit that wrote it") from exc


__all__ = ["INSTALL_HINT", "is_lance_file", "lance_available", "read_lance_base_file"]
