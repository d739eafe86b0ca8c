"""A local base file goes to disk in a few large writes, not one syscall per page: the parquet writer
hands its stream each page header, page and footer part separately (~94 pieces for 23 columns)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.io.base_file import ParquetSettings, write_parquet
from pyhudi.storage import Storage

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts syscalls in /proc/self/io")


def _write_syscalls() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("syscw:"))


def test_a_parquet_file_is_written_in_few_syscalls(tmp_path: Path) -> None:
    table = pa.table({f"c{i}": pa.array([f"v{i}-{r}" for r in range(300)]) for i in range(23)})
    storage = Storage(str(tmp_path))
    storage.makedirs("p")
    before = _write_syscalls()
    size = write_parquet(storage, "p/f.parquet", table, "{}", ParquetSettings(with_bloom=False))
    writes = _write_syscalls() - before
    assert writes <= 4, f"{writes} write syscalls for one 23-column file"  # unbuffered: ~94
    assert size == os.path.getsize(tmp_path / "p" / "f.parquet")
    assert pq.read_table(tmp_path / "p" / "f.parquet").equals(table)


def test_a_file_larger_than_the_buffer_is_written_whole(tmp_path: Path) -> None:
    data = os.urandom(3 << 20)
    storage = Storage(str(tmp_path))
    storage.write_bytes("big.bin", data)
    assert (tmp_path / "big.bin").read_bytes() == data
