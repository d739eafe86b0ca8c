"""A Storage pickled into a Spark task carries the driver's object-store settings: executors (separate
Python workers, on a cluster other machines) do not see AWS_* variables the driver set, in particular
not those set after the SparkSession started. Before this, a Spark write to s3:// failed in the executor
with the instance-metadata credential lookup (169.254.169.254), the endpoint and keys unknown there."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING

import pytest

from pyhudi.storage import Storage

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures


def test_pickled_storage_reaches_the_bucket_without_the_environment(s3: S3Bucket,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    storage = Storage(s3.uri)
    storage.write_bytes("a/ü 007.txt", b"data")
    blob = pickle.dumps(storage)
    for var in s3.env:
        monkeypatch.delenv(var, raising=False)  # as in a worker that never saw the driver's variables
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    clone = pickle.loads(blob)
    assert clone.read_bytes("a/ü 007.txt") == b"data"
    assert clone._resolved()["aws_endpoint"] == s3.endpoint and not clone.storage_options


def test_explicit_options_win_and_local_paths_carry_nothing(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    state = Storage("s3://b/t", storage_options={"endpoint_url": "http://127.0.0.1:2"}).__getstate__()
    assert state["resolved_options"]["aws_endpoint"] == "http://127.0.0.1:2"
    assert state["resolved_options"]["aws_region"] == "eu-west-1"
    monkeypatch.setenv("AWS_REGION", "us-west-2")  # the worker's own variables lose to the driver's
    clone = pickle.loads(pickle.dumps(Storage("s3://b/t")))
    monkeypatch.setenv("AWS_REGION", "ap-east-1")
    assert clone._resolved()["aws_region"] == "us-west-2" and clone._resolved()["aws_endpoint"] == "http://127.0.0.1:1"
    assert set(Storage(str(tmp_path)).__getstate__()) == {"base_uri"}
