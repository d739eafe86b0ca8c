"""The AWS Glue Data Catalog backend of meta sync: Hudi's AWSGlueCatalogSyncClient (hudi-aws), the *how*
behind AwsGlueCatalogSyncTool. The sync tool decides what to register; this module turns each
`CatalogClient` call into the Glue API calls Hudi's client makes, with Hudi's request shapes:

- tables: TableInput with TableType, Parameters (plus `hudi.metadata-listing-enabled`, which Athena reads),
  PartitionKeys and a StorageDescriptor (Columns, Location, formats, SerdeInfo); column types lower case and
  a missing comment sent as "" (getColumnsFromSchema); `s3a://` locations registered as `s3://` (s3aToS3);
  UpdateTable with `SkipArchive` from `skip_table_archive` (default true: no table version per commit);
- partitions: BatchCreatePartition / BatchUpdatePartition in chunks of 100 and BatchDeletePartition in
  chunks of 25 (Glue's limits), each partition's StorageDescriptor a copy of the table's as Glue holds it
  with the partition's own location; a batch's per-partition `Errors` fail the call, except
  AlreadyExistsException on create (Hudi logs those) and EntityNotFoundException on delete (see below);
- GetPartitions paginated with ExcludeColumnSchema (only values and locations are read back).

Failures raise `MetaSyncError` naming the Glue operation, `database.table` and the AWS error code.
Throttling is retried by botocore (standard mode, 4 attempts, as the AWS SDK's default 3 retries)."""

from __future__ import annotations

import copy
import datetime
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pyhudi.errors import MetaSyncError
from pyhudi.sync.catalog import CatalogClient, Column, PartitionDef, TableDef
from pyhudi.sync.glue_config import (
    GlueSyncConfig,
    build_glue_client,
    build_session,
    build_sts_client,
    import_boto3,
    s3a_to_s3,
)

LOG = logging.getLogger(__name__)

MAX_PARTITIONS_PER_CHANGE_REQUEST = 100  # BatchCreatePartition / BatchUpdatePartition
MAX_DELETE_PARTITIONS_PER_REQUEST = 25  # BatchDeletePartition
METADATA_LISTING_PARAM = "hudi.metadata-listing-enabled"
# Hudi's createDatabase: "Automatically created by " + the client's class name; kept verbatim so that a
# database pyhudi creates looks like one Hudi created.
DATABASE_DESCRIPTION = "Automatically created by org.apache.hudi.aws.sync.AWSGlueCatalogSyncClient"
NOT_FOUND = "EntityNotFoundException"
ALREADY_EXISTS = "AlreadyExistsException"

T = TypeVar("T")


def connect(options: Mapping[str, str]) -> CatalogClient:
    """A Glue catalog client configured from Hudi's options (see `GlueSyncConfig`)."""
    config = GlueSyncConfig.from_options(options)
    session = build_session(config)
    try:
        glue = build_glue_client(session, config)
    except Exception as e:  # botocore's NoRegionError and friends: name the key that fixes it
        raise MetaSyncError(f"cannot build the AWS Glue client: {e} (set hoodie.aws.glue.region or AWS_REGION, "
                            "hoodie.aws.glue.endpoint or AWS_ENDPOINT_URL)") from e
    return GlueCatalogClient(config, glue, lambda: build_sts_client(session, config))


