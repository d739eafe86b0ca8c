"""Every option key pyhudi understands, grouped as Hudi groups them.

Keys, aliases and defaults follow Apache Hudi 0.14/0.15 so that an existing
Hudi Spark pipeline's options carry over unchanged. Where pyhudi deliberately
differs from Hudi's default, the doc line says so.
"""

from __future__ import annotations

from pyhudi.config.registry import Group, declare, non_negative, positive
from pyhudi.errors import InvalidConfigError

MB = 1024 * 1024
GB = 1024 * MB

# --------------------------------------------------------------------------- table
TABLE_NAME = declare("hoodie.table.name", "str", None, "Table name; required to create a table.", Group.TABLE,
                     aliases=("hoodie.datasource.write.table.name",))
DATABASE_NAME = declare("hoodie.database.name", "str", None,
                        "Database name; part of hoodie.table.checksum. Unset: stored empty, as Hudi's datasource "
                        "writer does; on an existing table it must match the stored name.", Group.TABLE)
TABLE_TYPE = declare("hoodie.datasource.write.table.type", "enum", "COPY_ON_WRITE",
                     "COPY_ON_WRITE or MERGE_ON_READ.", Group.TABLE, aliases=("hoodie.table.type",),
                     choices=("COPY_ON_WRITE", "MERGE_ON_READ"),
                     choice_aliases={"COW": "COPY_ON_WRITE", "MOR": "MERGE_ON_READ"})
RECORDKEY_FIELDS = declare("hoodie.datasource.write.recordkey.field", "list", (),
                           "Record key field(s), comma-separated.", Group.TABLE,
                           aliases=("hoodie.table.recordkey.fields",))
PARTITIONPATH_FIELDS = declare("hoodie.datasource.write.partitionpath.field", "list", (),
                               "Partition field(s); empty for a non-partitioned table.", Group.TABLE,
                               aliases=("hoodie.table.partition.fields",))
PRECOMBINE_FIELD = declare("hoodie.datasource.write.precombine.field", "str", None,
                           "Ordering field: among records with the same key, the greatest wins.", Group.TABLE,
                           aliases=("hoodie.table.precombine.field",))
HIVE_STYLE_PARTITIONING = declare("hoodie.datasource.write.hive_style_partitioning", "bool", False,
                                  "Partition directories named field=value.", Group.TABLE)
PARTITIONPATH_URLENCODE = declare("hoodie.datasource.write.partitionpath.urlencode", "bool", False,
                                  "URL-encode partition values in directory names.", Group.TABLE)
KEYGENERATOR_CLASS = declare(
    "hoodie.datasource.write.keygenerator.class", "enum", None,
    "Key generator: SimpleKeyGenerator, ComplexKeyGenerator, NonpartitionedKeyGenerator, "
    "TimestampBasedKeyGenerator or CustomKeyGenerator (or their Avro variants) "
    "(inferred from the key and partition fields when unset).",
    Group.TABLE, aliases=("hoodie.table.keygenerator.class",),
    choices=("org.apache.hudi.keygen.SimpleKeyGenerator", "org.apache.hudi.keygen.ComplexKeyGenerator",
             "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
             "org.apache.hudi.keygen.TimestampBasedKeyGenerator", "org.apache.hudi.keygen.CustomKeyGenerator",
             "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator", "org.apache.hudi.keygen.CustomAvroKeyGenerator"),
    choice_aliases={
        "SIMPLEKEYGENERATOR": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "COMPLEXKEYGENERATOR": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "NONPARTITIONEDKEYGENERATOR": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "CUSTOM": "org.apache.hudi.keygen.CustomKeyGenerator",
    },
)
KEYGENERATOR_TYPE = declare("hoodie.datasource.write.keygenerator.type", "enum", None,
                            "Short form of the key generator: SIMPLE, COMPLEX, NON_PARTITION, TIMESTAMP or CUSTOM.",
                            Group.TABLE, choices=("SIMPLE", "COMPLEX", "NON_PARTITION", "TIMESTAMP", "CUSTOM"))
POPULATE_META_FIELDS = declare("hoodie.populate.meta.fields", "bool", True,
                               "Fill the five _hoodie_* columns (needed by the SIMPLE/BLOOM index).", Group.TABLE)
BASE_FILE_FORMAT = declare("hoodie.table.base.file.format", "enum", "PARQUET",
                           "Base file format; only PARQUET is supported.", Group.TABLE, choices=("PARQUET",))
TIMELINE_TIMEZONE = declare("hoodie.table.timeline.timezone", "enum", "UTC",
                            "Zone of instant times. pyhudi writes UTC explicitly (Hudi's default is LOCAL).",
                            Group.TABLE, choices=("UTC", "LOCAL"))
DROP_PARTITION_COLUMNS = declare("hoodie.datasource.write.drop.partition.columns", "bool", False,
                                 "Drop partition columns from data files; true is not supported.", Group.TABLE)
WRITTEN_TABLE_VERSIONS = (6, 8, 9)


def _written_table_version(key: str, value: int) -> None:
    if value not in WRITTEN_TABLE_VERSIONS:
        raise InvalidConfigError(
            f"{key}={value} is not a table version pyhudi writes; use 6 (Hudi 0.14/0.15, the default), 8 (Hudi "
            "1.0) or 9 (Hudi 1.1), as Hudi 1.x's valid values")


TABLE_VERSION = declare(
    "hoodie.write.table.version", "int", 6,
    "Table version to write: 6 (Hudi 0.14/0.15; pyhudi's default, where Hudi 1.x defaults to its own), 8 "
    "(Hudi 1.0) or 9 (Hudi 1.1). A new table is created at it; an existing table is written at its own version "
    "when the option is absent, upgraded when it asks for a later one (6 -> 8, 6 -> 9, 8 -> 9, as Hudi 1.x's "
    "upgrade), and refused when it asks for an earlier one (Hudi's 'Table version and Writer version do not "
    "match').", Group.TABLE, validator=_written_table_version)
