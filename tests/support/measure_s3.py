"""Request counts and times of pyarrow's S3FileSystem vs obstore on the local S3 server (moto), for the
library choice recorded in docs/architecture.md. Run: `.venv/bin/python -m tests.support.measure_s3`."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import obstore
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from obstore.store import S3Store

from pyhudi.storage import Storage
from tests.support.fault_proxy import FaultProxy
from tests.support.s3_server import ACCESS_KEY, REGION, SECRET_KEY, MotoS3Server, create_bucket

BUCKET = "pyhudi-measure"


def _measure(proxy: FaultProxy, name: str, fn: Callable[[], Any], runs: int = 3) -> None:
    fn()  # warm connections and caches
    proxy.reset_counts()
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    elapsed = (time.perf_counter() - start) / runs
    counts = {k: v // runs for k, v in proxy.counts.items() if v}
    print(f"| {name} | {counts} | {elapsed * 1000:.1f} ms |")


def _resilience(proxy: FaultProxy, storage: Storage, host: str) -> None:
    """40 parquet reads per fault rate, every Nth request answered 503: pyarrow's S3 file system (AWS SDK
    retries, max_attempts=8) against Storage.open_input_file (obstore, pyhudi's retries)."""
    fs = pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                           endpoint_override=host, retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=8))
    table = pa.table({"k": [f"k{i}" for i in range(20000)], "v": list(range(20000))})
    for i in range(8):
        with storage.open_output_stream(f"r/f{i}.parquet") as f:
            pq.write_table(table, f, row_group_size=2000)
    for every in (2, 3, 5, 7):
        proxy.clear()
        proxy.add("status", status=503, every=every)
        fails, example = {"pyarrow": 0, "Storage": 0}, ""
        for i in range(40):
            try:
                with fs.open_input_file(f"{BUCKET}/r/f{i % 8}.parquet") as f:
                    pq.read_table(f)
            except OSError as exc:
                fails["pyarrow"] += 1
                example = str(exc)[:100]
            try:
                with storage.open_input_file(f"r/f{i % 8}.parquet") as f:
                    pq.read_table(f)
            except OSError:
                fails["Storage"] += 1
        print(f"| 40 parquet reads, every {every}th request 503 | failed: {fails} | {example} |")
    proxy.clear()


