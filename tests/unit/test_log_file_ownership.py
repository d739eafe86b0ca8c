"""Merge-on-read log files are never overwritten, and only their own instant's rollback deletes them.

Two writers of one file slice plan the same next log version and, in two Spark applications, can get
the same write token: the append handle must roll over past a name that exists instead of overwriting
it, and a rollback (or a commit's clean-up of unreported files) must not delete a file that its
instant's markers name but another instant wrote (the log file name carries the slice's base instant,
not the writer's; the blocks' INSTANT_TIME header does).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from pyhudi.io import schema as S
from pyhudi.io.base_file import ParquetSettings
from pyhudi.io.log_blocks import encode_parquet_data_block
from pyhudi.io.log_format import (
    BlockType,
    HeaderKey,
    build_log_file,
    read_blocks,
    read_valid_blocks,
)
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import log_file_name
from pyhudi.services.rollback import resume_pending_rollbacks, rollback_pending_write
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.append_handle import append_handle
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.handles import PARTITION, RECORD_KEY, HandleContext
from pyhudi.writer.markers import (
    LogOwner,
    Marking,
    create_marker,
    list_marked_files,
    log_file_owner,
    unreported_files,
)
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import Bucket, BucketKind
from tests.unit._tables import T, Table

PART = "p=a"
FID = "fg1-0"
BASE_TS = T(1)
X, Y = T(5), T(6)  # two concurrent delta commits of the same slice
TOKEN = "0-12-34"  # the same token in both applications
AVRO = S.with_meta_fields({"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "id", "type": "string"}, {"name": "v", "type": ["null", "long"], "default": None}]})
FILE_SCHEMA = S.avro_to_arrow(AVRO)


def _ctx(root: Path, instant: str) -> HandleContext:
    return HandleContext(
        storage=Storage(str(root)), instant=instant, operation=WriteOperation.UPSERT, file_schema=FILE_SCHEMA,
        avro_schema_with_meta=S.to_json(AVRO), populate_meta=True, precombine_field=None,
        event_time_ordering=False, combine=False, allow_duplicate_on_inserts=True, sizing=SizingConfig(),
        parquet=ParquetSettings(), buckets=(), salts=())


def _records(keys: list[str], value: int) -> pa.Table:
    return pa.table({RECORD_KEY: keys, PARTITION: [PART] * len(keys), "id": keys, "v": [value] * len(keys)})


def _log_bytes(instant: str, keys: list[str], value: int) -> bytes:
    rows = {f.name: [None] * len(keys) for f in FILE_SCHEMA}
    rows.update({"_hoodie_commit_time": [instant] * len(keys), RECORD_KEY: keys, PARTITION: [PART] * len(keys),
                 "id": keys, "v": [value] * len(keys)})
    return build_log_file([encode_parquet_data_block(pa.table(rows, schema=FILE_SCHEMA), S.to_json(AVRO), instant)])


def _append_bucket(version: int) -> Bucket:
    return Bucket(number=0, kind=BucketKind.APPEND, partition=PART, file_id=FID, base_instant=BASE_TS,
                  base_file=f"{PART}/{FID}_0-1-1_{BASE_TS}.parquet", log_base_instant=BASE_TS, log_version=version)


def _instants(table: Table, *inflight: str) -> None:
    table.instant(BASE_TS, "deltacommit")
    for ts in inflight:
        table.instant(ts, "deltacommit", "inflight")


def _writers(path: Path) -> set[str | None]:
    return {b.instant_time for b in read_valid_blocks(path.read_bytes())}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    t = Table(tmp_path / "t", table_type="MERGE_ON_READ")
    (t.root / PART).mkdir(parents=True)
    return t


# --------------------------------------------------------------------------- (a) the append handle
def test_append_handle_rolls_over_past_an_existing_log_file_and_leaves_it_alone(table: Table) -> None:
    """Writer Y already created version 2 with the same token; X planned version 2 too."""
    taken = log_file_name(FID, BASE_TS, 2, TOKEN)
    theirs = _log_bytes(Y, ["k1"], 1)
    (table.root / PART / taken).write_bytes(theirs)
    storage = Storage(str(table.root))

    stats = append_handle(_ctx(table.root, X), storage, _append_bucket(2), _records(["k2", "k3"], 7), TOKEN, 0)

    assert (table.root / PART / taken).read_bytes() == theirs, "the existing log file was touched"
    ours = log_file_name(FID, BASE_TS, 3, TOKEN)
    assert [(s.path, s.log_version, s.log_files) for s in stats] == [(f"{PART}/{ours}", 3, [ours])]
    assert _writers(table.root / PART / ours) == {X}
    # X's markers name only the file it wrote, so nothing of X's can ever claim Y's file.
    assert list_marked_files(storage, X) == [f"{PART}/{ours}"]


def test_append_handle_writes_the_planned_version_when_it_is_free(table: Table) -> None:
    storage = Storage(str(table.root))
    stats = append_handle(_ctx(table.root, X), storage, _append_bucket(2), _records(["k2"], 7), TOKEN, 0)
    assert [s.log_version for s in stats] == [2]
    assert sorted(os.listdir(table.root / PART)) == [log_file_name(FID, BASE_TS, 2, TOKEN)]


def test_write_new_never_overwrites(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    assert storage.write_new("a/f", b"first")
    assert not storage.write_new("a/f", b"second")
    assert (tmp_path / "a" / "f").read_bytes() == b"first"


# --------------------------------------------------------------------------- (c) rollback and commit clean-up
@pytest.fixture(params=["DIRECT", "TIMELINE_SERVER_BASED"])
def marking(request: pytest.FixtureRequest) -> Marking:
    """Both marker layouts: one file per marker, or marker names batched in MARKERS<n> files."""
    return Marking.of(request.param)


def _collide(table: Table, marking: Marking) -> tuple[Path, Path]:
    """Y won version 2; X lost it, rolled over to version 3, but its marker for version 2 survived
    (a crash between the failed create and withdrawing the marker). Both are inflight."""
    _instants(table, X, Y)
    storage = Storage(str(table.root))
    v2, v3 = log_file_name(FID, BASE_TS, 2, TOKEN), log_file_name(FID, BASE_TS, 3, TOKEN)
    for instant, name in ((Y, v2), (X, v2), (X, v3)):
        create_marker(storage, instant, PART, name, "APPEND", marking)
    (table.root / PART / v2).write_bytes(_log_bytes(Y, ["k1"], 1))
    (table.root / PART / v3).write_bytes(_log_bytes(X, ["k2"], 2))
    return table.root / PART / v2, table.root / PART / v3


def test_rollback_keeps_another_instants_log_file_its_marker_names(table: Table, marking: Marking) -> None:
    theirs, ours = _collide(table, marking)
    storage = Storage(str(table.root))
    before = theirs.read_bytes()

    result = rollback_pending_write(storage, ActiveTimeline.load(storage), Instant(X, Action.DELTA_COMMIT,
                                                                                   State.INFLIGHT))

    assert theirs.exists() and theirs.read_bytes() == before, "rollback of X deleted Y's log file"
    assert not ours.exists(), "rollback of X left X's own log file"
    assert [u.rsplit("/", 1)[-1] for u in result.deleted_files] == [ours.name]
    assert list_marked_files(storage, Y) == [f"{PART}/{theirs.name}"], "Y's markers were touched"


def test_commit_cleanup_keeps_another_instants_log_file_its_marker_names(table: Table, marking: Marking) -> None:
    theirs, ours = _collide(table, marking)
    storage = Storage(str(table.root))
    assert unreported_files(storage, X, {f"{PART}/{ours.name}"}) == []
    # A file X wrote but did not report (a failed task attempt) still goes.
    assert unreported_files(storage, X, set()) == [f"{PART}/{ours.name}"]


def test_rollback_keeps_a_blockless_log_file_another_live_writer_marked(table: Table, marking: Marking) -> None:
    """Y is still writing (or died mid-block): no complete block to tell the owner, but Y's marker is there."""
    theirs, _ = _collide(table, marking)
    theirs.write_bytes(_log_bytes(Y, ["k1"], 1)[:40])
    storage = Storage(str(table.root))
    rollback_pending_write(storage, ActiveTimeline.load(storage), Instant(X, Action.DELTA_COMMIT, State.INFLIGHT))
    assert theirs.exists()


