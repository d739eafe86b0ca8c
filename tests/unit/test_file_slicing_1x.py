"""File slicing on timeline layout 2 (Hudi 1.x), as AbstractTableFileSystemView#buildFileGroups and
HoodieFileGroup#getBaseInstantTime slice: by the completion time of the commit that wrote each log.

The tables here are listings only (empty files named as Hudi 1.x names them), so each case states the
exact names and the slices Hudi builds from them."""

from __future__ import annotations

import os
import pathlib

import pytest

from pyhudi.model import avro_models as am
from pyhudi.model.instant_time import instant_to_ms, zone
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view

PROPS = """hoodie.table.name=t
hoodie.table.type=MERGE_ON_READ
hoodie.table.version=8
hoodie.timeline.layout.version=2
hoodie.timeline.path=timeline
hoodie.timeline.history.path=history
hoodie.table.recordkey.fields=id
hoodie.table.keygenerator.type=NON_PARTITION
hoodie.record.merge.mode=COMMIT_TIME_ORDERING
hoodie.table.timeline.timezone=UTC
"""
FG = "aaaaaaaa-0000-0000-0000-000000000000-0"


def _ts(n: int) -> str:
    return f"20250101000000{n:03d}"


def _table(tmp_path: pathlib.Path, timeline: list[str], files: list[str], plans: dict[str, list[str]] | None = None):
    hoodie = tmp_path / ".hoodie"
    (hoodie / "timeline" / "history").mkdir(parents=True)
    (hoodie / "hoodie.properties").write_text(PROPS)
    for name in timeline:
        (hoodie / "timeline" / name).write_bytes(b"")
        if "_" not in name and not name.endswith((".requested", ".inflight")):
            # a legacy completed name completes at its mtime: 2 ms after its instant, in the local zone
            ms = instant_to_ms(name.split(".")[0], zone(True)) + 2
            os.utime(hoodie / "timeline" / name, ns=(ms * 1_000_000, ms * 1_000_000))
    for ts, ops in (plans or {}).items():
        plan = am.compaction_plan(operations=[am.compaction_operation(base_instant_time=base, file_id=FG,
                                                                       partition_path="") for base in ops])
        (hoodie / "timeline" / f"{ts}.compaction.requested").write_bytes(
            am.write_instant_avro("HoodieCompactionPlan", plan))
    (tmp_path / ".hoodie_partition_metadata").write_text("#partition\ncommitTime=0\npartitionDepth=0\n")
    for name in files:
        (tmp_path / name).write_bytes(b"x")
    storage = Storage(str(tmp_path))
    config = load_table_config(storage)
    return build_view(storage, config, ActiveTimeline.load(storage))


def _base(ts: str) -> str:
    return f"{FG}_0-1-1_{ts}.parquet"


def _log(ts: str, version: int = 1) -> str:
    return f".{FG}_{ts}.log.{version}_0-1-1"


def _slices(view) -> list[tuple[str, str | None, list[str]]]:
    (group,) = view.file_groups("")
    return [(s.base_instant, s.base_file.name if s.base_file else None, [lf.name for lf in s.log_files])
            for s in group.slices]


def _done(req: int, comp: int, action: str = "deltacommit") -> str:
    return f"{_ts(req)}_{_ts(comp)}.{action}"


def test_log_joins_the_latest_base_at_or_before_its_completion(tmp_path):
    # base at 1; delta 2 completed at 3; compaction 4 (completed 5); delta 3 requested before the
    # compaction but completed after it (6): its log belongs to the compaction's slice.
    view = _table(tmp_path, [_done(1, 1), _done(2, 3), _done(4, 5, "commit"), f"{_ts(4)}.compaction.requested",
                             _done(3, 6)],
                  [_base(_ts(1)), _log(_ts(2)), _base(_ts(4)), _log(_ts(3))])
    assert _slices(view) == [(_ts(1), _base(_ts(1)), [_log(_ts(2))]), (_ts(4), _base(_ts(4)), [_log(_ts(3))])]