AUTO_UPGRADE = declare("hoodie.write.auto.upgrade", "bool", True,
                       "Upgrade a table of version 4 or 5 to 6 on the first write (Hudi 1.x key); false refuses "
                       "to write such a table instead. With hoodie.write.table.version above the table's (6 or "
                       "8), false writes the table at its own version instead of upgrading it, as Hudi 1.x does.",
                       Group.TABLE)
RECORD_MERGE_MODE = declare(
    "hoodie.write.record.merge.mode", "enum", None,
    "Hudi 1.x merge mode of a table created at version 8 or 9: COMMIT_TIME_ORDERING (the last write wins) or "
    "EVENT_TIME_ORDERING (the greatest ordering value wins); unset: EVENT_TIME_ORDERING with ordering fields, "
    "else COMMIT_TIME_ORDERING, as Hudi infers it. CUSTOM is refused (pyhudi merges by the two orderings only). "
    "On an existing table it must match the table's hoodie.record.merge.mode; version-6 tables ignore it.",
    Group.TABLE, aliases=("hoodie.record.merge.mode",),
    choices=("COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING", "CUSTOM"))
ORDERING_FIELDS = declare(
    "hoodie.table.ordering.fields", "list", (),
    "Hudi 1.1's name of the ordering (precombine) fields, a comma list, for tables created at version 8 or 9 "
    "(hoodie.datasource.write.precombine.field is the older name and also accepted there; version-6 tables "
    "ignore this key). The write path compares one field: several are refused on writes.", Group.TABLE)
SKIP_DEFAULT_PARTITION_VALIDATION = declare(
    "hoodie.skip.default.partition.validation", "bool", False,
    "Upgrading a version-4 table: do not refuse a partition named `default` (Hudi 0.12+ writes "
    "__HIVE_DEFAULT_PARTITION__).", Group.TABLE)
ARCHIVELOG_FOLDER = declare("hoodie.archivelog.folder", "str", "archived",
                            "Archived timeline folder under .hoodie/.", Group.TABLE)
METADATA_ENABLE = declare("hoodie.metadata.enable", "bool", False,
                          "Metadata table. pyhudi does not build it (Hudi's Spark default is true); true is "
                          "accepted with a warning and ignored.", Group.TABLE)
DROP_UNREBUILDABLE_INDEXES = declare(
    "hoodie.write.drop.unrebuildable.metadata.indexes", "bool", False,
    "pyhudi only. A write to a table of version 8 or 9 removes its metadata table (as Hudi does with "
    "hoodie.metadata.enable=false). When that metadata table holds an index pyhudi cannot rebuild "
    "(record_index, secondary_index_*, expr_index_*, or any partition other than files, column_stats and "
    "partition_stats), the write is refused unless this is true: the index is then deleted with the metadata "
    "table, and Hudi has to rebuild it (a write with the metadata table and that index enabled).", Group.TABLE)

# Timestamp-based key generator (Hudi's TimestampKeyGeneratorConfig; the old hoodie.deltastreamer.keygen.*
# names are aliases). A TimestampBasedKeyGenerator table keeps them in hoodie.properties (as Hudi's writer
# does, PERSISTED_CONFIG_LIST) and later writes default to them; a CustomKeyGenerator's are not stored.
_TB = "hoodie.keygen.timebased."
_TB_OLD = "hoodie.deltastreamer.keygen.timebased."
TIMEBASED_TIMESTAMP_TYPE = declare(
    _TB + "timestamp.type", "str", None, "TimestampBasedKeyGenerator: UNIX_TIMESTAMP, DATE_STRING, MIXED, "
    "EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR.", Group.TABLE, aliases=(_TB_OLD + "timestamp.type",))
TIMEBASED_SCALAR_UNIT = declare(
    _TB + "timestamp.scalar.time.unit", "str", None, "Unit of SCALAR values (a java TimeUnit name; default "
    "SECONDS).", Group.TABLE, aliases=(_TB_OLD + "timestamp.scalar.time.unit",))
TIMEBASED_INPUT_DATEFORMAT = declare(
    _TB + "input.dateformat", "str", None, "Joda pattern(s) of DATE_STRING/MIXED input, split by the list "
    "delimiter.", Group.TABLE, aliases=(_TB_OLD + "input.dateformat",))
TIMEBASED_INPUT_DATEFORMAT_DELIMITER = declare(
    _TB + "input.dateformat.list.delimiter.regex", "str", None, "Regex separating input date formats "
    "(default ,).", Group.TABLE, aliases=(_TB_OLD + "input.dateformat.list.delimiter.regex",))
TIMEBASED_INPUT_TIMEZONE = declare(
    _TB + "input.timezone", "str", None, "Zone of input strings without an offset (unset: the offset in the "
    "text, else the JVM default zone).", Group.TABLE, aliases=(_TB_OLD + "input.timezone",))
TIMEBASED_OUTPUT_DATEFORMAT = declare(
    _TB + "output.dateformat", "str", None, "Joda pattern of the partition path, e.g. yyyy/MM/dd.", Group.TABLE,
    aliases=(_TB_OLD + "output.dateformat",))
TIMEBASED_OUTPUT_TIMEZONE = declare(
    _TB + "output.timezone", "str", None, "Zone the partition path is printed in (unset: the parsed zone for "
    "strings, the JVM default zone for numbers).", Group.TABLE, aliases=(_TB_OLD + "output.timezone",))
TIMEBASED_TIMEZONE = declare(
    _TB + "timezone", "str", None, "Deprecated: input and output zone at once; overrides the two when set.",
    Group.TABLE, aliases=(_TB_OLD + "timezone",))
