"""On an object store, completing an instant is a conditional create (`If-None-Match: *`), not a plain PUT
(local S3 server behind the fault proxy; in-process, no Spark).

* Two completers of one instant: the second gets InstantAlreadyCompletedError; the first's commit stays.
* The completion PUT took effect but its answer was lost: the retry recognises its own commit, the write
  counts once, and the table reads as written (pyhudi and hudi-rs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import InstantAlreadyCompletedError
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]

FAST = {"pyhudi.retry.base_delay_ms": "1", "pyhudi.retry.max_delay_ms": "5"}
TS = "20250101000000001"


@pytest.mark.parametrize("action", [Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION])
def test_second_completer_cannot_overwrite_the_first(s3: S3Bucket, action: Action) -> None:
    storage = Storage(s3.uri, storage_options=FAST)
    tl = ActiveTimeline.load(storage)
    inst = tl.transition_to_inflight(tl.create_requested(Instant(TS, action, State.REQUESTED)), b"")
    done = tl.complete(inst, b'{"by": "first"}')
    other = ActiveTimeline.load(Storage(s3.uri, storage_options=FAST))
    with pytest.raises(InstantAlreadyCompletedError, match=done.file_name):
        other.complete(inst, b'{"by": "second"}')
    assert Storage(s3.uri).read_bytes(f".hoodie/{done.file_name}") == b'{"by": "first"}'


def test_a_lost_answer_to_the_completion_is_recognised(s3: S3Bucket) -> None:
    options = {"hoodie.table.name": "lost", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
               "hoodie.datasource.write.operation": "upsert"}
    first = pa.table({"id": ["a", "b", "ü"], "ts": [1, 1, 1], "p": ["x", "y", "x"]})
    pyhudi.write(first, s3.uri, options, storage_options=FAST)
    lost = s3.proxy.add("lost", op="PUT", path_endswith=".commit", conditional_only=True, limit=1)
    second = pa.table({"id": ["b", "c"], "ts": [2, 2], "p": ["y", "x"]})
    pyhudi.write(second, s3.uri, options, storage_options=FAST)
    assert lost.fired == 1  # the completion was a conditional create, and its answer was lost
    timeline = ActiveTimeline.load(Storage(s3.uri))
    assert len(timeline.completed().commits().instants) == 2 and not timeline.pending().instants
    expected = {"a": 1, "b": 2, "ü": 1, "c": 2}
    assert {r["id"]: r["ts"] for r in pyhudi.read(s3.uri).to_pylist()} == expected
    assert {r["id"]: r["ts"] for r in s3.hudi_rs().to_pylist()} == expected