class GlueCatalogClient:
    """`CatalogClient` over one boto3 Glue client (thread-safe: partition batches may run in parallel)."""

    def __init__(self, config: GlueSyncConfig, glue: Any, sts_factory: Callable[[], Any] | None = None) -> None:
        self.config = config
        self.glue = glue
        self._sts_factory = sts_factory

    # ---- calls -------------------------------------------------------------------------------------------

    def _call(self, operation: str, what: str, **request: Any) -> dict[str, Any]:
        """One Glue call (`operation` is boto3's method name), with CatalogId when configured; any failure
        becomes MetaSyncError naming the operation, `what` and the AWS error code."""
        if self.config.catalog_id is not None:
            request["CatalogId"] = self.config.catalog_id
        try:
            response: dict[str, Any] = getattr(self.glue, operation)(**request)
            return response
        except Exception as e:
            raise _sync_error(operation, what, e) from e

    # ---- databases ---------------------------------------------------------------------------------------

    def database_exists(self, database: str) -> bool:
        try:
            self._call("get_database", database, Name=database)
        except MetaSyncError as e:
            if _code(e) == NOT_FOUND:
                return False
            raise
        return True

    def create_database(self, database: str) -> None:
        """Create the database (Hudi's description) unless it exists; a concurrent creator's database is
        fine (AlreadyExistsException, as Hudi). Tags it with `resource_tags` when set."""
        if self.database_exists(database):
            return
        try:
            self._call("create_database", database,
                       DatabaseInput={"Name": database, "Description": DATABASE_DESCRIPTION})
        except MetaSyncError as e:
            if _code(e) != ALREADY_EXISTS:
                raise
            LOG.info("Glue database %s already exists", database)
            return
        self._tag(f"database/{database}", database)

    def _tag(self, resource: str, what: str) -> None:
        if not self.config.resource_tags:
            return
        arn = f"arn:aws:glue:{self.glue.meta.region_name}:{self._account_id(what)}:{resource}"
        self._call_untargeted("tag_resource", what, ResourceArn=arn, TagsToAdd=dict(self.config.resource_tags))

    def _account_id(self, what: str) -> str:
        if self.config.catalog_id is not None:
            return self.config.catalog_id
        if self._sts_factory is None:
            raise MetaSyncError(f"tagging {what}: no catalog id configured and no STS client to find the account")
        try:
            return str(self._sts_factory().get_caller_identity()["Account"])
        except Exception as e:
            raise _sync_error("get_caller_identity", what, e) from e

    def _call_untargeted(self, operation: str, what: str, **request: Any) -> dict[str, Any]:
        """A Glue call that takes no CatalogId (TagResource names its resource by ARN)."""
        try:
            response: dict[str, Any] = getattr(self.glue, operation)(**request)
            return response
        except Exception as e:
            raise _sync_error(operation, what, e) from e

    # ---- tables ------------------------------------------------------------------------------------------

    def _raw_table(self, database: str, name: str) -> dict[str, Any] | None:
        try:
            return self._call("get_table", f"{database}.{name}", DatabaseName=database, Name=name)["Table"]
        except MetaSyncError as e:
            if _code(e) == NOT_FOUND:  # the table, or its database, is missing
                return None
            raise

    def _existing_table(self, database: str, name: str, operation: str) -> dict[str, Any]:
        table = self._raw_table(database, name)
        if table is None:
            raise MetaSyncError(f"Glue {operation} on {database}.{name}: the table does not exist")
        return table

    def get_table(self, database: str, name: str) -> TableDef | None:
        raw = self._raw_table(database, name)
        return None if raw is None else table_def(database, raw)

    def create_table(self, table: TableDef) -> None:
        """CreateTable as Hudi's createTable: a table created meanwhile by another writer is left alone
        (Hudi logs AlreadyExistsException and goes on)."""
        parameters = {METADATA_LISTING_PARAM: self.config.metadata_listing_flag, **table.parameters}
        serde = {**table.serde_parameters}
        serde.setdefault("serialization.format", "1")
        storage = storage_descriptor(table, serde)
        try:
            self._call("create_table", _id(table), DatabaseName=table.database,
                       TableInput=table_input(table, parameters, storage))
        except MetaSyncError as e:
            if _code(e) != ALREADY_EXISTS:
                raise
            LOG.warning("Glue table %s already exists", _id(table))

    def update_table(self, table: TableDef) -> None:
        """UpdateTable with `table`'s definition over the table's current StorageDescriptor (fields pyhudi
        does not model, e.g. Compressed or SD parameters, are kept as Hudi's sd.copy keeps them). Nothing is
        sent when Glue already holds exactly this: every UpdateTable would otherwise cost a table version
        when skip_table_archive is false."""
        current = self._existing_table(table.database, table.name, "UpdateTable")
        parameters = {**table.parameters, METADATA_LISTING_PARAM: self.config.metadata_listing_flag}
        serde = {**table.serde_parameters}
        serde.setdefault("serialization.format", "1")  # Hudi's updateSerdeProperties: putIfAbsent
        storage = storage_descriptor(table, serde, base=current.get("StorageDescriptor"))
        new = table_input(table, parameters, storage)
        if _same_table(current, new):
            return
        self._call("update_table", _id(table), DatabaseName=table.database, TableInput=new,
                   SkipArchive=self.config.skip_table_archive)

    def drop_table(self, database: str, name: str) -> None:
        """DeleteTable; a table already gone is not an error (the catalog is in the wanted state)."""
        try:
            self._call("delete_table", f"{database}.{name}", DatabaseName=database, Name=name)
        except MetaSyncError as e:
            if _code(e) != NOT_FOUND:
                raise

    # ---- partitions --------------------------------------------------------------------------------------

    def list_partitions(self, table: TableDef) -> list[PartitionDef]:
        """Every partition's values and location (GetPartitions, page by page; empty when the table is
        missing). Hudi may split the listing into `all_partitions_read_parallelism` segments: the same set."""
        partitions: list[PartitionDef] = []
        request: dict[str, Any] = {"DatabaseName": table.database, "TableName": table.name,
                                   "ExcludeColumnSchema": True}
        while True:
            try:
                page = self._call("get_partitions", _id(table), **request)
            except MetaSyncError as e:
                if _code(e) == NOT_FOUND and not partitions:
                    return []
                raise
            for p in page.get("Partitions", []):
                location = p.get("StorageDescriptor", {}).get("Location", "")
                partitions.append(PartitionDef(tuple(p.get("Values", [])), location))
            token = page.get("NextToken")
            if not token:
                return partitions
            request["NextToken"] = token

    def add_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None:
        """BatchCreatePartition, 100 a request; partitions that already exist are left as they are (Hudi)."""
        if not partitions:
            return
        storage = self._table_storage(table, "BatchCreatePartition")
        inputs = [partition_input(storage, p) for p in partitions]

        def create(batch: list[dict[str, Any]]) -> None:
            response = self._call("batch_create_partition", _id(table), DatabaseName=table.database,
                                  TableName=table.name, PartitionInputList=batch)
            _check_batch("BatchCreatePartition", table, response, tolerated=ALREADY_EXISTS)

        self._run_batches(inputs, MAX_PARTITIONS_PER_CHANGE_REQUEST, create)

    def update_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None:
        """BatchUpdatePartition, 100 a request: each partition gets the table's descriptor and its location."""
        if not partitions:
            return
        storage = self._table_storage(table, "BatchUpdatePartition")
        entries = [{"PartitionValueList": list(p.values), "PartitionInput": partition_input(storage, p)}
                   for p in partitions]

        def update(batch: list[dict[str, Any]]) -> None:
            response = self._call("batch_update_partition", _id(table), DatabaseName=table.database,
                                  TableName=table.name, Entries=batch)
            _check_batch("BatchUpdatePartition", table, response, tolerated=None)

        self._run_batches(entries, MAX_PARTITIONS_PER_CHANGE_REQUEST, update)

    def drop_partitions(self, table: TableDef, values: Sequence[tuple[str, ...]]) -> None:
        """BatchDeletePartition, 25 a request. A partition already gone (another writer's sync dropped it)
        is not an error here, where Hudi fails the sync: the catalog is in the state the sync wants."""
        if not values:
            return
        to_delete = [{"Values": list(v)} for v in values]

        def delete(batch: list[dict[str, Any]]) -> None:
            response = self._call("batch_delete_partition", _id(table), DatabaseName=table.database,
                                  TableName=table.name, PartitionsToDelete=batch)
            _check_batch("BatchDeletePartition", table, response, tolerated=NOT_FOUND)

        self._run_batches(to_delete, MAX_DELETE_PARTITIONS_PER_REQUEST, delete)

    def _table_storage(self, table: TableDef, operation: str) -> dict[str, Any]:
        """The table's StorageDescriptor as Glue holds it (Hudi copies it into every partition)."""
        raw = self._existing_table(table.database, table.name, operation)
        storage: dict[str, Any] = raw.get("StorageDescriptor", {})
        return storage

    def _run_batches(self, items: list[T], size: int, run: Callable[[list[T]], None]) -> None:
        """Run `run` on consecutive batches of `size`, `partition_change_parallelism` at a time (Hudi's
        parallelizeChange); the first failure is raised after the running batches end."""
        batches = list(_chunks(items, size))
        workers = min(self.config.partition_change_parallelism, len(batches))
        if workers <= 1:
            for batch in batches:
                run(batch)
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="glue-sync") as pool:
            for future in [pool.submit(run, batch) for batch in batches]:
                future.result()

    def close(self) -> None:
        close = getattr(self.glue, "close", None)
        if close is not None:
            close()


