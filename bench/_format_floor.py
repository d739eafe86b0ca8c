"""The Hudi-format floor of a stream grid cell: raw pyarrow writing the files pyhudi's table holds.

Issue 31 takes "raw pyarrow writing the same content" as the limit of the Hudi format for pyhudi's
in-process writer. For a stream this is every file the table keeps when the stream ends: each base file
version (top-ups and merges leave the old versions until the cleaner runs), the log files, the
partition metadata files and the timeline. The floor writes them again into a scratch directory, from
content prepared outside the timing, with nothing pyhudi does around them (no planning, index lookup,
merge, bloom filter, markers or commit protocol):

* a parquet file: its rows re-encoded with the file's own choices (each column's codec, dictionary or
  not, statistics or not, the row groups' sizes) and its footer's key-value entries, after reading the
  file group's previous version if there is one (a merge or top-up must read the records it keeps). A
  file whose leading row groups are the previous version's (pyhudi's insert top-up appends row groups,
  `io/splice`) is written as the previous file's bytes, read, plus its new row groups encoded;
* any other file (log files, `.hoodie_partition_metadata`, the timeline): its bytes;
* and the stream's input batches, read from their staged parquet as both writers read them.

Its directories are created as it goes, as both writers create theirs. Files on two threads, as
pyhudi's in-process engine runs on this machine's two cores. What it leaves out makes it a lower bound:
files the stream wrote and deleted (markers, cleaned versions), reading the input, and the CPU pyhudi
spends deciding what to write.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SKIP_DIRS = {".temp", ".aux"}  # working files, gone after each commit
WRITE_BUFFER = 1 << 20  # a parquet file is ~100 small writes: buffered, as pyhudi's local output streams


def _files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        out.extend(Path(dirpath) / f for f in filenames)
    return out


def _file_group_and_instant(path: Path) -> tuple[str, str] | None:
    """(partition/file id, instant) of a base file named `<fileId>_<token>_<instant>.parquet`."""
    parts = path.stem.split("_")
    return (f"{path.parent}/{parts[0]}", parts[-1]) if path.suffix == ".parquet" and len(parts) >= 3 else None


def _encoding(meta: pq.FileMetaData) -> tuple[dict[str, str], list[str], list[str]]:
    """Each column's codec, the columns with a dictionary page, the columns with statistics."""
    rg = meta.row_group(0)
    codec, dictionary, stats = {}, [], []
    for i in range(rg.num_columns):
        col = rg.column(i)
        codec[col.path_in_schema] = "none" if col.compression == "UNCOMPRESSED" else col.compression.lower()
        if col.has_dictionary_page:
            dictionary.append(col.path_in_schema)
        if col.is_stats_set:
            stats.append(col.path_in_schema)
    return codec, dictionary, stats


def _parquet_job(path: Path, target: Path, previous: Path | None) -> Callable[[], int]:
    """A closure that writes `path`'s content at `target` (its data read now, outside the timing)."""
    pf = pq.ParquetFile(path)
    meta = pf.metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    spliced = False
    if previous is not None and len(groups) > 1:
        prev_rows = pq.ParquetFile(previous).metadata.num_rows
        for k in range(1, len(groups)):
            if sum(groups[:k]) == prev_rows:
                spliced, groups = True, groups[k:]
                break
    table = pf.read_row_groups(list(range(meta.num_row_groups - len(groups), meta.num_row_groups)))
    codec, dictionary, stats = _encoding(meta)
    kv = dict(meta.metadata or {})
    schema = table.schema.remove_metadata()
    table = table.replace_schema_metadata(None)

    def write() -> int:
        if previous is not None and not spliced:
            pq.ParquetFile(previous).read()  # the records a merge keeps (as pyhudi reads them: read_table's
            # dataset discovery costs twice as much on a small file)
        head = previous.read_bytes() if spliced and previous is not None else b""
        target.parent.mkdir(parents=True, exist_ok=True)
        if head:  # the spliced file: the previous bytes as they were, then the new row groups encoded
            sink = pa.BufferOutputStream()
            _encode(sink, table, schema, groups, codec, dictionary, stats, kv)
            body = sink.getvalue()
            with open(target, "wb") as f:
                f.write(head)
                f.write(body)
            return len(head) + body.size
        with pa.output_stream(str(target), buffer_size=WRITE_BUFFER) as f:  # as pyhudi's local stream
            _encode(f, table, schema, groups, codec, dictionary, stats, kv)
            return int(f.tell())
    return write


def _encode(sink: Any, table: pa.Table, schema: pa.Schema, groups: list[int], codec: dict[str, str],
            dictionary: list[str], stats: list[str], kv: dict[bytes, bytes]) -> None:
    writer = pq.ParquetWriter(sink, schema, compression=codec, use_dictionary=dictionary or False,
                              write_statistics=stats or False, store_schema=False)
    offset = 0
    for n in groups:
        writer.write_table(table.slice(offset, n), row_group_size=max(1, n))
        offset += n
    writer.add_key_value_metadata(kv)
    writer.close()


def _bytes_job(data: bytes, target: Path) -> Callable[[], int]:
    def write() -> int:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
        return len(data)
    return write


def _input_job(staged: str) -> Callable[[], int]:
    def read() -> int:
        pq.read_table(staged)
        return 0  # bytes written
    return read


def format_floor(table: str, scratch: Path, inputs: list[str], discard: Callable[[Path], None],
                 threads: int = 2) -> dict[str, Any]:
    """Seconds raw pyarrow takes to read `inputs` (the staged batches) and write `table`'s files again (see
    the module doc), with the count of files. `discard` moves the scratch directory out of the way."""
    root = Path(table)
    files = _files(root)
    versions: dict[str, list[tuple[str, Path]]] = {}
    for f in files:
        key = _file_group_and_instant(f)
        if key is not None:
            versions.setdefault(key[0], []).append((key[1], f))
    previous: dict[Path, Path] = {}
    for vs in versions.values():
        vs.sort()
        previous.update({later: earlier for (_, earlier), (_, later) in zip(vs, vs[1:])})
    discard(scratch)
    jobs = [_input_job(staged) for staged in inputs]
    for f in files:
        target = scratch / f.relative_to(root)
        if f.suffix == ".parquet" and _file_group_and_instant(f) is not None:
            jobs.append(_parquet_job(f, target, previous.get(f)))
        else:
            jobs.append(_bytes_job(f.read_bytes(), target))
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        written = sum(pool.map(lambda job: job(), jobs))
    seconds = time.perf_counter() - started
    discard(scratch)
    return {"seconds": seconds, "files": len(files), "bytes": written,
            "parquet_files": sum(1 for f in files if f.suffix == ".parquet")}
