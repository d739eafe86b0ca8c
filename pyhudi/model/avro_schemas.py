"""Avro schemas of Hudi's timeline plans and service metadata (Hudi 0.14/0.15, table version 6; the fields
Hudi 1.x added for table versions 8 and 9 in `ADDED_IN_1X`).

These are the interchange format: Hudi's Java readers resolve what we write against the
classes generated from `hudi-common/src/main/avro/*.avsc`, so every record name, field
name, field order, type, default and doc string below follows those files as shipped in
the 0.14.x/0.15.x releases.  They are written here in ``.avsc`` style, with these rules:

* Every named type is registered once in :data:`SCHEMAS` under its simple name and is
  referred to by that name elsewhere; :mod:`pyhudi.model.avro_models` inlines each
  definition at its first use, as Java's ``Schema.toString()`` does.
* All types live in the namespace :data:`NAMESPACE`.
* ``doc`` attributes of map/array/primitive types in the ``.avsc`` files are dropped by
  Avro's parser (they are reserved words there), so they are not repeated here; ``doc``
  of records and fields is kept because Java prints it.
* Non-reserved attributes of map/array types (``"default"``) are kept: Java keeps them as
  schema properties and prints them.
* ``avro.java.string`` properties are *not* written here; the Java-style printer adds them
  the way Hudi's build (avro-maven-plugin, ``stringType=String``) does.
"""

from __future__ import annotations

from typing import Any

from pyhudi.errors import HudiError

NAMESPACE = "org.apache.hudi.avro.model"

# Sentinel: a field without a default (Avro: the key is absent).
_REQUIRED: Any = object()


