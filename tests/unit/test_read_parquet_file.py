"""io.base_file.read_parquet reads one file with ParquetFile (no dataset per call): the same table, schema
and footer metadata as pq.read_table, on every base file of the sample tables Hudi wrote."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pyhudi.io.base_file import read_parquet
from pyhudi.storage import Storage
from tests.unit._samples import SampleTables, sample_names


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleTables:
    return SampleTables(tmp_path_factory.mktemp("read_parquet_samples"))


@pytest.mark.parametrize("name", sample_names())
def test_read_parquet_equals_read_table(samples: SampleTables, name: str) -> None:
    root = samples.root(name)
    storage = Storage(str(root))
    for path in sorted(root.rglob("*.parquet")):
        rel = str(path.relative_to(root))
        got, want = read_parquet(storage, rel), pq.read_table(path)
        assert got.equals(want) and got.schema.equals(want.schema, check_metadata=True), rel
        keys = read_parquet(storage, rel, columns=["_hoodie_record_key"]) if "_hoodie_record_key" in \
            want.column_names else None
        if keys is not None:
            assert keys.column(0).equals(want.column("_hoodie_record_key")), rel
