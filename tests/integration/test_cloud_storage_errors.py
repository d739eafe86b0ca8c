"""A missing container (Azurite) or bucket (GCS stand-in) is named as such, not read as a missing table.
The S3 cases are in test_s3_storage_errors.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import pyhudi
from pyhudi.errors import BucketNotFoundError

if TYPE_CHECKING:
    from tests.support.azure_fixtures import AzureContainer
    from tests.support.gcs_fixtures import GcsBucket

pytest_plugins = ["tests.support.azure_fixtures", "tests.support.gcs_fixtures"]


def test_missing_gcs_bucket(gcs: GcsBucket) -> None:
    uri = gcs.uri.replace(f"gs://{gcs.bucket}/", f"gs://{gcs.bucket}-missing/")
    with pytest.raises(BucketNotFoundError, match=f"bucket '{gcs.bucket}-missing' does not exist"):
        pyhudi.read(uri)


def test_missing_azure_container(azure: AzureContainer) -> None:
    container = azure.uri.split("://", 1)[1].split("@", 1)[0]
    uri = azure.uri.replace(f"{container}@", f"{container}-missing@")
    with pytest.raises(BucketNotFoundError, match=f"container '{container}-missing' in storage account .* does not "
                                                  "exist"):
        pyhudi.read(uri)
