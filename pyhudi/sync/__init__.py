"""Meta sync: registering a Hudi table, its columns and partitions in a catalog (Hive Metastore, AWS Glue),
as Hudi's HiveSyncTool and AwsGlueCatalogSyncTool do."""
