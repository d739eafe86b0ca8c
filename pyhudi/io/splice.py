"""A base file's rows plus new rows, written without decoding the old rows: the old file's column chunks
are copied byte for byte, the new rows follow as row groups of their own, and one footer describes both.

Hudi tops up a small file by rewriting it (HoodieConcatHandle for inserts: the old records as they were,
then the new ones, under the new file's name). The rows and values of a spliced file are exactly those:
only `_hoodie_file_name` changes in the old records, so its chunks (one value, dictionary encoded: a few
hundred bytes a row group) are encoded afresh. What differs is the layout: one more row group per top-up,
where a rewrite makes one row group per `hoodie.parquet.block.size`. A file past MAX_ROW_GROUPS is
rewritten whole instead, which coalesces its row groups again.

Splicing declines (None: the caller rewrites) whatever it cannot copy faithfully: another writer's file
(parquet-mr applies workarounds keyed on `created_by`), another schema, encrypted footers, chunks in
other files, page indexes or bloom filters of parquet's own (their offsets point outside the chunks).
"""

from __future__ import annotations

import functools
import hashlib
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.errors import CorruptFileError
from pyhudi.io import thrift_compact as tc

MAGIC = b"PAR1"
MAX_ROW_GROUPS = 16

# parquet.thrift field ids
_FMD_SCHEMA, _FMD_NUM_ROWS, _FMD_ROW_GROUPS, _FMD_CREATED_BY = 2, 3, 4, 6
_FMD_ENCRYPTION = (8, 9)
_RG_COLUMNS, _RG_TOTAL_BYTES, _RG_NUM_ROWS, _RG_FILE_OFFSET, _RG_COMPRESSED, _RG_ORDINAL = 1, 2, 3, 5, 6, 7
_CC_FILE_PATH, _CC_FILE_OFFSET, _CC_META = 1, 2, 3
_CC_INDEXES = (4, 5, 6, 7)
_CC_ENCRYPTED = (8, 9)
_CM_PATH, _CM_UNCOMPRESSED, _CM_COMPRESSED = 3, 6, 7
_CM_DATA_PAGE, _CM_INDEX_PAGE, _CM_DICT_PAGE = 9, 10, 11
_CM_BLOOM = (14, 15)


def footer(data: bytes | memoryview) -> tuple[list[tc.Field], int] | None:
    """(FileMetaData, offset where the footer starts) of a whole parquet file; None if it is not a
    plain parquet file (an encrypted footer ends in PARE). The parsed footer is shared (`_FOOTERS`):
    callers build new structures from it and never change it."""
    view = memoryview(data)
    view = view if view.format == "B" else view.cast("B")
    if len(view) < 12 or bytes(view[:4]) != MAGIC or bytes(view[-4:]) != MAGIC:
        return None
    size = struct.unpack("<I", view[-8:-4])[0]
    start = len(view) - 8 - size
    if start < 4:
        return None
    raw = view[start:len(view) - 8]
    with _FOOTERS_LOCK:
        parsed = _FOOTERS.get(_digest(raw))
    if parsed is None:  # not kept: only the footers splices write are looked up again
        try:
            parsed = tc.read_struct(raw)
        except CorruptFileError:
            return None
    return parsed, start


def _digest(footer_bytes: bytes | memoryview) -> bytes:
    return hashlib.blake2b(footer_bytes, digest_size=32).digest()


def _remember(key: bytes, parsed: list[tc.Field]) -> None:
    with _FOOTERS_LOCK:
        _FOOTERS[key] = parsed
        _FOOTERS.move_to_end(key)
        while len(_FOOTERS) > FOOTERS_KEPT:
            _FOOTERS.popitem(last=False)


# Footers this module wrote, by their bytes' digest: a top-up stream splices the file it spliced the batch
# before, and parsing its footer again cost ~1 ms a row group in Python. Equal bytes parse equal. (Footers
# only read are not kept: the old file, the new rows' and the file names' are never spliced again.)
FOOTERS_KEPT = 32
_FOOTERS: OrderedDict[bytes, list[tc.Field]] = OrderedDict()
_FOOTERS_LOCK = threading.Lock()