def test_log_under_pending_compaction_merges_with_the_previous_slice(tmp_path):
    view = _table(tmp_path, [_done(1, 1), _done(2, 3), _done(3, 6)],
                  [_base(_ts(1)), _log(_ts(2)), _log(_ts(3))], plans={_ts(4): [_ts(1)]})
    assert _slices(view) == [(_ts(1), _base(_ts(1)), [_log(_ts(2))]), (_ts(4), None, [_log(_ts(3))])]
    (merged,) = view.latest_merged_file_slices("")
    assert merged.base_file is not None and merged.base_file.name == _base(_ts(1))
    assert [lf.name for lf in merged.log_files] == [_log(_ts(2)), _log(_ts(3))]


def test_pending_log_is_invisible_and_opens_no_slice(tmp_path):
    view = _table(tmp_path, [_done(1, 1), f"{_ts(2)}.deltacommit.requested", f"{_ts(2)}.deltacommit.inflight"],
                  [_base(_ts(1)), _log(_ts(2))])
    assert _slices(view) == [(_ts(1), _base(_ts(1)), [])]


def test_log_only_slice_collects_later_logs(tmp_path):
    view = _table(tmp_path, [_done(1, 2), _done(3, 4)], [_log(_ts(1)), _log(_ts(3))])
    assert _slices(view) == [(_ts(1), None, [_log(_ts(1)), _log(_ts(3))])]


def test_logs_apply_in_requested_order_not_completion_order(tmp_path):
    # delta 2 (completed 9) and delta 3 (completed 4) overlap: Hudi's log comparator orders by the
    # instant in the name, so 2's log comes first although it committed last.
    view = _table(tmp_path, [_done(1, 1), _done(2, 9), _done(3, 4)], [_base(_ts(1)), _log(_ts(3)), _log(_ts(2))])
    assert _slices(view) == [(_ts(1), _base(_ts(1)), [_log(_ts(2)), _log(_ts(3))])]


def test_pre_upgrade_log_named_by_its_base_instant_stays_in_its_slice(tmp_path):
    # A version-6 log names its slice's base instant (1); the legacy completed commit (no `_`) completes
    # at its file's modification time, after the base instant.
    view = _table(tmp_path, [f"{_ts(1)}.deltacommit", _done(5, 6, "commit"), f"{_ts(5)}.compaction.requested"],
                  [_base(_ts(1)), _log(_ts(1)), _log(_ts(1), 2), _base(_ts(5))])
    assert _slices(view)[0] == (_ts(1), _base(_ts(1)), [_log(_ts(1)), _log(_ts(1), 2)])


def test_uncommitted_base_file_swallows_a_later_log_as_hudi_does(tmp_path):
    # An inflight write at 2 left a base file: its slice start takes the log of delta 3 (completed at 4),
    # and both are hidden until the failed write is rolled back (isFileSliceCommitted).
    view = _table(tmp_path, [_done(1, 1), f"{_ts(2)}.deltacommit.requested", _done(3, 4)],
                  [_base(_ts(1)), _base(_ts(2)), _log(_ts(3))])
    assert _slices(view) == [(_ts(1), _base(_ts(1)), [])]


@pytest.mark.parametrize("legacy", [False, True])
def test_completion_time_from_name_or_mtime(tmp_path, legacy):
    name = f"{_ts(1)}.deltacommit" if legacy else _done(1, 7)
    view = _table(tmp_path, [name], [_base(_ts(1))])
    done = view.timeline.completion_time(_ts(1))
    assert done == (_ts(3) if legacy else _ts(7))


def test_layout_without_loaded_properties_is_read_from_the_table(tmp_path):
    """A caller that loads the timeline without the table config (no remembered properties) still finds
    layout 2, even when an upgrade's cleanup left version-6 instant files in `.hoodie`."""
    view = _table(tmp_path, [_done(1, 1)], [_base(_ts(1))])
    (tmp_path / ".hoodie" / f"{_ts(0)}.commit").write_text("{}")  # a leftover of the upgrade
    fresh = Storage(str(tmp_path))  # nothing loaded through this one
    timeline = ActiveTimeline.load(fresh)
    assert timeline.layout.is_v2 and [i.timestamp for i in timeline] == [_ts(1)]
    assert view.timeline.layout.is_v2
