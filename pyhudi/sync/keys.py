"""Meta sync's option keys, declared in the global registry with Hudi's names and defaults (HoodieSyncConfig,
HiveSyncConfigHolder, HoodieSparkSqlWriter's metaSync). Imported by pyhudi.config.keys, so a write's options
are parsed once, typed, and no sync key is reported as unknown. Keys pyhudi cannot honour are declared too,
so that sync/config.py can refuse them by name instead of silently ignoring them.

Keys only the Glue backend reads (hoodie.datasource.meta.sync.glue.*, hoodie.aws.*) are declared as plain
strings here and parsed by sync/glue_config.py, which receives the raw options."""

from __future__ import annotations

from pyhudi.config.registry import REGISTRY, Group, declare, positive

HIVE_SYNC_TOOL = "org.apache.hudi.hive.HiveSyncTool"
GLUE_SYNC_TOOL = "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool"

META_SYNC_ENABLED = declare("hoodie.datasource.meta.sync.enable", "bool", False,
                            "Sync the table to the catalogs of hoodie.meta.sync.client.tool.class after each commit.",
                            Group.SYNC)
HIVE_SYNC_ENABLED = declare("hoodie.datasource.hive_sync.enable", "bool", False,
                            "Sync the table to the Hive Metastore after each commit (adds HiveSyncTool to the "
                            "sync tools, as Hudi's Spark writer does).", Group.SYNC)
SYNC_TOOL_CLASSES = declare(
    "hoodie.meta.sync.client.tool.class", "list", (HIVE_SYNC_TOOL,),
    f"Sync tools, comma-separated: {HIVE_SYNC_TOOL} (Hive Metastore over Thrift) and/or {GLUE_SYNC_TOOL} "
    "(AWS Glue Data Catalog); other classes are refused.", Group.SYNC)
HIVE_SYNC_MODE = declare("hoodie.datasource.hive_sync.mode", "str", None,
                         "hms (the metastore's Thrift API, the only mode pyhudi has); jdbc and hiveql need "
                         "HiveServer2 and are refused.", Group.SYNC)
DATABASE = declare("hoodie.datasource.hive_sync.database", "str", "default",
                   "Catalog database of the synced table(s).", Group.SYNC)
TABLE = declare("hoodie.datasource.hive_sync.table", "str", None,
                "Catalog table name (MOR: the _ro/_rt tables are named after it); default hoodie.table.name.",
                Group.SYNC)
PARTITION_FIELDS = declare("hoodie.datasource.hive_sync.partition_fields", "list", None,
                           "Partition columns of the catalog table; default the table's partition fields "
                           "(hoodie.table.partition.fields).", Group.SYNC)
PARTITION_EXTRACTOR = declare(
    "hoodie.datasource.hive_sync.partition_extractor_class", "str", None,
    "How partition values are read from a partition path: MultiPartKeysValueExtractor, "
    "HiveStylePartitionValueExtractor, SinglePartPartitionValueExtractor, SlashEncodedDayPartitionValueExtractor, "
    "SlashEncodedHourPartitionValueExtractor or NonPartitionedExtractor (org.apache.hudi.hive.*); unset: "
    "inferred as Hudi does from the partition fields and hive-style partitioning.", Group.SYNC)
METASTORE_URIS = declare("hoodie.datasource.hive_sync.metastore.uris", "str", "thrift://localhost:9083",
                         "Hive Metastore Thrift URI(s), comma-separated.", Group.SYNC)
SKIP_RO_SUFFIX = declare("hoodie.datasource.hive_sync.skip_ro_suffix", "bool", False,
                         "MOR: register the read-optimized table as <table> instead of <table>_ro.", Group.SYNC)
TABLE_STRATEGY = declare("hoodie.datasource.hive_sync.table.strategy", "enum", "ALL",
                         "MOR: which tables to register: RO (<table>, read-optimized), RT (<table>, snapshot) or "
                         "ALL (<table>_ro and <table>_rt).", Group.SYNC, choices=("RO", "RT", "ALL"))