TIMEBASED_KEYS = (TIMEBASED_TIMESTAMP_TYPE, TIMEBASED_SCALAR_UNIT, TIMEBASED_INPUT_DATEFORMAT,
                  TIMEBASED_INPUT_DATEFORMAT_DELIMITER, TIMEBASED_INPUT_TIMEZONE, TIMEBASED_OUTPUT_DATEFORMAT,
                  TIMEBASED_OUTPUT_TIMEZONE, TIMEBASED_TIMEZONE)

# --------------------------------------------------------------------------- write
OPERATION = declare(
    "hoodie.datasource.write.operation", "enum", "upsert", "Write operation.", Group.WRITE,
    choices=("upsert", "insert", "bulk_insert", "delete", "insert_overwrite", "insert_overwrite_table",
             "delete_partition"),
)
PAYLOAD_CLASS = declare(
    "hoodie.datasource.write.payload.class", "enum", "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
    "Merge semantics against stored records: OverwriteWithLatestAvroPayload (incoming wins) or "
    "DefaultHoodieRecordPayload (greater precombine value wins).", Group.WRITE,
    aliases=("hoodie.compaction.payload.class",),
    choices=("org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
             "org.apache.hudi.common.model.DefaultHoodieRecordPayload"),
    choice_aliases={"OVERWRITEWITHLATESTAVROPAYLOAD": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
                    "DEFAULTHOODIERECORDPAYLOAD": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"},
)
COMBINE_BEFORE_INSERT = declare("hoodie.combine.before.insert", "bool", False,
                                "Deduplicate by key within a batch for insert/bulk_insert.", Group.WRITE)
COMBINE_BEFORE_UPSERT = declare("hoodie.combine.before.upsert", "bool", True,
                                "Deduplicate by key within a batch for upsert.", Group.WRITE)
COMBINE_BEFORE_DELETE = declare("hoodie.combine.before.delete", "bool", True,
                                "Deduplicate by key within a batch for delete.", Group.WRITE)
ALLOW_DUPLICATE_ON_INSERTS = declare(
    "hoodie.merge.allow.duplicate.on.inserts", "bool", True,
    "For insert: keep both copies when an inserted key already exists in the small file being topped up "
    "(default true, as after Hudi PR #10728).", Group.WRITE)
RECONCILE_SCHEMA = declare("hoodie.datasource.write.reconcile.schema", "bool", False,
                           "Allow batches that lack table columns (filled with nulls).", Group.WRITE)
BULKINSERT_SORT_MODE = declare(
    "hoodie.bulkinsert.sort.mode", "enum", "NONE", "How bulk_insert repartitions/sorts its input.", Group.WRITE,
    choices=("NONE", "GLOBAL_SORT", "PARTITION_SORT", "PARTITION_PATH_REPARTITION",
             "PARTITION_PATH_REPARTITION_AND_SORT"))
BULKINSERT_PARALLELISM = declare("hoodie.bulkinsert.shuffle.parallelism", "int", 0,
                                 "Spark partitions for bulk_insert; 0 = Spark's inferred value.", Group.WRITE,
                                 validator=non_negative)
UPSERT_PARALLELISM = declare("hoodie.upsert.shuffle.parallelism", "int", 0,
                             "Spark partitions for tagging in upsert; 0 = inferred.", Group.WRITE,
                             validator=non_negative)
INSERT_PARALLELISM = declare("hoodie.insert.shuffle.parallelism", "int", 0,
                             "Spark partitions for tagging in insert; 0 = inferred.", Group.WRITE,
                             validator=non_negative)
DELETE_PARALLELISM = declare("hoodie.delete.shuffle.parallelism", "int", 0,
                             "Spark partitions for tagging in delete; 0 = inferred.", Group.WRITE,
                             validator=non_negative)
MARKERS_TYPE = declare("hoodie.write.markers.type", "enum", "TIMELINE_SERVER_BASED",
                       "Marker layout. TIMELINE_SERVER_BASED (Hudi's default): marker names batched in MARKERS<n> "
                       "files, one per task, written by the tasks themselves (pyhudi runs no timeline server). "
                       "DIRECT: one empty marker file per data file.", Group.WRITE,
                       choices=("DIRECT", "TIMELINE_SERVER_BASED"))
TAGGED_STORAGE_LEVEL = declare("hoodie.write.tagged.record.storage.level", "str", "MEMORY_AND_DISK",
                               "Spark storage level for tagged records between planning and writing; NONE "
                               "recomputes the input instead.", Group.WRITE)
CONCURRENCY_MODE = declare(
    "hoodie.write.concurrency.mode", "enum", "SINGLE_WRITER", "SINGLE_WRITER or OPTIMISTIC_CONCURRENCY_CONTROL.",
    Group.WRITE, choices=("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL",
                          # Hudi 1.x's, parsed only to be refused by name (model/table_features.py)
                          "NON_BLOCKING_CONCURRENCY_CONTROL"),
    choice_aliases={"OCC": "OPTIMISTIC_CONCURRENCY_CONTROL", "NBCC": "NON_BLOCKING_CONCURRENCY_CONTROL"})
FAILED_WRITES_POLICY = declare("hoodie.cleaner.policy.failed.writes", "enum", None,
                               "EAGER (single writer) or LAZY (inferred under OCC).", Group.WRITE,
                               choices=("EAGER", "LAZY", "NEVER"))
COMMIT_META_PREFIX = declare("hoodie.datasource.write.commitmeta.key.prefix", "str", "_",
                             "Options starting with this prefix are copied into the commit's extraMetadata.",
                             Group.WRITE)
ROLLBACK_USING_MARKERS = declare("hoodie.rollback.using.markers", "bool", True,
                                 "Find a failed write's files through its markers.", Group.WRITE)
HEARTBEAT_INTERVAL_MS = declare("hoodie.client.heartbeat.interval_in_ms", "int", 60000,
                                "Writer heartbeat interval.", Group.WRITE, validator=positive)
HEARTBEAT_TOLERABLE_MISSES = declare("hoodie.client.heartbeat.tolerable.misses", "int", 2,
                                     "Missed heartbeats before a writer is presumed dead.", Group.WRITE,
                                     validator=non_negative)
SINGLE_TASK_MAX_BYTES = declare(
    "hoodie.pyhudi.write.single.task.max.bytes", "int", 32 * MB,
    "pyhudi only: an insert/upsert/delete into an existing table whose input Spark estimates at most this "
    "many bytes runs as one Spark task (index lookup, bucket planning and handles together) instead of "
    "several distributed jobs; 0 turns it off.", Group.WRITE, validator=non_negative)
SINGLE_TASK_MAX_INDEX_FILES = declare(
    "hoodie.pyhudi.write.single.task.max.index.files", "int", 256,
    "pyhudi only: an upsert/delete takes the one-task path only if the index lookup reads at most this "
    "many latest base files (the table's, across partitions). Unset, it does not apply when the one task's "
    "threads are as many as Spark's default parallelism (distributing would gain no core).", Group.WRITE,
    validator=non_negative)

LOCAL_PARALLELISM = declare(
    "hoodie.pyhudi.engine.local.parallelism", "int", 0,
    "pyhudi only: how many tasks the in-process engine (writes of Arrow/pandas data, reads and services "
    "without a SparkSession) runs at once on its thread pool; 0 means the machine's cores, at most 8. "
    "It bounds memory too: at most this many tasks hold data at once.", Group.WRITE, validator=non_negative)

DIRECT_PARQUET_INPUT = declare(
    "hoodie.pyhudi.write.direct.parquet.input", "bool", True,
    "pyhudi only: when the input DataFrame is a plain scan of parquet files (spark.read.parquet(...)), "
    "bulk_insert and one-task writes have the executors read those files with pyarrow instead of "
    "receiving Spark's rows; false always takes Spark's rows.", Group.WRITE)

# --------------------------------------------------------------------------- index
INDEX_TYPE = declare("hoodie.index.type", "enum", "SIMPLE", "Index used to locate existing keys.", Group.INDEX,
                     choices=("SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM", "INMEMORY", "BUCKET",
                              # Hudi's, parsed only to be refused by name (model/table_features.py)
                              "RECORD_INDEX", "HBASE", "FLINK_STATE"))
BLOOM_NUM_ENTRIES = declare("hoodie.index.bloom.num_entries", "int", 60000,
                            "Entries per bloom filter row.", Group.INDEX, validator=positive)
BLOOM_FPP = declare("hoodie.index.bloom.fpp", "float", 0.000000001, "Bloom filter false-positive rate.",
                    Group.INDEX, validator=positive)
BLOOM_FILTER_TYPE = declare("hoodie.bloom.index.filter.type", "enum", "DYNAMIC_V0", "Bloom filter type.",
                            Group.INDEX, choices=("DYNAMIC_V0", "SIMPLE"))
BLOOM_DYNAMIC_MAX_ENTRIES = declare("hoodie.bloom.index.filter.dynamic.max.entries", "int", 100000,
                                    "Upper bound of entries of a dynamic bloom filter.", Group.INDEX,
                                    validator=positive)
BLOOM_SIZE_TO_RECORDS = declare(
    "hoodie.pyhudi.index.bloom.size.to.records", "bool", True,
    "pyhudi only: size each base file's bloom filter for the records the file holds (rounded up to a power "
    "of two, at most hoodie.index.bloom.num_entries) instead of num_entries, as Hudi does. The fpp at the "
    "file's count is the same; small files lose most of Hudi's ~431 KB footer. Hudi and hudi-rs read "
    "either (the shape is serialized with the filter); false writes Hudi's sizes.", Group.INDEX)
BLOOM_PRUNE_BY_RANGES = declare("hoodie.bloom.index.prune.by.ranges", "bool", True,
                                "Prune candidate files by footer min/max record keys.", Group.INDEX)
SIMPLE_UPDATE_PARTITION_PATH = declare(
    "hoodie.simple.index.update.partition.path", "bool", True,
    "Global index: a key arriving with a new partition moves there (delete old, insert new).", Group.INDEX,
    aliases=("hoodie.bloom.index.update.partition.path",))
BUCKET_NUM_BUCKETS = declare("hoodie.bucket.index.num.buckets", "int", 256,
                             "BUCKET index: file groups per partition.", Group.INDEX, validator=positive)
BUCKET_HASH_FIELD = declare("hoodie.bucket.index.hash.field", "list", (),
                            "BUCKET index: fields hashed to pick the bucket (default: the record key).",
                            Group.INDEX)

# --------------------------------------------------------------------------- storage / sizing
PARQUET_MAX_FILE_SIZE = declare("hoodie.parquet.max.file.size", "int", 125829120,
                                "Target maximum base file size in bytes.", Group.STORAGE, validator=positive)
PARQUET_SMALL_FILE_LIMIT = declare("hoodie.parquet.small.file.limit", "int", 104857600,
                                   "Base files strictly below this size take new inserts; <= 0 turns it off.",
                                   Group.STORAGE)
PARQUET_BLOCK_SIZE = declare("hoodie.parquet.block.size", "int", 125829120, "Parquet row group size in bytes.",
                             Group.STORAGE, validator=positive)
PARQUET_PAGE_SIZE = declare("hoodie.parquet.page.size", "int", 1048576, "Parquet page size in bytes.",
                            Group.STORAGE, validator=positive)
PARQUET_COMPRESSION_CODEC = declare(
    "hoodie.parquet.compression.codec", "enum", "snappy",
    "Parquet codec. pyhudi defaults to snappy (Hudi 0.14/0.15 default to gzip).", Group.STORAGE,
    choices=("snappy", "gzip", "zstd", "lz4", "uncompressed", "brotli"))
PARQUET_RAW_INCOMPRESSIBLE = declare(
    "hoodie.pyhudi.parquet.raw.incompressible", "bool", True,
    "pyhudi only: store a unique text column uncompressed when the codec shrinks its sampled values by less "
    "than 1/8 (uuids, hashes, random ids and the _hoodie_record_key copying them; under snappy such a column "
    "takes most of a file's compression time for ~10% of its bytes). Every parquet reader reads a column's "
    "own codec; false compresses every column with hoodie.parquet.compression.codec, as Hudi does.",
    Group.STORAGE)
PARQUET_APPEND_ROW_GROUPS = declare(
    "hoodie.pyhudi.insert.append.row.groups", "bool", True,
    "pyhudi only: an insert topping up a small base file (Hudi's concat handle: old records kept as they "
    "were) copies the old file's column chunks byte for byte and adds the new records as row groups of their "
    "own, instead of decoding and re-encoding every old record. Same rows and values; one more row group "
    "per top-up; files under 4 MB, and a file of 16 row groups, are rewritten whole. false rewrites every "
    "top-up, as Hudi does.",
    Group.STORAGE)
PARQUET_COMPRESSION_RATIO = declare("hoodie.parquet.compression.ratio", "float", 0.1,
                                    "Headroom a create handle allows over the max size before rolling over.",
                                    Group.STORAGE, validator=non_negative)
INSERT_SPLIT_SIZE = declare("hoodie.copyonwrite.insert.split.size", "int", 500000,
                            "Records per new file group when auto split is off.", Group.STORAGE,
                            validator=positive)
INSERT_AUTO_SPLIT = declare("hoodie.copyonwrite.insert.auto.split", "bool", True,
                            "Size new file groups as max file size / average record size.", Group.STORAGE)
RECORD_SIZE_ESTIMATE = declare("hoodie.copyonwrite.record.size.estimate", "int", 1024,
                               "Average record size assumed until a commit wrote enough bytes.",
                               Group.STORAGE, validator=positive)
RECORD_SIZE_ESTIMATE_AUTO = declare(
    "hoodie.pyhudi.record.size.estimate.auto", "bool", True,
    "pyhudi only: where Hudi assumes hoodie.copyonwrite.record.size.estimate (no commit wrote more than "
    "the estimation threshold) and that key is not set, estimate instead: from the bytes and records of the "
    "newest commits together, if that is smaller; on a table with no commit yet, from an encoded sample of "
    "the write's records (on Spark, one executor measures it). A stream of batches below the small-file limit then plans "
    "full files from its first batch. false keeps Hudi's rule.", Group.STORAGE)
RECORD_SIZE_ESTIMATION_THRESHOLD = declare(
    "hoodie.record.size.estimation.threshold", "float", 1.0,
    "A commit updates the record size estimate only if it wrote more than threshold x small file limit bytes.",
    Group.STORAGE, validator=non_negative)
SMALL_FILE_GROUP_CANDIDATES_LIMIT = declare(
    "hoodie.merge.small.file.group.candidates.limit", "int", 1,
    "MOR with an index that cannot see logs: small files topped up per partition per commit.",
    Group.STORAGE, validator=non_negative)
LOGFILE_TO_PARQUET_RATIO = declare("hoodie.logfile.to.parquet.compression.ratio", "float", 0.35,
                                   "Log bytes x this ratio estimate their size once compacted.", Group.STORAGE,
                                   validator=non_negative)
LOGFILE_DATA_BLOCK_MAX_SIZE = declare("hoodie.logfile.data.block.max.size", "int", 256 * MB,
                                      "A log data block is flushed at this estimated size.", Group.STORAGE,
                                      validator=positive)
LOGFILE_DATA_BLOCK_FORMAT = declare(
    "hoodie.logfile.data.block.format", "enum", "parquet",
    "Log data block format. pyhudi defaults to parquet (Hudi defaults to avro).", Group.STORAGE,
    choices=("parquet", "avro"))
LOGFILE_MAX_SIZE = declare("hoodie.logfile.max.size", "int", GB, "A log file rolls to the next version at this "
                           "size.", Group.STORAGE, validator=positive)

# --------------------------------------------------------------------------- compaction
COMPACT_INLINE = declare("hoodie.compact.inline", "bool", False, "Compact inside the writer after a commit.",
                         Group.COMPACTION)
COMPACT_SCHEDULE_INLINE = declare("hoodie.compact.schedule.inline", "bool", False,
                                  "Only schedule compaction inside the writer.", Group.COMPACTION)
COMPACT_TRIGGER_STRATEGY = declare(
    "hoodie.compact.inline.trigger.strategy", "enum", "NUM_COMMITS", "When compaction is scheduled.",
    Group.COMPACTION,
    choices=("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME"))
COMPACT_MAX_DELTA_COMMITS = declare("hoodie.compact.inline.max.delta.commits", "int", 5,
                                    "Delta commits before compaction is scheduled.", Group.COMPACTION,
                                    validator=positive)
COMPACT_MAX_DELTA_SECONDS = declare("hoodie.compact.inline.max.delta.seconds", "int", 3600,
                                    "Seconds before compaction is scheduled.", Group.COMPACTION,
                                    validator=positive)
COMPACTION_LOGFILE_SIZE_THRESHOLD = declare("hoodie.compaction.logfile.size.threshold", "int", 0,
                                            "Slices with fewer log bytes are not compacted.", Group.COMPACTION,
                                            validator=non_negative)
COMPACTION_TARGET_IO = declare("hoodie.compaction.target.io", "int", 500 * 1024,
                               "MB of IO (read + write) one compaction plan may spend.", Group.COMPACTION,
                               validator=positive)
COMPACT_ASYNC = declare(
    "hoodie.datasource.compaction.async.enable", "bool", True,
    "Streaming writes (write_stream, pyhudi streamer) to a MERGE_ON_READ table schedule compaction after a "
    "micro-batch when hoodie.compact.inline.trigger.strategy fires and execute it in the background; ignored by "
    "batch writes and when hoodie.compact.inline=true (as Hudi's streaming sink).", Group.COMPACTION)
COMPACTION_STRATEGY = declare(
    "hoodie.compaction.strategy", "enum", "LogFileSizeBasedCompactionStrategy", "Which slices to compact first.",
    Group.COMPACTION, choices=("LogFileSizeBasedCompactionStrategy", "UnBoundedCompactionStrategy"))

# --------------------------------------------------------------------------- clustering
CLUSTERING_INLINE = declare("hoodie.clustering.inline", "bool", False, "Cluster inside the writer.",
                            Group.CLUSTERING)
CLUSTERING_INLINE_MAX_COMMITS = declare("hoodie.clustering.inline.max.commits", "int", 4,
                                        "Commits between inline clusterings.", Group.CLUSTERING,
                                        validator=positive)
CLUSTERING_SCHEDULE_INLINE = declare("hoodie.clustering.schedule.inline", "bool", False,
                                     "Only schedule clustering inside the writer.", Group.CLUSTERING)
CLUSTERING_ASYNC_ENABLED = declare("hoodie.clustering.async.enabled", "bool", False,
                                   "Run clustering in the background.", Group.CLUSTERING,
                                   aliases=("hoodie.datasource.clustering.async.enable",))
CLUSTERING_ASYNC_MAX_COMMITS = declare("hoodie.clustering.async.max.commits", "int", 4,
                                       "Commits between async clustering plans.", Group.CLUSTERING,
                                       validator=positive)
CLUSTERING_SMALL_FILE_LIMIT = declare("hoodie.clustering.plan.strategy.small.file.limit", "int", 314572800,
                                      "Base files below this size are clustering candidates.", Group.CLUSTERING,
                                      validator=non_negative)
CLUSTERING_MAX_BYTES_PER_GROUP = declare("hoodie.clustering.plan.strategy.max.bytes.per.group", "int", 2 * GB,
                                         "Input bytes per clustering group.", Group.CLUSTERING, validator=positive)
CLUSTERING_TARGET_FILE_MAX_BYTES = declare("hoodie.clustering.plan.strategy.target.file.max.bytes", "int", GB,
                                           "Target size of clustering output files.", Group.CLUSTERING,
                                           validator=positive)
CLUSTERING_MAX_NUM_GROUPS = declare("hoodie.clustering.plan.strategy.max.num.groups", "int", 30,
                                    "Groups per clustering plan.", Group.CLUSTERING, validator=positive)
CLUSTERING_SINGLE_GROUP = declare("hoodie.clustering.plan.strategy.single.group.clustering.enabled", "bool",
                                  True, "Keep single-slice groups.", Group.CLUSTERING)
CLUSTERING_SORT_COLUMNS = declare("hoodie.clustering.plan.strategy.sort.columns", "list", (),
                                  "Columns clustering sorts by.", Group.CLUSTERING)
CLUSTERING_PARTITION_SELECTED = declare("hoodie.clustering.plan.strategy.partition.selected", "list", (),
                                        "Only these partitions are clustered.", Group.CLUSTERING)
CLUSTERING_PARTITION_REGEX = declare("hoodie.clustering.plan.strategy.partition.regex.pattern", "str", None,
                                     "Only partitions matching this regex are clustered.", Group.CLUSTERING)
CLUSTERING_FILTER_MODE = declare("hoodie.clustering.plan.partition.filter.mode", "enum", "NONE",
                                 "Partition filter for clustering plans.", Group.CLUSTERING,
                                 choices=("NONE", "RECENT_DAYS", "SELECTED_PARTITIONS", "DAY_ROLLING"))
CLUSTERING_LOOKBACK_PARTITIONS = declare("hoodie.clustering.plan.strategy.daybased.lookback.partitions", "int", 2,
                                         "RECENT_DAYS: partitions looked back.", Group.CLUSTERING,
                                         validator=non_negative)
CLUSTERING_SKIP_LATEST_PARTITIONS = declare(
    "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions", "int", 0,
    "RECENT_DAYS: newest partitions skipped.", Group.CLUSTERING, validator=non_negative)
CLUSTERING_BEGIN_PARTITION = declare("hoodie.clustering.plan.strategy.cluster.begin.partition", "str", None,
                                     "SELECTED_PARTITIONS: first partition.", Group.CLUSTERING)
CLUSTERING_END_PARTITION = declare("hoodie.clustering.plan.strategy.cluster.end.partition", "str", None,
                                   "SELECTED_PARTITIONS: last partition.", Group.CLUSTERING)
CLUSTERING_MAX_PARALLELISM = declare("hoodie.clustering.max.parallelism", "int", 15,
                                     "Clustering groups executed at once.", Group.CLUSTERING, validator=positive)
LAYOUT_OPTIMIZE_STRATEGY = declare("hoodie.layout.optimize.strategy", "enum", "linear",
                                   "Sort order for clustering: linear, z-order or hilbert.", Group.CLUSTERING,
                                   choices=("linear", "z-order", "hilbert"),
                                   choice_aliases={"ZORDER": "z-order", "Z_ORDER": "z-order"})
CLUSTERING_UPDATES_STRATEGY = declare(
    "hoodie.clustering.updates.strategy", "enum", "SparkRejectUpdateStrategy",
    "Updates to file groups under pending clustering: reject or allow.", Group.CLUSTERING,
    choices=("SparkRejectUpdateStrategy", "SparkAllowUpdateStrategy"),
    choice_aliases={"REJECT": "SparkRejectUpdateStrategy", "ALLOW": "SparkAllowUpdateStrategy"})
CLUSTERING_ROLLBACK_ON_CONFLICT = declare("hoodie.clustering.rollback.pending.replacecommit.on.conflict", "bool",
                                          False, "Roll back a conflicting pending clustering.", Group.CLUSTERING)
TABLE_SERVICES_INCREMENTAL = declare(
    "hoodie.table.services.incremental.enabled", "bool", True,
    "Compaction and clustering plan from the partitions written since the last completed plan of the same "
    "service plus the partitions it left out (Hudi 1.x's RFC-83); false scans every partition.",
    Group.CLUSTERING)

# --------------------------------------------------------------------------- background table services
SERVICES_RETRY_COUNT = declare(
    "hoodie.table.services.async.retry.count", "int", 3,
    "A failed background compaction or clustering is retried (its plan stays pending) at most this many times by "
    "the process, at a later commit; then it is left pending for `pyhudi compaction|clustering PATH run`.",
    Group.WRITE, validator=non_negative)
SERVICES_RETRY_INTERVAL_MS = declare(
    "hoodie.table.services.async.retry.interval.ms", "int", 2000,
    "Wait before the first retry of a failed background service; doubles with every further failure.",
    Group.WRITE, validator=non_negative)
SERVICES_SCHEDULER_POOL = declare(
    "hoodie.table.services.async.scheduler.pool", "str", "pyhudi_table_services",
    "Spark scheduler pool of background service jobs (spark.scheduler.pool; effective with "
    "spark.scheduler.mode=FAIR); empty = the default pool.", Group.WRITE)

# --------------------------------------------------------------------------- clean
CLEAN_AUTOMATIC = declare("hoodie.clean.automatic", "bool", True, "Clean after every commit.", Group.CLEAN)
CLEAN_ASYNC = declare("hoodie.clean.async", "bool", False, "Clean in the background.", Group.CLEAN)
CLEAN_MAX_COMMITS = declare("hoodie.clean.max.commits", "int", 1, "Commits between clean attempts.",
                            Group.CLEAN, validator=positive)
CLEANER_POLICY = declare("hoodie.cleaner.policy", "enum", "KEEP_LATEST_COMMITS", "What the cleaner keeps.",
                         Group.CLEAN,
                         choices=("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS"))
CLEANER_COMMITS_RETAINED = declare("hoodie.cleaner.commits.retained", "int", 10, "Commits kept readable.",
                                   Group.CLEAN)
CLEANER_HOURS_RETAINED = declare("hoodie.cleaner.hours.retained", "int", 24, "Hours kept readable.", Group.CLEAN)
CLEANER_FILEVERSIONS_RETAINED = declare("hoodie.cleaner.fileversions.retained", "int", 3,
                                        "File versions kept per file group.", Group.CLEAN)
CLEANER_INCREMENTAL = declare("hoodie.cleaner.incremental.mode", "bool", True,
                              "Only scan partitions written since the last clean.", Group.CLEAN)


def _empty_clean_interval(key: str, value: int) -> None:
    if value == 0 or value < -1:
        raise InvalidConfigError(f"{key}={value} is neither -1 (no empty cleans, Hudi's default) nor a positive "
                                 "interval; use -1 or at least 1")


EMPTY_CLEAN_DURATION_MS = declare(
    "hoodie.write.empty.clean.create.duration.ms", "int", -1,
    "With nothing to clean, still write a clean (an empty one, recording the earliest retained commit where the "
    "next incremental clean starts) when no clean completed within this many ms; -1 never (Hudi's default). "
    "Not needed for cheap cleans: without any clean, only partitions where a commit superseded a file version "
    "are scanned.", Group.CLEAN, validator=_empty_clean_interval)
EMPTY_CLEAN_INTERVAL_HOURS = declare(
    "hoodie.write.empty.clean.interval.hours", "int", -1,
    "The same in hours, under the name Hudi 1.2.0 released; hoodie.write.empty.clean.create.duration.ms wins "
    "when both are set.", Group.CLEAN, validator=_empty_clean_interval)

# --------------------------------------------------------------------------- archival
KEEP_MAX_COMMITS = declare("hoodie.keep.max.commits", "int", 30,
                           "Archive when more completed commits than this.", Group.ARCHIVAL)
KEEP_MIN_COMMITS = declare("hoodie.keep.min.commits", "int", 20,
                           "Archive down to this many completed commits.", Group.ARCHIVAL)
ARCHIVAL_BATCH = declare("hoodie.commits.archival.batch", "int", 10,
                         "Archived instants per Avro data block of an archive file.",
                         Group.ARCHIVAL, validator=positive)
ARCHIVE_AUTOMATIC = declare("hoodie.archive.automatic", "bool", True,
                            "Archive the timeline after every commit (after the cleaner).", Group.ARCHIVAL)
ARCHIVE_ASYNC = declare("hoodie.archive.async", "bool", False,
                        "Archive in the background instead of inside write().", Group.ARCHIVAL)

# --------------------------------------------------------------------------- lock
LOCK_PROVIDER = declare("hoodie.write.lock.provider", "str", None,
                        "Lock provider class for optimistic concurrency control.", Group.LOCK)
LOCK_FILESYSTEM_PATH = declare("hoodie.write.lock.filesystem.path", "str", None,
                               "Directory of the file-system lock (default: .hoodie/.locks).", Group.LOCK)
LOCK_EXPIRE_MINUTES = declare(
    "hoodie.write.lock.filesystem.expire", "float", 1.0,
    "Lease of the file-system lock in minutes, as Hudi's key (fractions allowed); a crashed holder's lock "
    "expires after it. 0: never expires (Hudi's default; a crashed holder's lock file must then be deleted by "
    "hand); pyhudi defaults to 1.", Group.LOCK, validator=non_negative)
LOCK_ACQUIRE_WAIT_MS = declare("hoodie.write.lock.wait_time_ms", "int", 60000,
                               "How long to wait for the lock.", Group.LOCK, validator=positive)
LOCK_STORAGE_VALIDITY_SECONDS = declare(
    "hoodie.write.lock.storage.validity.timeout.secs", "float", 15.0,
    "Storage-based lock (StorageBasedLockProvider): how long each acquisition or renewal of the lock object "
    "is valid, in seconds; a dead holder blocks other writers this long. At least 3x the renew interval. "
    "pyhudi defaults to 15 (Hudi: 300), as it holds the lock only around a commit.", Group.LOCK,
    validator=positive)
LOCK_STORAGE_RENEW_SECONDS = declare(
    "hoodie.write.lock.storage.renew.interval.secs", "float", 3.0,
    "Storage-based lock: seconds between renewals of the held lock by its heartbeat (Hudi: 30).", Group.LOCK,
    aliases=("hoodie.write.lock.storage.heartbeat.poll.secs",), validator=positive)

# --------------------------------------------------------------------------- streamer error table
ERROR_TABLE_ENABLE = declare(
    "hoodie.errortable.enable", "bool", False,
    "Streamer: send malformed records (unparseable, not fitting the schema, no record key) to the error "
    "table and commit the rest; false fails the round on the first batch holding any.", Group.STREAMING)
ERROR_TABLE_BASE_PATH = declare(
    "hoodie.errortable.base.path", "str", None,
    "Streamer: base path of the error table (a Hudi table); default <target>/.hoodie/.aux/errors.",
    Group.STREAMING)
ERROR_TABLE_NAME = declare("hoodie.errortable.target.table.name", "str", None,
                           "Streamer: table name of the error table; default <hoodie.table.name>_errors.",
                           Group.STREAMING)
ERROR_TABLE_FAILURE_STRATEGY = declare(
    "hoodie.errortable.write.failure.strategy", "enum", "ROLLBACK_COMMIT",
    "Streamer: if writing the error table fails, ROLLBACK_COMMIT fails the batch (nothing committed); "
    "LOG_ERROR logs it and commits the good records.", Group.STREAMING, choices=("ROLLBACK_COMMIT", "LOG_ERROR"))
ERROR_TABLE_VALIDATE_RECORD_CREATION = declare(
    "hoodie.errortable.validate.recordcreation.enable", "bool", True,
    "Streamer: records without a record key or precombine value go to the error table (false: they fail the "
    "write).", Group.STREAMING)

# --------------------------------------------------------------------------- read
QUERY_TYPE = declare("hoodie.datasource.query.type", "enum", "snapshot", "snapshot, read_optimized or "
                     "incremental.", Group.READ, choices=("snapshot", "read_optimized", "incremental"))
AS_OF_INSTANT = declare("as.of.instant", "str", None,
                        "Time travel: read the table as of this instant: yyyyMMddHHmmssSSS, yyyyMMddHHmmss (before that "
                        "second), 'yyyy-MM-dd HH:mm:ss[.SSS]' (without .SSS: the end of that second) or yyyy-MM-dd.",
                        Group.READ, aliases=("hoodie.datasource.read.as.of.instant",))
BEGIN_INSTANT = declare("hoodie.datasource.read.begin.instanttime", "str", None,
                        "Incremental: exclusive start instant.", Group.READ)
END_INSTANT = declare("hoodie.datasource.read.end.instanttime", "str", None,
                      "Incremental: inclusive end instant (default latest).", Group.READ)
INCR_HOLLOW_COMMIT = declare(
    "hoodie.read.timeline.holes.resolution.policy", "enum", "FAIL",
    "Incremental: what to do when a write earlier than a completed one is still in flight (a hollow commit). "
    "FAIL raises; BLOCK reads only up to (before) the earliest pending write; USE_TRANSITION_TIME selects "
    "commits by completion time (the completed instant file's modification time), so begin/end instants are "
    "completion times.", Group.READ, choices=("FAIL", "BLOCK", "USE_TRANSITION_TIME"),
    aliases=("hoodie.datasource.read.handle.hollow.commit",))
INCR_FALLBACK_FULL_TABLE_SCAN = declare(
    "hoodie.datasource.read.incr.fallback.fulltablescan.enable", "bool", False,
    "Incremental: when the files of the range were cleaned or archived, read the latest snapshot filtered by "
    "commit time instead of failing.", Group.READ)
READ_PATHS = declare("hoodie.datasource.read.paths", "str", None, "Not supported; read a base path.", Group.READ)

# --------------------------------------------------------------------------- schema evolution (writer schema)
SET_NULL_FOR_MISSING_COLUMNS = declare(
    "hoodie.write.set.null.for.missing.columns", "bool", False,
    "A batch may lack table columns (also nested fields): they stay in the table schema and are written as "
    "nulls (Hudi 0.14's deduceWriterSchema). Off: such a batch is refused.", Group.WRITE)
SCHEMA_ALLOW_COLUMN_DROP = declare(
    "hoodie.datasource.write.schema.allow.auto.evolution.column.drop", "bool", False,
    "Table columns missing from a batch are dropped from the table schema (rows read without them); wins "
    "over hoodie.write.set.null.for.missing.columns, ignored with hoodie.datasource.write.reconcile.schema.",
    Group.WRITE)
PARTITIONS_TO_DELETE = declare(
    "hoodie.datasource.write.partitions.to.delete", "str", None,
    "delete_partition: comma-separated partition paths to delete (Hudi 0.14: split on ',', no trimming); a "
    "path with '*' matches existing partitions ('*' matches any characters, '/' included). Unset: the "
    "partitions of the DataFrame's records.", Group.WRITE)

# --------------------------------------------------------------------------- meta sync (declared in pyhudi/sync/keys.py)
from pyhudi.sync import keys as _sync_keys  # noqa: E402,F401
