"""Clustering refuses a plan whose every file group is a bucket file group (a Hudi 0.14 BUCKET table records no
bucket count), but a random UUID that happens to start with 8 digits is no bucket file group: a CI run met
two such groups ('89251001-...') and the clustering of an ordinary table was refused."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pyhudi.errors import UnsupportedTableError
from pyhudi.services.clustering_plan import refuse_bucket_groups


def _draft(*file_ids: str) -> SimpleNamespace:
    return SimpleNamespace(groups=[SimpleNamespace(slices=[SimpleNamespace(file_id=f) for f in file_ids])])


def test_groups_of_random_uuids_starting_with_digits_are_clustered() -> None:
    refuse_bucket_groups(_draft("89251001-6a9a-4742-af09-9f75f858ea5b-0",  # type: ignore[arg-type]
                                "31415926-0d3e-4aa1-9c2e-1f2e3d4c5b6a-0"))


def test_bucket_file_groups_are_refused() -> None:
    with pytest.raises(UnsupportedTableError, match="bucket file groups"):
        refuse_bucket_groups(_draft("00000001-6a9a-4742-af09-9f75f858ea5b-0",  # type: ignore[arg-type]
                                    "00000007-0d3e-4aa1-9c2e-1f2e3d4c5b6a-0"))