SYNC_SNAPSHOT_WITH_TABLE_NAME = declare(
    "hoodie.meta.sync.sync_snapshot_with_table_name", "bool", None,
    "MOR with strategy ALL: also register the snapshot (realtime) table under the bare <table> name. Unset: "
    "false on version-6 tables (Hudi 0.15), true on versions 8 and 9 (Hudi 1.x); skip_ro_suffix wins over it.",
    Group.SYNC)
SUPPORT_TIMESTAMP = declare("hoodie.datasource.hive_sync.support_timestamp", "bool", False,
                            "Register timestamp-millis/micros columns as Hive timestamp (else bigint).", Group.SYNC)
SYNC_AS_DATASOURCE = declare("hoodie.datasource.hive_sync.sync_as_datasource", "bool", True,
                             "Add Spark's data source table properties (spark.sql.sources.*) and the path SerDe "
                             "property, so Spark SQL reads the table with Hudi's data source.", Group.SYNC)
SCHEMA_STRING_LENGTH_THRESHOLD = declare(
    "hoodie.datasource.hive_sync.schema_string_length_thresh", "int", 4000,
    "Longest spark.sql.sources.schema.part.N value (Spark's spark.sql.sources.schemaStringLengthThreshold).",
    Group.SYNC, validator=positive)
SYNC_COMMENT = declare("hoodie.datasource.hive_sync.sync_comment", "bool", False,
                       "Copy column docs of the table's Avro schema into the catalog's column comments.",
                       Group.SYNC)
AUTO_CREATE_DATABASE = declare("hoodie.datasource.hive_sync.auto_create_database", "bool", True,
                               "Create the database when it does not exist (else the sync fails).", Group.SYNC)
CREATE_MANAGED_TABLE = declare("hoodie.datasource.hive_sync.create_managed_table", "bool", False,
                               "Register a managed table instead of an EXTERNAL one.", Group.SYNC)
BATCH_NUM = declare("hoodie.datasource.hive_sync.batch_num", "int", 1000,
                    "Partitions per catalog call when adding, updating or dropping partitions.", Group.SYNC,
                    validator=positive)
TABLE_PROPERTIES = declare("hoodie.datasource.hive_sync.table_properties", "str", None,
                           "Extra table properties, one key=value per line.", Group.SYNC)
SERDE_PROPERTIES = declare("hoodie.datasource.hive_sync.serde_properties", "str", None,
                           "Extra SerDe properties, one key=value per line.", Group.SYNC)
IGNORE_EXCEPTIONS = declare("hoodie.datasource.hive_sync.ignore_exceptions", "bool", False,
                            "HiveSyncTool: when the metastore cannot be reached, log the error (and issue a "
                            "PostCommitWarning) instead of failing, as Hudi's HiveSyncTool does.", Group.SYNC)
OMIT_METADATA_FIELDS = declare("hoodie.datasource.hive_sync.omit_metadata_fields", "bool", False,
                               "Leave the _hoodie_* meta columns out of the catalog table.", Group.SYNC)
USE_PRE_APACHE_INPUT_FORMAT = declare(
    "hoodie.datasource.hive_sync.use_pre_apache_input_format", "bool", False,
    "Register com.uber.hoodie input formats (Hudi before its Apache incubation).", Group.SYNC)
BASE_FILE_FORMAT = declare("hoodie.datasource.hive_sync.base_file_format", "enum", "PARQUET",
                           "Base file format of the synced table; PARQUET only.", Group.SYNC, choices=("PARQUET",))
CONDITIONAL_SYNC = declare("hoodie.datasource.meta_sync.condition.sync", "bool", False,
                           "Advance last_commit_time_sync only when the schema, properties or partitions "
                           "changed.", Group.SYNC)
SPARK_VERSION = declare("hoodie.meta_sync.spark.version", "str", None,
                        "Recorded as spark.sql.create.version (the Spark engine sets its own version).",
                        Group.SYNC)
DECODE_PARTITION = declare("hoodie.meta.sync.decode_partition", "bool", None,
                           "URL-decode partition values read from the paths; default "
                           "hoodie.datasource.write.partitionpath.urlencode.", Group.SYNC)