def test_rollback_deletes_its_own_torn_log_file(table: Table, marking: Marking) -> None:
    """A torn file nobody else marked is the rolled-back instant's own (a crash mid-write)."""
    _instants(table, X)
    storage = Storage(str(table.root))
    name = log_file_name(FID, BASE_TS, 2, TOKEN)
    create_marker(storage, X, PART, name, "APPEND", marking)
    torn = table.root / PART / name
    torn.write_bytes(_log_bytes(X, ["k1"], 1)[:40])
    assert log_file_owner(storage, f"{PART}/{name}", X) is LogOwner.NO_BLOCK
    rollback_pending_write(storage, ActiveTimeline.load(storage), Instant(X, Action.DELTA_COMMIT, State.INFLIGHT))
    assert not torn.exists()


def test_rollback_cancels_its_blocks_in_a_shared_log_file_with_a_command_block(table: Table, marking: Marking) -> None:
    """A log file holding blocks of X and of Y (a writer that appends) is kept; X's blocks are rolled back
    by a command block in a new version, as Hudi does."""
    _instants(table, X)
    storage = Storage(str(table.root))
    name = log_file_name(FID, BASE_TS, 2, TOKEN)
    create_marker(storage, X, PART, name, "APPEND", marking)
    shared = table.root / PART / name
    shared.write_bytes(_log_bytes(Y, ["k1"], 1) + _log_bytes(X, ["k2"], 2))
    before = shared.read_bytes()
    rollback_pending_write(storage, ActiveTimeline.load(storage), Instant(X, Action.DELTA_COMMIT, State.INFLIGHT))
    assert shared.read_bytes() == before
    (cmd_name,) = [n for n in os.listdir(table.root / PART) if n != name]
    (block,) = read_blocks((table.root / PART / cmd_name).read_bytes())
    assert block.block_type == BlockType.COMMAND_BLOCK and block.header[HeaderKey.TARGET_INSTANT_TIME] == X


def test_resumed_rollback_keeps_a_file_another_writer_created_after_the_plan(table: Table, marking: Marking) -> None:
    """The plan named X's file; it was deleted before a crash, and Y has created that name since.
    Resuming the plan must not delete Y's file."""
    _instants(table, X, Y)
    storage = Storage(str(table.root))
    name = log_file_name(FID, BASE_TS, 2, TOKEN)
    rel = f"{PART}/{name}"
    plan = am.rollback_plan(instant_to_rollback=am.instant_info(X, "deltacommit"), rollback_requests=[
        am.rollback_request(partition_path=PART, files_to_be_deleted=[storage.uri(rel)])])
    timeline = ActiveTimeline.load(storage)
    rb = timeline.create_new_requested(Action.ROLLBACK, am.write_instant_avro("HoodieRollbackPlan", plan)).timestamp
    create_marker(storage, Y, PART, name, "APPEND", marking)
    (table.root / rel).write_bytes(_log_bytes(Y, ["k1"], 1))
    (result,) = resume_pending_rollbacks(storage, ActiveTimeline.load(storage))
    assert result.rollback_instant == rb and result.deleted_files == ()
    assert _writers(table.root / rel) == {Y}
