"""Builders of the Avro records of Hudi's timeline, with the values Hudi 0.14/0.15 put in the fields a caller
does not pass (split from avro_models.py, which re-exports them: callers use ``avro_models``)."""

from __future__ import annotations

import datetime as _dt
import decimal
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyhudi.model.avro_schemas import (
    NAMESPACE,
    SCHEMAS,
    WRAPPER_NAMES,
    AvroModelError,
    simple_name,
)

__all__ = [
    "CLEAN_PLAN_VERSION",
    "CLEAN_METADATA_VERSION",
    "COMPACTION_PLAN_VERSION",
    "CLUSTERING_PLAN_VERSION",
    "ROLLBACK_PLAN_VERSION",
    "RESTORE_PLAN_VERSION",
    "DEFAULT_METADATA_VERSION",
    "DEFAULT_CLUSTERING_EXECUTION_STRATEGY",
    "ROLLING_STAT_METADATA_KEY",
    "empty_requested_replace_metadata",
    "requested_replace_metadata",
    "slice_info",
    "clustering_group",
    "clustering_strategy",
    "clustering_plan",
    "compaction_operation",
    "compaction_strategy",
    "compaction_plan",
    "action_instant",
    "clean_file_info",
    "cleaner_plan",
    "clean_partition_metadata",
    "clean_metadata",
    "instant_info",
    "rollback_request",
    "rollback_plan",
    "rollback_partition_metadata",
    "rollback_metadata",
    "savepoint_metadata",
    "restore_plan",
    "restore_metadata",
    "archived_commit_metadata",
    "archived_meta_entry",
    "ordering_value",
    "delete_record",
    "delete_record_list",
]

# Versions Hudi 0.14/0.15 stamp on the records it writes.
CLEAN_PLAN_VERSION = 2  # CleanPlanner.LATEST_CLEAN_PLAN_VERSION
CLEAN_METADATA_VERSION = 2  # CleanerUtils.LATEST_CLEAN_METADATA_VERSION
COMPACTION_PLAN_VERSION = 2  # CompactionUtils.LATEST_COMPACTION_METADATA_VERSION (relative paths)
CLUSTERING_PLAN_VERSION = 1  # ClusteringPlanStrategy.CLUSTERING_PLAN_VERSION_1
ROLLBACK_PLAN_VERSION = 1  # BaseRollbackPlanActionExecutor.LATEST_ROLLBACK_PLAN_VERSION
RESTORE_PLAN_VERSION = 2  # RestorePlanActionExecutor.LATEST_RESTORE_PLAN_VERSION
DEFAULT_METADATA_VERSION = 1  # TimelineMetadataUtils.DEFAULT_VERSION (rollback/savepoint/restore)

DEFAULT_CLUSTERING_EXECUTION_STRATEGY = (
    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
)
#: Key Hudi blanks in archived commit metadata (HoodieRollingStatMetadata.ROLLING_STAT_METADATA_KEY).
ROLLING_STAT_METADATA_KEY = "ROLLING_STAT"


def _list(values: Sequence[Any] | None) -> list[Any]:
    return list(values) if values is not None else []


def empty_requested_replace_metadata() -> dict[str, Any]:
    """What insert_overwrite(_table) and delete_partition write to ``.replacecommit.requested``.

    Hudi uses the no-arg constructor there, so even ``version`` is null.
    """
    return {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}