def _field(name: str, type_: Any, default: Any = _REQUIRED, doc: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": type_}
    if doc is not None:
        out["doc"] = doc
    if default is not _REQUIRED:
        out["default"] = default
    return out


def _opt(type_: Any) -> list[Any]:
    """``["null", type]``: the usual optional field shape."""
    return ["null", type_]


def _record(name: str, fields: list[dict[str, Any]], doc: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "record", "name": name}
    if doc is not None:
        out["doc"] = doc
    out["fields"] = fields
    return out


_STRING_ARRAY: dict[str, Any] = {"type": "array", "items": "string"}
_STRING_MAP: dict[str, Any] = {"type": "map", "values": "string"}
_VERSION_1 = _field("version", ["int", "null"], 1)

# ---------------------------------------------------------------------------------------
# Ordering-value wrappers (defined in HoodieMetadata.avsc, used by HoodieDeleteRecord).
# DateWrapper and TimestampMicrosWrapper deliberately carry no logical type in Hudi
# (commented out there because of Avro 1.8/1.10 code-gen differences).
# ---------------------------------------------------------------------------------------


def _wrapper(name: str, what: str, value_type: Any) -> dict[str, Any]:
    return _record(
        name,
        [_field("value", value_type)],
        doc=f"A record wrapping {what} to be able to be used it w/in Avro's Union",
    )


WRAPPER_NAMES: tuple[str, ...] = (
    "BooleanWrapper",
    "IntWrapper",
    "LongWrapper",
    "FloatWrapper",
    "DoubleWrapper",
    "BytesWrapper",
    "StringWrapper",
    "DateWrapper",
    "DecimalWrapper",
    "TimeMicrosWrapper",
    "TimestampMicrosWrapper",
)

_WRAPPERS: dict[str, dict[str, Any]] = {
    "BooleanWrapper": _wrapper("BooleanWrapper", "boolean type", "boolean"),
    "IntWrapper": _wrapper("IntWrapper", "int type", "int"),
    "LongWrapper": _wrapper("LongWrapper", "long type", "long"),
    "FloatWrapper": _wrapper("FloatWrapper", "float type", "float"),
    "DoubleWrapper": _wrapper("DoubleWrapper", "double type", "double"),
    "BytesWrapper": _wrapper("BytesWrapper", "bytes type", "bytes"),
    "StringWrapper": _wrapper("StringWrapper", "string type", "string"),
    "DateWrapper": _wrapper("DateWrapper", "Date logical type", "int"),
    "DecimalWrapper": _wrapper(
        "DecimalWrapper",
        "Decimal logical type",
        {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
    ),
    "TimeMicrosWrapper": _wrapper(
        "TimeMicrosWrapper", "Time-micros logical type", {"type": "long", "logicalType": "time-micros"}
    ),
    "TimestampMicrosWrapper": _wrapper("TimestampMicrosWrapper", "Timestamp-micros logical type", "long"),
}

# ---------------------------------------------------------------------------------------
# HoodieDeleteRecordList.avsc (delete log blocks, content version 3)
# ---------------------------------------------------------------------------------------

_DELETE: dict[str, dict[str, Any]] = {
    "HoodieDeleteRecordList": _record(
        "HoodieDeleteRecordList",
        [
            _field(
                "deleteRecordList",
                {"type": "array", "items": "HoodieDeleteRecord"},
                doc="A list of Hudi records to delete",
            )
        ],
        doc="A list of delete records stored in the delete block in log block version 3",
    ),
    "HoodieDeleteRecord": _record(
        "HoodieDeleteRecord",
        [
            _field("recordKey", _opt("string"), None, doc="Record key in String"),
            _field("partitionPath", _opt("string"), None, doc="Partition path in String"),
            _field(
                "orderingVal",
                ["null", *WRAPPER_NAMES],
                None,
                doc="Ordering value determining the order of merging on the same key",
            ),
        ],
        doc="Individual Hudi record to delete",
    ),
}

# ---------------------------------------------------------------------------------------
# Clustering / replacecommit.requested: HoodieRequestedReplaceMetadata.avsc,
# HoodieClusteringPlan.avsc, HoodieClusteringGroup.avsc, HoodieSliceInfo.avsc,
# HoodieClusteringStrategy.avsc.  Checked byte-for-byte against the schema embedded in
# the sample `.replacecommit.requested` files.
# ---------------------------------------------------------------------------------------

_CLUSTERING: dict[str, dict[str, Any]] = {
    "HoodieRequestedReplaceMetadata": _record(
        "HoodieRequestedReplaceMetadata",
        [
            _field("operationType", _opt("string"), None),
            _field("clusteringPlan", _opt("HoodieClusteringPlan"), None),
            _field("extraMetadata", _opt(_STRING_MAP), None),
            _VERSION_1,
        ],
    ),
    "HoodieClusteringPlan": _record(
        "HoodieClusteringPlan",
        [
            _field("inputGroups", _opt({"type": "array", "items": "HoodieClusteringGroup"}), None),
            _field("strategy", _opt("HoodieClusteringStrategy"), None),
            _field("extraMetadata", _opt(_STRING_MAP), None),
            _VERSION_1,
            _field("preserveHoodieMetadata", ["null", "boolean"], None),
        ],
    ),
    "HoodieClusteringGroup": _record(
        "HoodieClusteringGroup",
        [
            _field("slices", _opt({"type": "array", "items": "HoodieSliceInfo"}), None),
            _field("metrics", _opt({"type": "map", "values": "double"}), None),
            _field("numOutputFileGroups", ["int", "null"], 1),
            _field("extraMetadata", _opt(_STRING_MAP), None),
            _VERSION_1,
        ],
    ),
    "HoodieSliceInfo": _record(
        "HoodieSliceInfo",
        [
            _field("dataFilePath", _opt("string"), None),
            _field("deltaFilePaths", _opt(_STRING_ARRAY), None),
            _field("fileId", _opt("string")),  # no default in Hudi's schema
            _field("partitionPath", _opt("string"), None),
            _field("bootstrapFilePath", _opt("string"), None),
            _VERSION_1,
        ],
    ),
    "HoodieClusteringStrategy": _record(
        "HoodieClusteringStrategy",
        [
            _field("strategyClassName", _opt("string"), None),
            _field("strategyParams", _opt(_STRING_MAP), None),
            _VERSION_1,
        ],
    ),
}

# ---------------------------------------------------------------------------------------
# Compaction: HoodieCompactionOperation.avsc (defines HoodieCompactionPlan) and
# HoodieCompactionStrategy.avsc.
# ---------------------------------------------------------------------------------------

_COMPACTION: dict[str, dict[str, Any]] = {
    "HoodieCompactionPlan": _record(
        "HoodieCompactionPlan",
        [
            _field("operations", _opt({"type": "array", "items": "HoodieCompactionOperation"}), None),
            _field("extraMetadata", _opt(_STRING_MAP), None),
            _VERSION_1,
            _field("strategy", _opt("HoodieCompactionStrategy"), None),
            _field("preserveHoodieMetadata", ["boolean", "null"], False),
        ],
    ),
    "HoodieCompactionOperation": _record(
        "HoodieCompactionOperation",
        [
            _field("baseInstantTime", _opt("string")),  # no default in Hudi's schema
            _field("deltaFilePaths", _opt(_STRING_ARRAY), None),
            _field("dataFilePath", _opt("string"), None),
            _field("fileId", _opt("string")),  # no default in Hudi's schema
            _field("partitionPath", _opt("string"), None),
            _field("metrics", _opt({"type": "map", "values": "double"}), None),
            _field("bootstrapFilePath", _opt("string"), None),
        ],
    ),
    "HoodieCompactionStrategy": _record(
        "HoodieCompactionStrategy",
        [
            _field(
                "compactorClassName",
                _opt("string"),
                None,
                doc=(
                    "The class name that is provided here should extend CompactionExecutionStrategy "
                    "abstract class, idea is that the plan generator will also provide the execution "
                    "strategy to use."
                ),
            ),
            _field(
                "strategyParams",
                _opt(_STRING_MAP),
                None,
                doc=(
                    "These parameters play a key role in determining which action type it is i.e. "
                    "compaction or logcompaction and it will also include configs that determine how "
                    "compaction needs to be executed."
                ),
            ),
            _VERSION_1,
        ],
    ),
}

# ---------------------------------------------------------------------------------------
# Cleaning: HoodieCleanerPlan.avsc, HoodieCleanMetadata.avsc,
# HoodieCleanPartitionMetadata.avsc.
# ---------------------------------------------------------------------------------------

_CLEAN: dict[str, dict[str, Any]] = {
    "HoodieCleanerPlan": _record(
        "HoodieCleanerPlan",
        [
            _field("earliestInstantToRetain", _opt("HoodieActionInstant"), None),
            _field("lastCompletedCommitTimestamp", "string", ""),
            _field("policy", "string"),
            # Deprecated, replaced by filePathsToBeDeletedPerPartition.
            _field(
                "filesToBeDeletedPerPartition",
                _opt({"type": "map", "values": _STRING_ARRAY}),
                None,
            ),
            _VERSION_1,
            _field(
                "filePathsToBeDeletedPerPartition",
                _opt({"type": "map", "values": {"type": "array", "items": "HoodieCleanFileInfo"}}),
                None,
                doc="This field replaces the field filesToBeDeletedPerPartition",
            ),
            _field("partitionsToBeDeleted", _opt(_STRING_ARRAY), None, doc="partitions to be deleted"),
        ],
    ),
    "HoodieActionInstant": _record(
        "HoodieActionInstant",
        [_field("timestamp", "string"), _field("action", "string"), _field("state", "string")],
    ),
    "HoodieCleanFileInfo": _record(
        "HoodieCleanFileInfo",
        [
            _field("filePath", _opt("string"), None),
            _field("isBootstrapBaseFile", _opt("boolean"), None),
        ],
    ),
    "HoodieCleanMetadata": _record(
        "HoodieCleanMetadata",
        [
            _field("startCleanTime", "string"),
            _field("timeTakenInMillis", "long"),
            _field("totalFilesDeleted", "int"),
            _field("earliestCommitToRetain", "string"),
            _field("lastCompletedCommitTimestamp", "string", ""),
            _field("partitionMetadata", {"type": "map", "values": "HoodieCleanPartitionMetadata"}),
            _VERSION_1,
            _field(
                "bootstrapPartitionMetadata",
                _opt({"type": "map", "values": "HoodieCleanPartitionMetadata", "default": None}),
                None,
            ),
        ],
    ),
    "HoodieCleanPartitionMetadata": _record(
        "HoodieCleanPartitionMetadata",
        [
            _field("partitionPath", "string"),
            _field("policy", "string"),
            _field("deletePathPatterns", _STRING_ARRAY),
            _field("successDeleteFiles", _STRING_ARRAY),
            _field("failedDeleteFiles", _STRING_ARRAY),
            _field("isPartitionDeleted", _opt("boolean"), None),
        ],
    ),
}

# ---------------------------------------------------------------------------------------
# Rollback / savepoint / restore: HoodieRollbackPlan.avsc, HoodieInstantInfo.avsc,
# HoodieRollbackMetadata.avsc, HoodieSavePointMetadata.avsc, HoodieRestorePlan.avsc,
# HoodieRestoreMetadata.avsc.
# ---------------------------------------------------------------------------------------

_ROLLBACK: dict[str, dict[str, Any]] = {
    "HoodieInstantInfo": _record(
        "HoodieInstantInfo",
        [_field("commitTime", "string"), _field("action", "string")],
    ),
    "HoodieRollbackPlan": _record(
        "HoodieRollbackPlan",
        [
            _field(
                "instantToRollback",
                _opt("HoodieInstantInfo"),
                None,
                doc="Hoodie instant that needs to be rolled back",
            ),
            _field("RollbackRequests", _opt({"type": "array", "items": "HoodieRollbackRequest"}), None),
            _VERSION_1,
        ],
    ),
    "HoodieRollbackRequest": _record(
        "HoodieRollbackRequest",
        [
            _field("partitionPath", "string"),
            _field("fileId", _opt("string"), None),
            _field("latestBaseInstant", _opt("string"), None),
            _field("filesToBeDeleted", {"type": "array", "items": "string", "default": []}, []),
            _field("logBlocksToBeDeleted", _opt({"type": "map", "values": "long"}), None),
        ],
    ),
    "HoodieRollbackMetadata": _record(
        "HoodieRollbackMetadata",
        [
            _field("startRollbackTime", "string"),
            _field("timeTakenInMillis", "long"),
            _field("totalFilesDeleted", "int"),
            _field("commitsRollback", _STRING_ARRAY),
            _field("partitionMetadata", {"type": "map", "values": "HoodieRollbackPartitionMetadata"}),
            _VERSION_1,
            # Overlaps commitsRollback; tracks the action type of each rolled-back instant.
            _field(
                "instantsRollback",
                {"type": "array", "items": "HoodieInstantInfo", "default": []},
                [],
            ),
        ],
    ),
    "HoodieRollbackPartitionMetadata": _record(
        "HoodieRollbackPartitionMetadata",
        [
            _field("partitionPath", "string"),
            _field("successDeleteFiles", _STRING_ARRAY),
            _field("failedDeleteFiles", _STRING_ARRAY),
            _field("rollbackLogFiles", _opt({"type": "map", "values": "long"}), None),
            _field("logFilesFromFailedCommit", _opt({"type": "map", "values": "long"}), None),
        ],
    ),
    "HoodieSavepointMetadata": _record(
        "HoodieSavepointMetadata",
        [
            _field("savepointedBy", "string"),
            _field("savepointedAt", "long"),
            _field("comments", "string"),
            _field("partitionMetadata", {"type": "map", "values": "HoodieSavepointPartitionMetadata"}),
            _VERSION_1,
        ],
    ),
    "HoodieSavepointPartitionMetadata": _record(
        "HoodieSavepointPartitionMetadata",
        [_field("partitionPath", "string"), _field("savepointDataFile", _STRING_ARRAY)],
    ),
    "HoodieRestorePlan": _record(
        "HoodieRestorePlan",
        [
            _field(
                "instantsToRollback",
                {"type": "array", "items": "HoodieInstantInfo", "default": None},
                [],
            ),
            _field("version", ["int", "null"], 2),
            # Hudi declares this union with "string" first yet a null default.
            _field("savepointToRestoreTimestamp", ["string", "null"], None),
        ],
    ),
    "HoodieRestoreMetadata": _record(
        "HoodieRestoreMetadata",
        [
            _field("startRestoreTime", "string"),
            _field("timeTakenInMillis", "long"),
            _field("instantsToRollback", _STRING_ARRAY),
            _field(
                "hoodieRestoreMetadata",
                {
                    "type": "map",
                    "values": {
                        "type": "array",
                        "items": ["null", "HoodieRollbackMetadata"],
                        "default": None,
                    },
                },
            ),
            _VERSION_1,
            # Overlaps instantsToRollback; tracks the action type of each instant.
            _field(
                "restoreInstantInfo",
                {"type": "array", "items": "HoodieInstantInfo", "default": None},
                [],
            ),
        ],
    ),
}

# ---------------------------------------------------------------------------------------
# Archived timeline: HoodieArchivedMetaEntry.avsc and the Avro forms of the JSON commit
# metadata (HoodieCommitMetadata.avsc, HoodieReplaceCommitMetadata.avsc), the deprecated
# HoodieCompactionMetadata.avsc and the indexing metadata (HoodieIndexCommitMetadata.avsc,
# HoodieIndexPartitionInfo.avsc).
# ---------------------------------------------------------------------------------------

_WRITE_STAT_LONGS = (
    "numWrites",
    "numDeletes",
    "numUpdateWrites",
    "totalWriteBytes",
    "totalWriteErrors",
)
_WRITE_STAT_LOG_LONGS = (
    "totalLogRecords",
    "totalLogFiles",
    "totalUpdatedRecordsCompacted",
    "numInserts",
    "totalLogBlocks",
    "totalCorruptLogBlock",
    "totalRollbackBlocks",
    "fileSizeInBytes",
)

_ARCHIVE: dict[str, dict[str, Any]] = {
    "HoodieCommitMetadata": _record(
        "HoodieCommitMetadata",
        [
            _field(
                "partitionToWriteStats",
                _opt({"type": "map", "values": {"type": "array", "items": "HoodieWriteStat"}}),
                None,
            ),
            _field("extraMetadata", _opt({"type": "map", "values": "string", "default": None}), None),
            _VERSION_1,
            _field("operationType", _opt("string"), None),
        ],
    ),
    "HoodieWriteStat": _record(
        "HoodieWriteStat",
        [
            _field("fileId", _opt("string"), None),
            _field("path", _opt("string"), None),
            _field("prevCommit", _opt("string"), None),
            *(_field(name, _opt("long"), None) for name in _WRITE_STAT_LONGS),
            _field("partitionPath", _opt("string"), None),
            *(_field(name, _opt("long"), None) for name in _WRITE_STAT_LOG_LONGS),
        ],
    ),
    "HoodieReplaceCommitMetadata": _record(
        "HoodieReplaceCommitMetadata",
        [
            _field(
                "partitionToWriteStats",
                _opt({"type": "map", "values": {"type": "array", "items": "HoodieWriteStat"}}),
                None,
            ),
            _field("extraMetadata", _opt(_STRING_MAP), None),
            _VERSION_1,
            _field("operationType", _opt("string"), None),
            _field("partitionToReplaceFileIds", _opt({"type": "map", "values": _STRING_ARRAY}), None),
        ],
    ),
    "HoodieCompactionMetadata": _record(
        "HoodieCompactionMetadata",
        [
            _field(
                "partitionToCompactionWriteStats",
                _opt({"type": "map", "values": {"type": "array", "items": "HoodieCompactionWriteStat"}}),
            ),
        ],
    ),
    "HoodieCompactionWriteStat": _record(
        "HoodieCompactionWriteStat",
        [
            _field("partitionPath", _opt("string")),
            _field("totalLogRecords", _opt("long")),
            _field("totalLogFiles", _opt("long")),
            _field("totalUpdatedRecordsCompacted", _opt("long")),
            _field("hoodieWriteStat", _opt("HoodieWriteStat")),
        ],
    ),
    "HoodieIndexCommitMetadata": _record(
        "HoodieIndexCommitMetadata",
        [
            # The two copied doc strings are Hudi's own.
            _field(
                "version",
                ["int", "null"],
                1,
                doc="This field replaces the field filesToBeDeletedPerPartition",
            ),
            _field(
                "operationType",
                _opt("string"),
                None,
                doc="This field replaces the field filesToBeDeletedPerPartition",
            ),
            _field(
                "indexPartitionInfos",
                _opt({"type": "array", "items": "HoodieIndexPartitionInfo"}),
                None,
                doc="This field contains the info for each partition that got indexed",
            ),
        ],
    ),
    "HoodieIndexPartitionInfo": _record(
        "HoodieIndexPartitionInfo",
        [
            _VERSION_1,
            _field("metadataPartitionPath", _opt("string"), None),
            _field("indexUptoInstant", _opt("string"), None),
        ],
    ),
    "HoodieArchivedMetaEntry": _record(
        "HoodieArchivedMetaEntry",
        [
            _field("hoodieCommitMetadata", _opt("HoodieCommitMetadata"), None),
            _field("hoodieCleanMetadata", _opt("HoodieCleanMetadata"), None),
            _field("hoodieCompactionMetadata", _opt("HoodieCompactionMetadata"), None),  # deprecated
            _field("hoodieRollbackMetadata", _opt("HoodieRollbackMetadata"), None),
            _field("hoodieSavePointMetadata", _opt("HoodieSavepointMetadata"), None),
            _field("commitTime", _opt("string"), None),
            _field("actionType", _opt("string"), None),
            _VERSION_1,
            _field("hoodieCompactionPlan", _opt("HoodieCompactionPlan"), None),
            _field("hoodieCleanerPlan", _opt("HoodieCleanerPlan"), None),
            _field("actionState", _opt("string"), None),
            _field("hoodieReplaceCommitMetadata", _opt("HoodieReplaceCommitMetadata"), None),
            _field("hoodieRequestedReplaceMetadata", _opt("HoodieRequestedReplaceMetadata"), None),
            _field("HoodieInflightReplaceMetadata", _opt("HoodieCommitMetadata"), None),
            _field("hoodieIndexCommitMetadata", _opt("HoodieIndexCommitMetadata"), None),
            _field("stateTransitionTime", _opt("string"), None),
        ],
    ),
}

#: Every named type, by simple name.  Values are ``.avsc``-style dicts whose nested named
#: types are given by simple name.
SCHEMAS: dict[str, dict[str, Any]] = {
    **_WRAPPERS,
    **_DELETE,
    **_CLUSTERING,
    **_COMPACTION,
    **_CLEAN,
    **_ROLLBACK,
    **_ARCHIVE,
}

#: The record types that Hudi writes as top-level timeline files, archive records or
#: log-block datums (the others only occur nested in these).
TOP_LEVEL_SCHEMAS: tuple[str, ...] = (
    "HoodieRequestedReplaceMetadata",
    "HoodieCompactionPlan",
    "HoodieCleanerPlan",
    "HoodieCleanMetadata",
    "HoodieRollbackPlan",
    "HoodieRollbackMetadata",
    "HoodieSavepointMetadata",
    "HoodieRestorePlan",
    "HoodieRestoreMetadata",
    "HoodieCommitMetadata",
    "HoodieReplaceCommitMetadata",
    "HoodieIndexCommitMetadata",
    "HoodieArchivedMetaEntry",
    "HoodieDeleteRecordList",
)


# ---------------------------------------------------------------------------------------
# Hudi 1.x (table versions 8 and 9, timeline layout 2).  RFC-83 (incremental table services)
# appended one field to HoodieClusteringPlan.avsc and to HoodieCompactionPlan (defined in
# HoodieCompactionOperation.avsc): the partitions a plan left out on purpose (filtered, cut by
# the IO budget or max groups), which the next plan of that service looks at again
# (BaseTableServicePlanActionExecutor#fetchMissingPartitions).  Every other record is unchanged.
# Hudi 1.0 and 1.1 embed these in the plans of tables of either version (checked byte for byte
# against the samples' `.compaction.requested` and `.clustering.requested`), so a plan of a
# layout-2 table is written with them; a version-6 table keeps the 0.14/0.15 schemas above.
# ---------------------------------------------------------------------------------------

#: Fields Hudi 1.x appended, by record name (added after the record's 0.x fields, in this order).
ADDED_IN_1X: dict[str, list[dict[str, Any]]] = {
    "HoodieClusteringPlan": [_field("missingSchedulePartitions", _opt(_STRING_ARRAY), None)],
    "HoodieCompactionPlan": [_field("missingSchedulePartitions", _opt(_STRING_ARRAY), None)],
}

#: The top-level records whose 1.x schema differs from 0.x (they are, or hold, an extended record).
CHANGED_IN_1X: tuple[str, ...] = ("HoodieRequestedReplaceMetadata", "HoodieCompactionPlan")


class AvroModelError(HudiError, ValueError):
    """A record does not fit its Hudi Avro schema (a programming error in the caller)."""


class UnknownAvroSchemaError(AvroModelError):
    """The schema name is not one of Hudi's timeline Avro models known to pyhudi."""


def simple_name(name: str) -> str:
    prefix = NAMESPACE + "."
    return name[len(prefix) :] if name.startswith(prefix) else name
