"""Misconfigured object-store access is a HudiError naming the offending option or bucket and the fix, never
obstore's own exception or a Rust panic (local S3 server; in-process and the `pyhudi` command, no Spark).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import BucketNotFoundError, InvalidConfigError

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]

OPTIONS = {"hoodie.table.name": "errs", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts"}
BATCH = pa.table({"id": ["a", "ü"], "ts": [1, 2]})


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:99999", "http://127.0.0.1:0", "localhost:9000",
                                      "ftp://127.0.0.1:9000", "http://:9000", "http://127.0.0.1:port"])
def test_a_bad_endpoint_names_the_option(s3: S3Bucket, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidConfigError, match=r"aws_endpoint=.*e\.g\. http://localhost:9000") as info:
        pyhudi.read(s3.uri, storage_options={**s3.storage_options, "aws_endpoint": endpoint})
    assert endpoint in str(info.value)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)  # the same from the environment
    with pytest.raises(InvalidConfigError, match="AWS_ENDPOINT_URL"):
        pyhudi.write(BATCH, s3.uri, OPTIONS)


@pytest.mark.parametrize(("key", "meant"), [("aws_acess_key_id", "aws_access_key_id"),
                                            ("aws_regoin", "aws_region"),
                                            ("pyhudi.retry.max_attemps", "pyhudi.retry.max_attempts")])
def test_a_misspelled_storage_option_names_it_and_the_likely_key(s3: S3Bucket, key: str, meant: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"unknown storage option '{key}'.*did you mean {meant}"):
        pyhudi.write(BATCH, s3.uri, OPTIONS, storage_options={**s3.storage_options, key: "5"})


def test_a_missing_bucket_is_named_not_a_missing_table(s3: S3Bucket) -> None:
    uri = f"s3://{s3.bucket}-missing/table"
    with pytest.raises(BucketNotFoundError, match=f"bucket '{s3.bucket}-missing' does not exist"):
        pyhudi.read(uri)
    with pytest.raises(BucketNotFoundError, match=f"bucket '{s3.bucket}-missing' does not exist"):
        pyhudi.write(BATCH, uri, OPTIONS)
    with pytest.raises(pyhudi.HudiError, match="not a Hudi table"):  # an existing bucket without a table
        pyhudi.read(s3.uri)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyhudi.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env, "PYHUDI_NO_PROGRESS": "1"})


def test_cli_prints_one_line_and_exits_2(s3: S3Bucket) -> None:
    bad_port = _cli({**s3.env, "AWS_ENDPOINT_URL": "http://127.0.0.1:99999"}, "timeline", s3.uri)
    missing = _cli(s3.env, "timeline", f"s3://{s3.bucket}-missing/table")
    for proc, expected in ((bad_port, "aws_endpoint='http://127.0.0.1:99999'"),
                           (missing, f"bucket '{s3.bucket}-missing' does not exist")):
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pyhudi timeline: error: ") and expected in lines[0], lines


def test_a_ranged_read_of_a_missing_object_is_file_not_found(s3: S3Bucket) -> None:
    """As a whole read: callers (the LSM history reader, footers) tell a vanished file from a failing store."""
    from pyhudi.storage import Storage

    storage = Storage(s3.uri, storage_options=s3.storage_options)
    storage.write_bytes("present.bin", b"0123456789")
    assert storage.read_range("present.bin", 2, 5) == b"234"
    with pytest.raises(FileNotFoundError, match="gone.bin"):
        storage.read_range("gone.bin", 0, 4)