def requested_replace_metadata(
    *,
    clustering_plan: Mapping[str, Any] | None,
    operation_type: str = "CLUSTER",
    extra_metadata: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``HoodieRequestedReplaceMetadata`` as clustering scheduling writes it."""
    return {
        "operationType": operation_type,
        "clusteringPlan": dict(clustering_plan) if clustering_plan is not None else None,
        "extraMetadata": dict(extra_metadata or {}),
        "version": 1,
    }


def slice_info(
    *,
    file_id: str,
    partition_path: str,
    data_file_path: str = "",
    delta_file_paths: Sequence[str] | None = None,
    bootstrap_file_path: str = "",
) -> dict[str, Any]:
    """``HoodieSliceInfo``: Hudi writes full paths and ``""`` for a missing base/bootstrap file."""
    return {
        "dataFilePath": data_file_path,
        "deltaFilePaths": _list(delta_file_paths),
        "fileId": file_id,
        "partitionPath": partition_path,
        "bootstrapFilePath": bootstrap_file_path,
        "version": 1,
    }


def clustering_group(
    *,
    slices: Sequence[Mapping[str, Any]],
    num_output_file_groups: int,
    metrics: Mapping[str, float] | None = None,
    extra_metadata: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``HoodieClusteringGroup``; metrics are TOTAL_IO_READ_MB, TOTAL_IO_WRITE_MB, ... as doubles."""
    return {
        "slices": [dict(s) for s in slices],
        "metrics": {k: float(v) for k, v in (metrics or {}).items()},
        "numOutputFileGroups": num_output_file_groups,
        "extraMetadata": dict(extra_metadata) if extra_metadata is not None else None,
        "version": 1,
    }


def clustering_strategy(
    *,
    strategy_class_name: str = DEFAULT_CLUSTERING_EXECUTION_STRATEGY,
    strategy_params: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``HoodieClusteringStrategy`` (execution strategy class and its params, e.g. sort columns)."""
    return {
        "strategyClassName": strategy_class_name,
        "strategyParams": dict(strategy_params or {}),
        "version": 1,
    }


def clustering_plan(
    *,
    input_groups: Sequence[Mapping[str, Any]],
    strategy: Mapping[str, Any] | None = None,
    extra_metadata: Mapping[str, str] | None = None,
    preserve_hoodie_metadata: bool = True,
    version: int = CLUSTERING_PLAN_VERSION,
    missing_schedule_partitions: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``HoodieClusteringPlan`` as ``PartitionAwareClusteringPlanStrategy`` builds it; Hudi 1.x plans
    (``write_instant_avro_1x``) also list ``missing_schedule_partitions`` (None: a 0.x plan)."""
    plan: dict[str, Any] = {
        "inputGroups": [dict(g) for g in input_groups],
        "strategy": dict(strategy) if strategy is not None else clustering_strategy(),
        "extraMetadata": dict(extra_metadata or {}),
        "version": version,
        "preserveHoodieMetadata": preserve_hoodie_metadata,
    }
    if missing_schedule_partitions is not None:
        plan["missingSchedulePartitions"] = list(missing_schedule_partitions)
    return plan


def compaction_operation(
    *,
    base_instant_time: str,
    file_id: str,
    partition_path: str,
    data_file_path: str | None = None,
    delta_file_paths: Sequence[str] | None = None,
    metrics: Mapping[str, float] | None = None,
    bootstrap_file_path: str | None = None,
) -> dict[str, Any]:
    """``HoodieCompactionOperation``; plan version 2 stores file *names* (relative), null if absent."""
    return {
        "baseInstantTime": base_instant_time,
        "deltaFilePaths": _list(delta_file_paths),
        "dataFilePath": data_file_path,
        "fileId": file_id,
        "partitionPath": partition_path,
        "metrics": {k: float(v) for k, v in metrics.items()} if metrics is not None else None,
        "bootstrapFilePath": bootstrap_file_path,
    }


def compaction_strategy(
    *, compactor_class_name: str | None = None, strategy_params: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``HoodieCompactionStrategy`` (set by log compaction plans only)."""
    return {
        "compactorClassName": compactor_class_name,
        "strategyParams": dict(strategy_params) if strategy_params is not None else None,
        "version": 1,
    }


def compaction_plan(
    *,
    operations: Sequence[Mapping[str, Any]],
    extra_metadata: Mapping[str, str] | None = None,
    strategy: Mapping[str, Any] | None = None,
    preserve_hoodie_metadata: bool = False,
    version: int = COMPACTION_PLAN_VERSION,
    missing_schedule_partitions: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``HoodieCompactionPlan`` as ``CompactionStrategy.generateCompactionPlan`` builds it; Hudi 1.x plans
    (``write_instant_avro_1x``) also list ``missing_schedule_partitions`` (None: a 0.x plan)."""
    plan: dict[str, Any] = {
        "operations": [dict(o) for o in operations],
        "extraMetadata": dict(extra_metadata) if extra_metadata is not None else None,
        "version": version,
        "strategy": dict(strategy) if strategy is not None else None,
        "preserveHoodieMetadata": preserve_hoodie_metadata,
    }
    if missing_schedule_partitions is not None:
        plan["missingSchedulePartitions"] = list(missing_schedule_partitions)
    return plan


def action_instant(timestamp: str, action: str, state: str = "COMPLETED") -> dict[str, Any]:
    """``HoodieActionInstant`` (state is ``HoodieInstant.State`` name)."""
    return {"timestamp": timestamp, "action": action, "state": state}


def clean_file_info(file_path: str, is_bootstrap_base_file: bool = False) -> dict[str, Any]:
    """``HoodieCleanFileInfo`` (Hudi stores the file's full path)."""
    return {"filePath": file_path, "isBootstrapBaseFile": is_bootstrap_base_file}


def cleaner_plan(
    *,
    policy: str,
    file_paths_to_be_deleted_per_partition: Mapping[str, Sequence[Mapping[str, Any]]],
    earliest_instant_to_retain: Mapping[str, Any] | None = None,
    last_completed_commit_timestamp: str = "",
    partitions_to_be_deleted: Sequence[str] | None = None,
    version: int = CLEAN_PLAN_VERSION,
) -> dict[str, Any]:
    """``HoodieCleanerPlan`` as ``CleanPlanActionExecutor.requestClean`` builds it.

    ``policy`` is a ``HoodieCleaningPolicy`` name such as ``KEEP_LATEST_COMMITS``.  The
    deprecated ``filesToBeDeletedPerPartition`` is written as an empty map, like Hudi.
    """
    return {
        "earliestInstantToRetain": dict(earliest_instant_to_retain) if earliest_instant_to_retain else None,
        "lastCompletedCommitTimestamp": last_completed_commit_timestamp,
        "policy": policy,
        "filesToBeDeletedPerPartition": {},
        "version": version,
        "filePathsToBeDeletedPerPartition": {
            partition: [dict(info) for info in infos]
            for partition, infos in file_paths_to_be_deleted_per_partition.items()
        },
        "partitionsToBeDeleted": _list(partitions_to_be_deleted),
    }


def clean_partition_metadata(
    *,
    partition_path: str,
    policy: str,
    delete_path_patterns: Sequence[str],
    success_delete_files: Sequence[str],
    failed_delete_files: Sequence[str] | None = None,
    is_partition_deleted: bool = False,
) -> dict[str, Any]:
    """``HoodieCleanPartitionMetadata`` (Hudi stores file *names* in the three lists)."""
    return {
        "partitionPath": partition_path,
        "policy": policy,
        "deletePathPatterns": list(delete_path_patterns),
        "successDeleteFiles": list(success_delete_files),
        "failedDeleteFiles": _list(failed_delete_files),
        "isPartitionDeleted": is_partition_deleted,
    }


def clean_metadata(
    *,
    start_clean_time: str,
    earliest_commit_to_retain: str,
    partition_metadata: Mapping[str, Mapping[str, Any]],
    time_taken_in_millis: int = -1,
    last_completed_commit_timestamp: str = "",
    total_files_deleted: int | None = None,
    bootstrap_partition_metadata: Mapping[str, Mapping[str, Any]] | None = None,
    version: int = CLEAN_METADATA_VERSION,
) -> dict[str, Any]:
    """``HoodieCleanMetadata`` as ``CleanerUtils.convertCleanMetadata`` builds it.

    ``total_files_deleted`` defaults to the number of successfully deleted files.
    """
    partitions = {p: dict(m) for p, m in partition_metadata.items()}
    if total_files_deleted is None:
        total_files_deleted = sum(len(m["successDeleteFiles"]) for m in partitions.values())
    return {
        "startCleanTime": start_clean_time,
        "timeTakenInMillis": time_taken_in_millis,
        "totalFilesDeleted": total_files_deleted,
        "earliestCommitToRetain": earliest_commit_to_retain,
        "lastCompletedCommitTimestamp": last_completed_commit_timestamp,
        "partitionMetadata": partitions,
        "version": version,
        "bootstrapPartitionMetadata": {p: dict(m) for p, m in (bootstrap_partition_metadata or {}).items()},
    }


def instant_info(commit_time: str, action: str) -> dict[str, Any]:
    """``HoodieInstantInfo``."""
    return {"commitTime": commit_time, "action": action}


def rollback_request(
    *,
    partition_path: str,
    file_id: str = "",
    latest_base_instant: str = "",
    files_to_be_deleted: Sequence[str] | None = None,
    log_blocks_to_be_deleted: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """``HoodieRollbackRequest``.

    Marker-based rollback writes ``("", "", [file], {})`` for created/merged files and
    ``(fileId, baseInstant, [], {logPath: size})`` for appended logs.
    """
    return {
        "partitionPath": partition_path,
        "fileId": file_id,
        "latestBaseInstant": latest_base_instant,
        "filesToBeDeleted": _list(files_to_be_deleted),
        "logBlocksToBeDeleted": dict(log_blocks_to_be_deleted or {}),
    }


def rollback_plan(
    *,
    instant_to_rollback: Mapping[str, Any],
    rollback_requests: Sequence[Mapping[str, Any]],
    version: int = ROLLBACK_PLAN_VERSION,
) -> dict[str, Any]:
    """``HoodieRollbackPlan``; ``instant_to_rollback`` is an :func:`instant_info`."""
    return {
        "instantToRollback": dict(instant_to_rollback),
        "RollbackRequests": [dict(r) for r in rollback_requests],
        "version": version,
    }


def rollback_partition_metadata(
    *,
    partition_path: str,
    success_delete_files: Sequence[str] | None = None,
    failed_delete_files: Sequence[str] | None = None,
    rollback_log_files: Mapping[str, int] | None = None,
    log_files_from_failed_commit: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """``HoodieRollbackPartitionMetadata`` (maps are full log path -> size in bytes)."""
    return {
        "partitionPath": partition_path,
        "successDeleteFiles": _list(success_delete_files),
        "failedDeleteFiles": _list(failed_delete_files),
        "rollbackLogFiles": dict(rollback_log_files or {}),
        "logFilesFromFailedCommit": dict(log_files_from_failed_commit or {}),
    }


def rollback_metadata(
    *,
    start_rollback_time: str,
    instants_rollback: Sequence[Mapping[str, Any]],
    partition_metadata: Mapping[str, Mapping[str, Any]],
    time_taken_in_millis: int = -1,
    total_files_deleted: int | None = None,
    version: int = DEFAULT_METADATA_VERSION,
) -> dict[str, Any]:
    """``HoodieRollbackMetadata`` as ``TimelineMetadataUtils.convertRollbackMetadata`` builds it.

    ``instants_rollback`` are :func:`instant_info` dicts; ``commitsRollback`` is derived.
    """
    partitions = {p: dict(m) for p, m in partition_metadata.items()}
    if total_files_deleted is None:
        total_files_deleted = sum(len(m["successDeleteFiles"]) for m in partitions.values())
    instants = [dict(i) for i in instants_rollback]
    return {
        "startRollbackTime": start_rollback_time,
        "timeTakenInMillis": time_taken_in_millis,
        "totalFilesDeleted": total_files_deleted,
        "commitsRollback": [i["commitTime"] for i in instants],
        "partitionMetadata": partitions,
        "version": version,
        "instantsRollback": instants,
    }


def savepoint_metadata(
    *,
    savepointed_by: str,
    comments: str,
    latest_files: Mapping[str, Sequence[str]],
    savepointed_at: int | None = None,
    version: int = DEFAULT_METADATA_VERSION,
) -> dict[str, Any]:
    """``HoodieSavepointMetadata``; ``latest_files`` maps partition -> savepointed file names."""
    return {
        "savepointedBy": savepointed_by,
        "savepointedAt": int(time.time() * 1000) if savepointed_at is None else savepointed_at,
        "comments": comments,
        "partitionMetadata": {
            p: {"partitionPath": p, "savepointDataFile": list(files)} for p, files in latest_files.items()
        },
        "version": version,
    }


def restore_plan(
    *,
    instants_to_rollback: Sequence[Mapping[str, Any]],
    savepoint_to_restore_timestamp: str | None = None,
    version: int = RESTORE_PLAN_VERSION,
) -> dict[str, Any]:
    """``HoodieRestorePlan`` (instants are :func:`instant_info` dicts, newest first)."""
    return {
        "instantsToRollback": [dict(i) for i in instants_to_rollback],
        "version": version,
        "savepointToRestoreTimestamp": savepoint_to_restore_timestamp,
    }


def restore_metadata(
    *,
    start_restore_time: str,
    restore_instant_info: Sequence[Mapping[str, Any]],
    rollback_metadata_by_instant: Mapping[str, Sequence[Mapping[str, Any]]],
    time_taken_in_millis: int = -1,
    version: int = DEFAULT_METADATA_VERSION,
) -> dict[str, Any]:
    """``HoodieRestoreMetadata`` as ``TimelineMetadataUtils.convertRestoreMetadata`` builds it."""
    instants = [dict(i) for i in restore_instant_info]
    return {
        "startRestoreTime": start_restore_time,
        "timeTakenInMillis": time_taken_in_millis,
        "instantsToRollback": [i["commitTime"] for i in instants],
        "hoodieRestoreMetadata": {
            ts: [dict(m) for m in metas] for ts, metas in rollback_metadata_by_instant.items()
        },
        "version": version,
        "restoreInstantInfo": instants,
    }


# ---------------------------------------------------------------------------------------
# Archived timeline
# ---------------------------------------------------------------------------------------

_ARCHIVED_PAYLOAD_FIELDS = frozenset(
    f["name"]
    for f in SCHEMAS["HoodieArchivedMetaEntry"]["fields"]
    if f["name"] not in ("commitTime", "actionType", "version", "actionState", "stateTransitionTime")
)
_WRITE_STAT_FIELDS = tuple(f["name"] for f in SCHEMAS["HoodieWriteStat"]["fields"])


def archived_commit_metadata(commit_json: Mapping[str, Any], *, replace: bool = False) -> dict[str, Any]:
    """Avro ``HoodieCommitMetadata`` (or ``HoodieReplaceCommitMetadata``) from a commit's JSON.

    Mirrors ``MetadataConversionUtils.convertCommitMetadata``: a Jackson conversion into an
    object made by the no-arg constructor (so ``version`` stays null and JSON properties
    the Avro model lacks are dropped), ``operationType`` COMPACT for compaction commits and
    the ``ROLLING_STAT`` extra-metadata key blanked.
    """
    stats: dict[str, list[dict[str, Any]]] = {}
    for partition, partition_stats in (commit_json.get("partitionToWriteStats") or {}).items():
        if partition is None:
            continue
        stats[partition] = [{name: stat.get(name) for name in _WRITE_STAT_FIELDS} for stat in partition_stats]
    extra = {str(k): str(v) for k, v in (commit_json.get("extraMetadata") or {}).items()}
    extra[ROLLING_STAT_METADATA_KEY] = ""
    operation = commit_json.get("operationType")
    out: dict[str, Any] = {
        "partitionToWriteStats": stats,
        "extraMetadata": extra,
        "version": None,
        "operationType": operation,
    }
    if replace:
        out["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in (commit_json.get("partitionToReplaceFileIds") or {}).items()
        }
    elif commit_json.get("compacted"):
        out["operationType"] = "COMPACT"
    return out


def archived_meta_entry(
    *,
    commit_time: str,
    action_type: str,
    action_state: str = "COMPLETED",
    state_transition_time: str | None = None,
    **payload: Any,
) -> dict[str, Any]:
    """``HoodieArchivedMetaEntry`` as ``MetadataConversionUtils.createMetaWrapper`` fills it.

    ``payload`` names the one Avro field carrying the instant's content, e.g.
    ``hoodieCleanMetadata=...`` or ``hoodieCommitMetadata=archived_commit_metadata(...)``.
    ``version`` stays null: Hudi uses the no-arg constructor.
    """
    unknown = set(payload) - _ARCHIVED_PAYLOAD_FIELDS
    if unknown:
        raise AvroModelError(
            f"unknown HoodieArchivedMetaEntry payload field(s) {sorted(unknown)}; "
            f"use one of {sorted(_ARCHIVED_PAYLOAD_FIELDS)}"
        )
    entry: dict[str, Any] = {name: None for name in _ARCHIVED_PAYLOAD_FIELDS}
    entry.update(payload)
    entry.update(
        commitTime=commit_time,
        actionType=action_type,
        version=None,
        actionState=action_state,
        stateTransitionTime=state_transition_time,
    )
    return entry


# ---------------------------------------------------------------------------------------
# Delete records
# ---------------------------------------------------------------------------------------

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def ordering_value(value: Any, wrapper: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """Wrap an ordering (precombine) value for ``HoodieDeleteRecord.orderingVal``.

    Follows ``HoodieAvroUtils.wrapValueIntoAvro``: bool -> BooleanWrapper, int ->
    IntWrapper (LongWrapper outside int32; pass ``wrapper="LongWrapper"`` for a long
    column), float -> DoubleWrapper, str -> StringWrapper, bytes -> BytesWrapper, Decimal ->
    DecimalWrapper (scale 15), date -> DateWrapper (epoch days), datetime ->
    TimestampMicrosWrapper (epoch micros; naive means UTC), time -> TimeMicrosWrapper.
    """
    if value is None:
        return None
    if wrapper is None:
        if isinstance(value, bool):
            wrapper = "BooleanWrapper"
        elif isinstance(value, int):
            wrapper = "IntWrapper" if _INT32_MIN <= value <= _INT32_MAX else "LongWrapper"
        elif isinstance(value, float):
            wrapper = "DoubleWrapper"
        elif isinstance(value, str):
            wrapper = "StringWrapper"
        elif isinstance(value, bytes | bytearray | memoryview):
            wrapper = "BytesWrapper"
        elif isinstance(value, decimal.Decimal):
            wrapper = "DecimalWrapper"
        elif isinstance(value, _dt.datetime):
            wrapper = "TimestampMicrosWrapper"
        elif isinstance(value, _dt.date):
            wrapper = "DateWrapper"
        elif isinstance(value, _dt.time):
            wrapper = "TimeMicrosWrapper"
        else:
            raise AvroModelError(
                f"cannot wrap ordering value {value!r} of type {type(value).__name__}; "
                f"use bool, int, float, str, bytes, Decimal, date, datetime or time"
            )
    wrapper = simple_name(wrapper)
    if wrapper not in WRAPPER_NAMES:
        raise AvroModelError(
            f"unknown ordering value wrapper {wrapper!r}; use one of {', '.join(WRAPPER_NAMES)}"
        )
    if wrapper == "DateWrapper" and isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        value = (value - _EPOCH_DATE).days
    elif wrapper == "TimestampMicrosWrapper" and isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)
        delta = aware - _EPOCH_UTC
        value = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    elif wrapper == "BytesWrapper" and isinstance(value, bytearray | memoryview):
        value = bytes(value)
    return (f"{NAMESPACE}.{wrapper}", {"value": value})


def delete_record(
    record_key: str | None, partition_path: str | None, ordering_val: Any = None
) -> dict[str, Any]:
    """``HoodieDeleteRecord``; ``ordering_val`` is a raw value or an :func:`ordering_value` tuple."""
    if ordering_val is not None and not (
        isinstance(ordering_val, tuple) and len(ordering_val) == 2 and isinstance(ordering_val[0], str)
    ):
        ordering_val = ordering_value(ordering_val)
    return {"recordKey": record_key, "partitionPath": partition_path, "orderingVal": ordering_val}


def delete_record_list(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``HoodieDeleteRecordList`` (the datum of a version-3 delete block)."""
    return {"deleteRecordList": [dict(r) for r in records]}
