"""Object-store options obstore cannot take are HudiErrors naming the option, raised before any request:
malformed Azure and GCS credentials, and what a Rust panic becomes (no server needed: the stores fail while
being built, and the panic is simulated). The S3 cases run on the local server in
tests/integration/test_s3_storage_errors.py.
"""

from __future__ import annotations

import argparse
import json

import obstore.exceptions as oe
import pytest
from obstore.store import AzureStore, GCSStore, S3Store

import pyhudi
from pyhudi.cli.common import EXIT_ERROR, guarded
from pyhudi.errors import InvalidConfigError, StorageError
from pyhudi.storage import Storage, object_store
from pyhudi.storage.store_errors import KNOWN_KEYS, is_panic

SECRET = "not base64 at all!!"


class PanicException(BaseException):
    """Stands for pyo3_runtime.PanicException (matched by name, as pyo3 creates it at run time)."""


def test_azure_account_key_that_is_not_base64() -> None:
    with pytest.raises(InvalidConfigError, match="azure_storage_account_key must be the storage account's access "
                                                 "key, base64") as info:
        pyhudi.read("abfss://c@acct.dfs.core.windows.net/t",
                    storage_options={"azure_storage_account_key": SECRET})
    assert SECRET not in str(info.value)  # a credential is never printed
    assert "abfss://c@acct" in str(info.value)


@pytest.mark.parametrize("key", ["not json", json.dumps({"type": "service_account"})])
def test_gcs_service_account_key_that_cannot_be_decoded(key: str) -> None:
    with pytest.raises(InvalidConfigError, match="google_service_account_key must be the service account's JSON "
                                                 "key") as info:
        pyhudi.read("gs://bucket/t", storage_options={"google_service_account_key": key})
    assert key not in str(info.value)


def test_gcs_service_account_file_that_does_not_exist() -> None:
    with pytest.raises(InvalidConfigError, match="google_service_account must be the path"):
        Storage("gs://bucket/t", storage_options={"google_service_account": "/nonexistent/key.json"}).exists("x")


def test_a_panic_in_a_request_is_a_storage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def panic(*args: object, **kwargs: object) -> None:
        raise PanicException("called `Result::unwrap()` on an `Err` value: InvalidPort")

    monkeypatch.setattr(object_store.obstore, "head", panic)
    storage = Storage("s3://bucket/t", storage_options={"aws_endpoint": "http://127.0.0.1:9", "aws_region": "x"})
    with pytest.raises(StorageError, match="HEAD of s3://bucket/t/x failed inside the object-store library "
                                           r"\(a Rust panic: .*InvalidPort\); check the endpoint"):
        storage.size("x")


def test_cli_turns_a_panic_into_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def command(_: argparse.Namespace) -> int:
        raise PanicException("boom")

    assert guarded(command, argparse.Namespace(), "pyhudi timeline") == EXIT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pyhudi timeline: error: ") and "boom" in err[0]

    def interrupted(_: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # interrupts and exits still pass
        guarded(interrupted, argparse.Namespace(), "pyhudi timeline")
    assert not is_panic(SystemExit(1))


@pytest.mark.parametrize(("kind", "store"), [("s3", S3Store), ("gs", GCSStore), ("az", AzureStore)])
def test_every_suggested_key_is_one_obstore_knows(kind: str, store: type) -> None:
    """The suggestion lists are ours; obstore decides what is valid. A key it stops knowing is a stale
    suggestion (pyhudi's own keys and the allow-http switches are taken out before obstore sees them)."""
    ours = {"aws_profile", "aws_allow_http", "azure_allow_http", "allow_http"}
    for key in KNOWN_KEYS[kind]:
        if key in ours:
            continue
        try:
            store("bucket", config={key: "true"})
        except oe.UnknownConfigurationKeyError:
            pytest.fail(f"{key} is not an obstore {kind} key")
        except (oe.BaseError, ValueError):
            pass  # known, but "true" is no valid value for it