def may_append(old: pq.FileMetaData) -> bool:
    """The declines `append_row_groups` would make that the old file's metadata (pyarrow's, parsed anyway)
    tells before anything is encoded: another writer's file (every file Hudi wrote) and a file whose next
    row group passes MAX_ROW_GROUPS. The rest is checked where it is found."""
    return old.created_by == _writer_created_by() and old.num_row_groups < MAX_ROW_GROUPS


@functools.cache
def _writer_created_by() -> str:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"x": [0]}), sink)
    return str(pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata.created_by)


def append_row_groups(old: bytes | memoryview, new: bytes | memoryview,
                      file_names: Callable[[list[int]], bytes], file_name_path: str) -> pa.Buffer | None:
    """The file `old`'s row groups (with the column `file_name_path` taken from `file_names`) followed by
    `new`'s, under `new`'s footer (schema, key-value metadata, writer); None when splicing declines.

    `file_names(rows)` encodes a parquet file holding one column, the file-name column, with one row group
    of `rows[i]` rows for each old row group i."""
    parsed_old, parsed_new = footer(old), footer(new)
    if parsed_old is None or parsed_new is None:
        return None
    (fmd_old, old_end), (fmd_new, new_end) = parsed_old, parsed_new
    groups_old = _groups(fmd_old)
    groups_new = _groups(fmd_new)
    if (groups_old is None or groups_new is None or not groups_old
            or len(groups_old) + len(groups_new) > MAX_ROW_GROUPS
            or any(tc.get(fmd_old, f) is not None for f in _FMD_ENCRYPTION)
            or tc.get(fmd_old, _FMD_CREATED_BY) != tc.get(fmd_new, _FMD_CREATED_BY)
            or tc.write_struct(_schema_only(fmd_old)) != tc.write_struct(_schema_only(fmd_new))):
        return None
    paths = [_path(c) for c in tc.get(groups_old[0], _RG_COLUMNS).items]
    if file_name_path not in paths:
        return None
    name_at = paths.index(file_name_path)
    names = file_names([tc.get(g, _RG_NUM_ROWS) for g in groups_old])
    parsed_names = footer(names)
    name_groups = _groups(parsed_names[0]) if parsed_names else None
    if name_groups is None or len(name_groups) != len(groups_old):
        return None
    out = bytearray(MAGIC)
    copied: list[list[tc.Field] | None] = []
    for group, name_group in zip(groups_old, name_groups):
        chunks = tc.get(group, _RG_COLUMNS).items
        sources = [(old, c, old_end) for c in chunks]
        sources[name_at] = (names, tc.get(name_group, _RG_COLUMNS).items[0], len(names))
        copied.append(_copy_group(out, group, sources))
    for group in groups_new:
        copied.append(_copy_group(out, group, [(new, c, new_end) for c in tc.get(group, _RG_COLUMNS).items]))
    row_groups = [g for g in copied if g is not None]
    if len(row_groups) != len(copied):
        return None
    for ordinal, group in enumerate(row_groups):
        tc.put(group, _RG_ORDINAL, tc.I16, ordinal)
    meta = [tc.Field(f.id, f.type, f.value) for f in fmd_new]
    tc.put(meta, _FMD_NUM_ROWS, tc.I64, sum(tc.get(g, _RG_NUM_ROWS) for g in row_groups))
    tc.put(meta, _FMD_ROW_GROUPS, tc.LIST, tc.Seq(tc.STRUCT, row_groups))
    encoded = tc.write_struct(meta)
    _remember(_digest(encoded), meta)  # the next top-up of this file finds its footer parsed
    out += encoded
    out += struct.pack("<I", len(encoded)) + MAGIC
    return pa.py_buffer(out)  # no copy of a file's worth of bytes


def _groups(fmd: list[tc.Field]) -> list[list[tc.Field]] | None:
    seq = tc.get(fmd, _FMD_ROW_GROUPS)
    return seq.items if isinstance(seq, tc.Seq) else None


def _schema_only(fmd: list[tc.Field]) -> list[tc.Field]:
    return [f for f in fmd if f.id == _FMD_SCHEMA]


