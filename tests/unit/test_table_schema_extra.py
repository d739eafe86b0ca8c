"""The writer schema read from a commit's extraMetadata alone (`table_schema._schema_of`) is the parsed
commit's: on every sample table Hudi wrote (layout 1 JSON and layout 2 Avro commits), and on pyhudi commits
whose write stats hold the key's own name in partition paths or that are large enough to be read from their
tail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline import table_schema as TS
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import SAMPLES_1X, extract_sample, extract_sample_1x, manifest, samples_1x


def _writes(root: Path) -> tuple[ActiveTimeline, list[Instant]]:
    timeline = ActiveTimeline.load(Storage(str(root)))
    return timeline, list(timeline.completed().actions(*WRITE_ACTIONS, Action.COMMIT).instants)


def _same_schemas(root: Path) -> int:
    timeline, writes = _writes(root)
    for inst in writes:
        assert TS._schema_of(timeline, inst) == timeline.commit_metadata(inst).schema, inst
    return len(writes)


def test_every_sample_commit_gives_the_parsed_schema(tmp_path: Path) -> None:
    checked = 0
    for i, entry in enumerate(manifest()):
        checked += _same_schemas(extract_sample(Path(entry["zip"]).name, tmp_path / f"v6-{i}"))
    for name in samples_1x() if (SAMPLES_1X / "manifest.json").exists() else ():
        checked += _same_schemas(extract_sample_1x(name, tmp_path / f"1x-{name}"))
    assert checked > 20


@pytest.mark.parametrize("stats", [3, 4000])
def test_pyhudi_commits_with_the_key_in_their_stats(tmp_path: Path, stats: int) -> None:
    """Partition paths spelling `"extraMetadata" : {...}` (escaped in the JSON), and a commit of thousands
    of stats, above the size read from its tail; then a commit whose extraMetadata has no schema."""
    storage = Storage(str(tmp_path))
    (tmp_path / ".hoodie").mkdir()
    schema = json.dumps({"type": "record", "name": "r", "fields": [{"name": "extraMetadata", "type": "string"}]})
    for ts, extra in [("20261201000000001", {"schema": schema}), ("20261201000000002", {"other": "x"})]:
        meta = CommitMetadata(operation_type="UPSERT")
        for j in range(stats):
            part = f'"extraMetadata" : {{"schema" : "fake{j}"}}' if j % 2 else f"p{j}"
            meta.add(WriteStat(file_id=f"f{j}", path=f"{part}/f{j}_0-1-1_{ts}.parquet", partition_path=part,
                               num_writes=1, total_write_bytes=10, file_size_in_bytes=10))
        meta.extra_metadata = extra
        inst = Instant(ts, Action.COMMIT, State.COMPLETED)
        storage.write_atomic(f".hoodie/{inst.file_name}", meta.to_bytes(ts))
    assert _same_schemas(tmp_path) == 2
    timeline, writes = _writes(tmp_path)
    assert TS._schema_of(timeline, writes[0]) == schema and TS._schema_of(timeline, writes[1]) is None
    assert bool(timeline._tails) == (stats > 1000)  # the large commit was searched from its tail