def main() -> None:
    server = MotoS3Server().start()
    proxy = FaultProxy(server.endpoint)
    create_bucket(server.endpoint, BUCKET)
    host = proxy.url.split("://", 1)[1]
    arrow = pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                              endpoint_override=host)
    arrow_delayed = pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
                                      scheme="http", endpoint_override=host, allow_delayed_open=True)
    store = S3Store(BUCKET, config={"aws_endpoint": proxy.url, "aws_access_key_id": ACCESS_KEY,
                                    "aws_secret_access_key": SECRET_KEY, "aws_region": REGION},
                    client_options={"allow_http": True})
    rng = np.random.default_rng(0)
    big = pa.table({"k": pa.array([f"key-{i:09d}" for i in range(400_000)]),
                    "v": rng.random(400_000), "w": rng.integers(0, 1 << 40, 400_000)})
    buf = io.BytesIO()
    pq.write_table(big, buf, compression="none")
    blob = buf.getvalue()
    print(f"parquet file: {len(blob) / 1e6:.1f} MB")
    for i in range(20):
        obstore.put(store, f"dir/f{i}", b"x" * 100)
    obstore.put(store, "small", b"y" * 2000)
    obstore.put(store, "big.parquet", blob)
    n = [0]

    def fresh() -> str:
        n[0] += 1
        return f"t/{n[0]}.commit"

    def arrow_create() -> None:
        rel = fresh()
        if arrow.get_file_info(f"{BUCKET}/{rel}").type == pafs.FileType.NotFound:
            with arrow.open_output_stream(f"{BUCKET}/{rel}") as f:
                f.write(b"{}")

    def arrow_read_small() -> None:
        with arrow.open_input_stream(f"{BUCKET}/small") as f:
            f.read()

    def arrow_write_parquet(fs: pafs.S3FileSystem) -> None:
        with fs.open_output_stream(f"{BUCKET}/w/{fresh()}.parquet") as f:
            pq.write_table(big, f, compression="none")

    class Sink(io.RawIOBase):
        def __init__(self, w: Any) -> None:
            self.w = w

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            self.w.write(bytes(b))
            return len(b)

        def close(self) -> None:
            if not self.closed:
                self.w.close()
            super().close()

    def obstore_write_parquet() -> None:
        with pa.PythonFile(Sink(obstore.open_writer(store, f"w/{fresh()}.parquet")), mode="w") as f:
            pq.write_table(big, f, compression="none")

    def arrow_read_parquet() -> None:
        with arrow.open_input_file(f"{BUCKET}/big.parquet") as f:
            pq.read_table(f)

    storage = Storage(f"s3://{BUCKET}", storage_options={
        "aws_endpoint": proxy.url, "aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY,
        "aws_region": REGION})

    def storage_write_parquet() -> None:
        with storage.open_output_stream(f"w/{fresh()}.parquet") as f:
            pq.write_table(big, f, compression="none")

    def storage_read_parquet() -> None:
        with storage.open_input_file("big.parquet") as f:
            pq.read_table(f)

    print("| operation | requests | time |\n|---|---|---|")
    _measure(proxy, "create-exclusive: obstore PUT If-None-Match", lambda: obstore.put(store, fresh(), b"{}", mode="create"))
    _measure(proxy, "create-exclusive: pyarrow check-then-put", arrow_create)
    _measure(proxy, "read small file: obstore get", lambda: obstore.get(store, "small").bytes())
    _measure(proxy, "read small file: pyarrow open_input_stream", arrow_read_small)
    _measure(proxy, "list 20-file dir: obstore list_with_delimiter", lambda: obstore.list_with_delimiter(store, "dir"))
    _measure(proxy, "list 20-file dir: pyarrow get_file_info(FileSelector)",
             lambda: arrow.get_file_info(pafs.FileSelector(f"{BUCKET}/dir")))
    _measure(proxy, "write parquet: pyarrow open_output_stream", lambda: arrow_write_parquet(arrow))
    _measure(proxy, "write parquet: pyarrow allow_delayed_open", lambda: arrow_write_parquet(arrow_delayed))
    _measure(proxy, "write parquet: obstore open_writer", obstore_write_parquet)
    _measure(proxy, "read parquet: pyarrow open_input_file", arrow_read_parquet)
    _measure(proxy, "write parquet: pyhudi Storage.open_output_stream (obstore PUT at close)",
             storage_write_parquet)
    _measure(proxy, "read parquet: pyhudi Storage.open_input_file (ranged GETs)", storage_read_parquet)
    _measure(proxy, "exclusive create: pyhudi Storage.create_exclusive", lambda: storage.create_exclusive(fresh()))
    _measure(proxy, "small file: pyhudi Storage.read_bytes", lambda: storage.read_bytes("small"))
    _measure(proxy, "list: pyhudi Storage.list_dir", lambda: storage.list_dir("dir"))
    _resilience(proxy, storage, host)
    proxy.clear()
    small = pa.table({"a": [1, 2, 3]})

    def tiny(fs: pafs.S3FileSystem) -> None:
        with fs.open_output_stream(f"{BUCKET}/{fresh()}.p") as f:
            pq.write_table(small, f)

    _measure(proxy, "write tiny parquet: pyarrow open_output_stream", lambda: tiny(arrow))
    _measure(proxy, "write tiny parquet: pyarrow allow_delayed_open", lambda: tiny(arrow_delayed))
    proxy.stop()
    server.stop()


if __name__ == "__main__":
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    main()