SYNC_BASE_PATH = declare("hoodie.datasource.meta.sync.base.path", "str", None,
                         "Table location to register; default the table's path (file:/... for a local table).",
                         Group.SYNC)
NO_PARTITION_METADATA = declare("hoodie.meta.sync.no_partition_metadata", "bool", False,
                                "Glue only in Hudi; accepted, with no effect on what pyhudi registers.", Group.SYNC)
METADATA_FILE_LISTING = declare("hoodie.meta.sync.metadata_file_listing", "bool", False,
                                "List partitions from the metadata table; pyhudi lists storage (false only).",
                                Group.SYNC)
ASSUME_DATE_PARTITIONING = declare("hoodie.datasource.hive_sync.assume_date_partitioning", "bool", False,
                                   "Hudi 0.3 yyyy/mm/dd tables; true is refused.", Group.SYNC)
FILTER_PUSHDOWN = declare("hoodie.datasource.hive_sync.filter_pushdown_enabled", "bool", False,
                          "Read only the written partitions from the metastore; accepted, pyhudi reads them all.",
                          Group.SYNC)

# Keys of the JDBC/HiveQL modes: accepted and unused in hms mode, as Hudi's HMS executor ignores them.
JDBC_URL = declare("hoodie.datasource.hive_sync.jdbcurl", "str", None, "JDBC mode only; unused (hms).", Group.SYNC)
USERNAME = declare("hoodie.datasource.hive_sync.username", "str", None, "JDBC mode only; unused (hms).", Group.SYNC)
PASSWORD = declare("hoodie.datasource.hive_sync.password", "str", None, "JDBC mode only; unused (hms).", Group.SYNC)
USE_JDBC = declare("hoodie.datasource.hive_sync.use_jdbc", "bool", None,
                   "Deprecated (Hudi 0.9); true without hoodie.datasource.hive_sync.mode is refused.", Group.SYNC)
BATCHING_ENABLED = declare("hoodie.datasource.hive_sync.batching.enabled", "bool", False,
                           "HiveQL mode only (no effect in hms mode, as in Hudi).", Group.SYNC)
BATCHING_THREADS = declare("hoodie.datasource.hive_sync.batching.threads", "int", 4,
                           "HiveQL mode only (no effect in hms mode, as in Hudi).", Group.SYNC)
# Keys whose non-default value pyhudi refuses by name.
BUCKET_SYNC = declare("hoodie.datasource.hive_sync.bucket_sync", "bool", False,
                      "Register the bucket spec; true is refused.", Group.SYNC)
BUCKET_SYNC_SPEC = declare("hoodie.datasource.hive_sync.bucket_sync_spec", "str", None,
                           "Bucket spec; refused when set.", Group.SYNC)
USE_SPARK_CATALOG = declare("hoodie.datasource.hive_sync.use_spark_catalog", "bool", False,
                            "Spark's catalog as the metastore client (JVM-side); true is refused.", Group.SYNC)


def _declare_glue_keys() -> None:
    """The Glue backend's keys, so a write carrying them does not warn "unknown option" (glue_config.py
    parses and validates them; a Glue key it does not know is refused there)."""
    try:
        from pyhudi.sync import glue_config as G
    except ImportError:  # the Glue backend is not installed in this tree
        return
    names = [*sorted(G.KNOWN_GLUE_KEYS), G.AWS_ACCESS_KEY, G.AWS_SECRET_KEY, G.AWS_SESSION_TOKEN, G.AWS_ROLE_ARN,
             G.AWS_ROLE_SESSION_NAME, G.AWS_ROLE_EXTERNAL_ID, G.AWS_GLUE_ENDPOINT, G.AWS_GLUE_REGION,
             G.AWS_STS_ENDPOINT, G.AWS_STS_REGION]
    for name in names:
        if REGISTRY.lookup(name) is None:  # the Glue backend may declare its own
            declare(name, "str", None, "AWS Glue sync (parsed by the Glue backend).", Group.SYNC)


_declare_glue_keys()
