"""Partition values, locations and events as Hudi computes them: the PartitionValueExtractor classes
(with Java's String.split), HoodieSyncConfig's extractor inference, HoodieSyncClient.getPartitionEvents and
TimelineUtils.getDroppedPartitions; expected values read off Hudi's code."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pyhudi.errors import MetaSyncError
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.sync.catalog import PartitionDef
from pyhudi.sync.partitions import (
    HIVE_STYLE,
    MULTI_PART,
    NON_PARTITIONED,
    SINGLE_PART,
    SLASH_DAY,
    SLASH_HOUR,
    EventType,
    Layout,
    dropped_partitions,
    full_events,
    incremental_events,
    infer_extractor,
    partition_location,
    partition_values,
    path_only,
    written_partitions,
)
from pyhudi.timeline.instant import Action, Instant


@pytest.mark.parametrize(("extractor", "path", "values"), [
    (MULTI_PART, "region=eu/city=paris", ("eu", "paris")),
    (MULTI_PART, "eu/paris", ("eu", "paris")),
    (MULTI_PART, "", ()),
    (MULTI_PART, "a/b/", ("a", "b")),  # Java drops trailing empty strings
    (HIVE_STYLE, "region=eu", ("eu",)),
    (SINGLE_PART, "2024/01/02", ("2024-01-02",)),
    (SINGLE_PART, "eu", ("eu",)),
    (NON_PARTITIONED, "anything", ()),
    (SLASH_DAY, "2024/1/2", ("2024-01-02",)),
    (SLASH_DAY, "year=2024/month=01/day=02", ("2024-01-02",)),
    (SLASH_HOUR, "2024/01/02/7", ("2024-01-02-07",)),
])
def test_extractors(extractor: str, path: str, values: tuple[str, ...]) -> None:
    assert partition_values(extractor, path, decode=False) == values


@pytest.mark.parametrize(("extractor", "path"), [
    (MULTI_PART, "a=b=c"), (MULTI_PART, "a="), (HIVE_STYLE, "eu"), (HIVE_STYLE, "a=b=c"),
    (SLASH_DAY, "2024/01"), (SLASH_DAY, "2024/13/01"), (SLASH_HOUR, "2024/01/02"),
])
def test_extractors_refuse_paths_they_cannot_read(extractor: str, path: str) -> None:
    with pytest.raises(MetaSyncError, match="partition_extractor_class"):
        partition_values(extractor, path, decode=False)


def test_decode_partition_url_decodes_values() -> None:
    assert partition_values(MULTI_PART, "d=2024%2F01", decode=True) == ("2024/01",)
    assert partition_values(MULTI_PART, "d=2024%2F01", decode=False) == ("2024%2F01",)


def test_extractor_inference_is_hudis() -> None:
    assert infer_extractor((), False) == NON_PARTITIONED
    assert infer_extractor(("region",), True) == HIVE_STYLE
    assert infer_extractor(("region",), False) == SINGLE_PART
    assert infer_extractor(("a", "b"), True) == MULTI_PART


def test_locations_and_their_comparison() -> None:
    assert partition_location("s3://b/t", "region=eu") == "s3://b/t/region=eu"
    assert partition_location("file:/tmp/t", "") == "file:/tmp/t"
    assert path_only("s3a://bucket/t/p") == path_only("s3://bucket/t/p") == "/t/p"
    assert path_only("file:/tmp/t/p") == path_only("/tmp/t/p/") == "/tmp/t/p"


LAYOUT = Layout("s3://b/t", MULTI_PART, False)


def _p(values: tuple[str, ...], path: str) -> PartitionDef:
    return PartitionDef(values, "s3://b/t/" + path)


def test_incremental_events_add_update_drop() -> None:
    catalog = [_p(("eu",), "region=eu"), _p(("us",), "old/region=us"), _p(("asia",), "region=asia")]
    events = incremental_events(LAYOUT, catalog, ["region=eu", "region=us", "region=fr", "region=asia", "region=gone"],
                                {"region=asia", "region=gone"})
    got = {(e.type, e.path) for e in events}
    assert got == {(EventType.UPDATE, "region=us"), (EventType.ADD, "region=fr"), (EventType.DROP, "region=asia")}
    # a dropped partition the catalog does not have is no event: a repeated sync changes nothing


def test_full_events_drop_what_the_table_lacks() -> None:
    catalog = [_p(("eu",), "region=eu"), _p(("old",), "region=old")]
    events = full_events(LAYOUT, catalog, ["region=eu", "region=us"])
    assert {(e.type, e.path) for e in events} == {(EventType.ADD, "region=us"), (EventType.DROP, "region=old")}


@dataclass
class FakeTimeline:
    """commit_metadata / details of a few instants, as ActiveTimeline serves them."""

    metas: dict[str, CommitMetadata]
    cleans: dict[str, bytes] = field(default_factory=dict)

    def commit_metadata(self, inst: Instant) -> CommitMetadata:
        return self.metas[inst.timestamp]

    def details(self, inst: Instant) -> bytes:
        return self.cleans[inst.timestamp]


def _meta(op: str, written: list[str], replaced: list[str] | None = None) -> CommitMetadata:
    return CommitMetadata(partition_to_write_stats={p: [] for p in written}, operation_type=op,
                          partition_to_replace_file_ids=None if replaced is None else {p: ["f"] for p in replaced})


def test_written_and_dropped_partitions_follow_timeline_utils() -> None:
    metas = {
        "001": _meta("UPSERT", ["a", "b"]),
        "002": _meta("DELETE_PARTITION", [], ["a", "c"]),
        "003": _meta("UPSERT", ["c"]),  # rewritten after its delete: not dropped
        "004": _meta("INSERT_OVERWRITE", ["d"], ["d"]),  # replaced and written at once: not dropped
        "005": _meta("CLUSTER", ["b"], ["b"]),  # clustering is no delete
    }
    window = [Instant(ts, Action.REPLACE_COMMIT if metas[ts].partition_to_replace_file_ids is not None
                      else Action.COMMIT) for ts in sorted(metas)]
    timeline = FakeTimeline(metas)
    assert written_partitions(timeline, window) == ["a", "b", "c", "d"]  # type: ignore[arg-type]
    assert dropped_partitions(timeline, window, []) == {"a"}  # type: ignore[arg-type]


def test_insert_overwrite_table_drops_the_partitions_it_emptied() -> None:
    metas = {"001": _meta("INSERT_OVERWRITE_TABLE", ["new"], ["old1", "old2", "new"])}
    window = [Instant("001", Action.REPLACE_COMMIT)]
    assert dropped_partitions(FakeTimeline(metas), window, []) == {"old1", "old2"}  # type: ignore[arg-type]


def test_a_clean_that_deleted_a_partition_drops_it_unless_rewritten_later() -> None:
    """TimelineUtils.getDroppedPartitions reads the cleans' HoodieCleanPartitionMetadata.isPartitionDeleted (a
    table whose partitions Hudi's cleaner deleted)."""
    from pyhudi.model import avro_models as am
    from pyhudi.model import avro_records as ar
    from pyhudi.sync.partitions import cleaned_partitions

    def part(p: str, deleted: bool) -> dict:
        return ar.clean_partition_metadata(partition_path=p, policy="KEEP_LATEST_COMMITS", delete_path_patterns=[],
                                           success_delete_files=[], failed_delete_files=[], is_partition_deleted=deleted)

    clean = am.write_instant_avro("HoodieCleanMetadata", ar.clean_metadata(
        start_clean_time="003", earliest_commit_to_retain="001",
        partition_metadata={"x": part("x", True), "y": part("y", True), "z": part("z", False)}))
    timeline = FakeTimeline({"002": _meta("UPSERT", ["a"]), "004": _meta("UPSERT", ["y"])}, {"003": clean})
    window = [Instant("002", Action.COMMIT), Instant("004", Action.COMMIT)]
    cleans = [Instant("003", Action.CLEAN)]
    assert cleaned_partitions(timeline, cleans) == ["x", "y"]  # type: ignore[arg-type]
    assert dropped_partitions(timeline, window, cleans) == {"x"}  # type: ignore[arg-type]