# ---- request shapes ----------------------------------------------------------------------------------------


def glue_columns(columns: Sequence[Column]) -> list[dict[str, Any]]:
    """Glue Columns as Hudi sends them: lower-case types, "" for a missing comment."""
    return [{"Name": c.name, "Type": c.type.lower(), "Comment": c.comment or ""} for c in columns]


def storage_descriptor(table: TableDef, serde_parameters: dict[str, str],
                       base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The table's StorageDescriptor: `base` (the one Glue holds) with pyhudi's fields put over it."""
    storage = copy.deepcopy(dict(base or {}))
    serde = dict(storage.get("SerdeInfo") or {})
    serde.update({"SerializationLibrary": table.serde_library, "Parameters": serde_parameters})
    storage.update({"Columns": glue_columns(table.columns), "Location": s3a_to_s3(table.location),
                    "InputFormat": table.input_format, "OutputFormat": table.output_format, "SerdeInfo": serde})
    return storage


def table_input(table: TableDef, parameters: dict[str, str], storage: dict[str, Any]) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.timezone.utc)
    request: dict[str, Any] = {
        "Name": table.name, "TableType": table.table_type, "Parameters": parameters,
        "PartitionKeys": glue_columns(table.partition_keys), "StorageDescriptor": storage,
        "LastAccessTime": now, "LastAnalyzedTime": now,
    }
    if table.comment is not None:
        request["Description"] = table.comment
    return request


def partition_input(table_storage: Mapping[str, Any], partition: PartitionDef) -> dict[str, Any]:
    """A PartitionInput: a copy of the table's StorageDescriptor with the partition's location."""
    storage = copy.deepcopy(dict(table_storage))
    storage["Location"] = s3a_to_s3(partition.location)
    return {"Values": list(partition.values), "StorageDescriptor": storage}


def _same_table(current: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    keys = ("TableType", "Parameters", "PartitionKeys", "StorageDescriptor", "Description")
    return all(_normal(current.get(k)) == _normal(new.get(k)) for k in keys)


def _normal(value: Any) -> Any:
    """Compare Glue structures ignoring empty values Glue may add or drop (empty lists/maps, "" comments)."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def table_def(database: str, raw: Mapping[str, Any]) -> TableDef:
    """A Glue Table as pyhudi's record (a "" comment reads back as None, since Hudi sends "" for none)."""
    storage = raw.get("StorageDescriptor") or {}
    serde = storage.get("SerdeInfo") or {}
    return TableDef(
        database=database, name=raw["Name"], columns=_columns(storage.get("Columns")),
        partition_keys=_columns(raw.get("PartitionKeys")), location=storage.get("Location", ""),
        input_format=storage.get("InputFormat", ""), output_format=storage.get("OutputFormat", ""),
        serde_library=serde.get("SerializationLibrary", ""), serde_parameters=dict(serde.get("Parameters") or {}),
        parameters=dict(raw.get("Parameters") or {}), table_type=raw.get("TableType", "EXTERNAL_TABLE"),
        comment=raw.get("Description") or None)


def _columns(raw: Sequence[Mapping[str, Any]] | None) -> list[Column]:
    return [Column(c["Name"], c.get("Type", ""), c.get("Comment") or None) for c in raw or []]


# ---- errors ------------------------------------------------------------------------------------------------


def _id(table: TableDef) -> str:
    return f"{table.database}.{table.name}"


def _operation_name(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_"))


def _sync_error(operation: str, what: str, error: BaseException) -> MetaSyncError:
    """MetaSyncError naming the Glue operation, the object and the AWS error code (kept as `.code`)."""
    code = None
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
    detail = f"{code}: {error}" if code else f"{type(error).__name__}: {error}"
    result = MetaSyncError(f"Glue {_operation_name(operation)} failed for {what}: {detail}")
    result.code = code  # type: ignore[attr-defined]
    return result


def _code(error: MetaSyncError) -> str | None:
    return getattr(error, "code", None)


def _check_batch(operation: str, table: TableDef, response: Mapping[str, Any], tolerated: str | None) -> None:
    """A batch call's per-partition `Errors` fail the sync, except those of the `tolerated` code."""
    errors = response.get("Errors") or []
    failed = [e for e in errors if e.get("ErrorDetail", {}).get("ErrorCode") != tolerated]
    if len(failed) < len(errors):
        LOG.info("Glue %s on %s: %d partition(s) skipped (%s)", operation, _id(table), len(errors) - len(failed),
                 tolerated)
    if failed:
        codes = sorted({e.get("ErrorDetail", {}).get("ErrorCode", "?") for e in failed})
        shown = "; ".join(_batch_error(e) for e in failed[:5])
        more = f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""
        error = MetaSyncError(f"Glue {operation} failed for {_id(table)} on {len(failed)} partition(s), "
                              f"{', '.join(codes)}: {shown}{more}")
        error.code = codes[0]  # type: ignore[attr-defined]
        raise error


def _batch_error(entry: Mapping[str, Any]) -> str:
    values = entry.get("PartitionValues") or entry.get("PartitionValueList") or []
    detail = entry.get("ErrorDetail", {})
    return f"{list(values)} {detail.get('ErrorCode', '?')}: {detail.get('ErrorMessage', '')}"


def _chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


__all__ = ["GlueCatalogClient", "GlueSyncConfig", "connect", "import_boto3"]
