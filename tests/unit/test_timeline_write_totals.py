"""ActiveTimeline.write_totals: the record-size estimate's two sums, read without building write stats,
agree with the full commit metadata (commits, deltacommits' base files only, empty and corrupt files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyhudi.errors import CorruptFileError
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.table_config import MOR
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline
from tests.unit._tables import T, Table


def _meta() -> CommitMetadata:
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": '{"numWrites": 7}'})
    for i, part in enumerate(["2024/01/02", "é ü", "7"]):
        meta.add(WriteStat(file_id=f"f{i}", path=f"{part}/f{i}_0-1-1_{T(1)}.parquet", partition_path=part,
                           num_writes=10 + i, total_write_bytes=1000 * (i + 1)))
        meta.add(WriteStat(file_id=f"f{i}", path=f"{part}/.f{i}_{T(1)}.log.1_0-1-1", partition_path=part,
                           num_writes=5, total_write_bytes=333, log_version=1))
    return meta


def test_write_totals_match_commit_metadata(tmp_path: Path) -> None:
    t = Table(tmp_path / "t", MOR)
    t.instant(T(1), "deltacommit", meta=_meta())
    t.instant(T(2), "deltacommit", meta=CommitMetadata(operation_type="UPSERT"))
    (t.hoodie / f"{T(3)}.deltacommit.requested").write_bytes(b"")
    (t.hoodie / f"{T(3)}.deltacommit.inflight").write_bytes(b"")
    (t.hoodie / f"{T(3)}.deltacommit").write_bytes(b"{not json")
    timeline = ActiveTimeline.load(Storage(str(t.root)))
    inst = Instant(T(1), Action.DELTA_COMMIT)
    stats = timeline.commit_metadata(inst).all_stats()
    assert timeline.write_totals(inst) == (sum(s.total_write_bytes for s in stats), sum(s.num_writes for s in stats))
    base = [s for s in stats if s.path.endswith(".parquet")]
    assert timeline.write_totals(inst, base_files_only=True) == (6000, 33) == (
        sum(s.total_write_bytes for s in base), sum(s.num_writes for s in base))
    assert timeline.write_totals(Instant(T(2), Action.DELTA_COMMIT)) == (0, 0)
    with pytest.raises(CorruptFileError, match=T(3)):
        timeline.write_totals(Instant(T(3), Action.DELTA_COMMIT))