def _path(chunk: list[tc.Field]) -> str:
    meta = tc.get(chunk, _CC_META) or []
    return ".".join(p.decode("utf-8", "replace") for p in (tc.get(meta, _CM_PATH) or tc.Seq(tc.BINARY, [])).items)


def _extent(chunk: list[tc.Field], end: int) -> tuple[int, int] | None:
    """(first byte, length) of a column chunk's pages in its file, None if it cannot be copied alone."""
    if tc.get(chunk, _CC_FILE_PATH) is not None or any(tc.get(chunk, f) is not None for f in _CC_INDEXES + _CC_ENCRYPTED):
        return None
    meta = tc.get(chunk, _CC_META)
    if meta is None or any(tc.get(meta, f) is not None for f in _CM_BLOOM):
        return None
    starts = [tc.get(meta, f) for f in (_CM_DATA_PAGE, _CM_DICT_PAGE, _CM_INDEX_PAGE)]
    start = min(s for s in starts if s is not None and s > 0) if any(s for s in starts) else None
    length = tc.get(meta, _CM_COMPRESSED)
    if start is None or length is None or start < 4 or start + length > end:
        return None
    return start, length


def _copy_group(out: bytearray, group: list[tc.Field],
                sources: list[tuple[bytes | memoryview, list[tc.Field], int]]) -> list[tc.Field] | None:
    """Append a row group's chunks (each from its own file) to `out`; the row group's footer entry with
    every offset moved to where its bytes now are."""
    chunks = []
    first = len(out)
    compressed = uncompressed = 0
    for data, chunk, end in sources:
        extent = _extent(chunk, end)
        if extent is None:
            return None
        start, length = extent
        shift = len(out) - start
        out += memoryview(data)[start:start + length]
        moved = _moved(chunk, shift)
        chunks.append(moved)
        meta = tc.get(moved, _CC_META)
        compressed += length
        uncompressed += tc.get(meta, _CM_UNCOMPRESSED) or 0
    entry = [tc.Field(f.id, f.type, f.value) for f in group]
    tc.put(entry, _RG_COLUMNS, tc.LIST, tc.Seq(tc.STRUCT, chunks))
    tc.put(entry, _RG_TOTAL_BYTES, tc.I64, uncompressed)
    tc.put(entry, _RG_FILE_OFFSET, tc.I64, first)
    tc.put(entry, _RG_COMPRESSED, tc.I64, compressed)
    return entry


def _moved(chunk: list[tc.Field], shift: int) -> list[tc.Field]:
    meta = [tc.Field(f.id, f.type, f.value) for f in tc.get(chunk, _CC_META)]
    for fid in (_CM_DATA_PAGE, _CM_DICT_PAGE, _CM_INDEX_PAGE):
        value = tc.get(meta, fid)
        if value is not None and value > 0:
            tc.put(meta, fid, tc.I64, value + shift)
    moved = [tc.Field(f.id, f.type, f.value) for f in chunk if f.id != _CC_META]
    offset = tc.get(moved, _CC_FILE_OFFSET)
    if offset:
        tc.put(moved, _CC_FILE_OFFSET, tc.I64, offset + shift)
    tc.put(moved, _CC_META, tc.STRUCT, meta)
    return moved


def file_name_chunks(schema: pa.Schema, name: str, value: str, codec: str) -> Callable[[list[int]], bytes]:
    """`append_row_groups`' `file_names`: row groups of `value` repeated, as the writer encodes the
    column (dictionary, the file's codec: one value a file is never a raw column, statistics)."""
    field = schema.field(name)
    one = pa.schema([pa.field(name, pa.dictionary(pa.int32(), field.type), nullable=field.nullable)])

    def encode(rows: list[int]) -> bytes:
        sink = pa.BufferOutputStream()
        dictionary = pa.array([value], field.type)
        with pq.ParquetWriter(sink, one, compression=codec, store_schema=False, use_dictionary=True,
                              write_statistics=True) as writer:
            for n in rows:
                column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), dictionary)
                writer.write_table(pa.table([column], schema=one), row_group_size=max(1, n))
        return sink.getvalue().to_pybytes()

    return encode
