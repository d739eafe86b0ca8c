"""One exception root for everything pyhudi raises on purpose.

Every message names the offending value and says how to fix it, because the
people reading them are running pipelines, not reading our source.
"""

from __future__ import annotations

import re


class HudiError(Exception):
    """Root of all pyhudi errors."""


class InvalidConfigError(HudiError, ValueError):
    """A `hoodie.*` option has a malformed value or an invalid combination."""


class TableNotFoundError(HudiError):
    """The path holds no Hudi table (no `.hoodie/hoodie.properties`)."""


class UnsupportedTableError(HudiError):
    """The table exists but uses a version or feature pyhudi cannot handle."""


class SchemaMismatchError(HudiError):
    """A batch's schema cannot be written into the table's schema."""


class InvalidRecordError(HudiError):
    """A record cannot be written: null/empty key, missing column, ..."""


class MalformedRecordError(InvalidRecordError):
    """Input records that cannot become Hudi records (unparseable, not fitting the schema, no key).

    Raised by the streamer when the error table is off: the message names the landing file(s), how
    many records, an example and why, and how to quarantine them instead.
    """


class CommitConflictError(HudiError):
    """Another writer committed to the same file groups first (OCC)."""


class ClusteringUpdateConflictError(CommitConflictError):
    """An update targets a file group under pending clustering (reject strategy)."""


class TimelineError(HudiError):
    """The timeline is in a state that forbids the requested transition."""


class InstantTimeTakenError(TimelineError):
    """Another writer took this instant time (the same moment, another action); nothing of this instant
    was left behind, so the caller takes the next time."""


class InstantNotFoundError(TimelineError):
    """A requested instant is not on the timeline (or was archived/cleaned)."""


class CorruptFileError(HudiError):
    """A table file cannot be decoded (log block, Avro plan, commit JSON)."""


class JavaNotFoundError(HudiError):
    """No usable Java runtime for Spark was found."""


class CompactionInProgressError(TimelineError):
    """Another live process is executing this compaction plan (its heartbeat is fresh)."""


class InstantAlreadyCompletedError(TimelineError):
    """Completing an instant found its completed file already there with other content: another process
    completed the same instant first (two executors of one plan). This attempt's files are not part of
    the table; it must not roll the instant back (that would undo the other process's commit)."""


class WriteRolledBackError(CommitConflictError):
    """A file this write needed (its own log file, or one the index was reading) was deleted by a
    concurrent rollback: the write cannot commit consistently and is retried as a whole."""


class HollowCommitError(TimelineError):
    """An incremental read would skip a write that is still in flight (a "hollow commit")."""


class StorageError(HudiError, OSError):
    """A storage operation failed for good (after retries): the message names the operation, the path
    and what to check. Also an OSError, so code that handles I/O errors keeps handling it."""


class BucketNotFoundError(StorageError):
    """The bucket or container of a table URI does not exist (S3 NoSuchBucket, Azure ContainerNotFound,
    GCS NoSuchBucket): not the same as a missing table, which `TableNotFoundError` reports."""


class ConditionalWriteUnsupportedError(StorageError):
    """The store does not support conditional writes (If-None-Match / If-Match), which the operation
    needs to be safe with concurrent writers."""


class MetaSyncError(HudiError):
    """A meta sync (Hive Metastore, Glue) failed: Hudi's HoodieMetaSyncException. Raised by a write only
    after its commit exists (`instant`): the rows are in the table and retrying the write would write them
    twice; the next commit's sync, or `pyhudi sync`, catches the catalog up. `failures` maps each sync tool
    that failed to its error."""

    def __init__(self, message: str, instant: str | None = None,
                 failures: dict[str, BaseException] | None = None) -> None:
        super().__init__(message)
        self.instant = instant
        self.failures = dict(failures or {})


_WORKER_ERROR = re.compile(r"pyhudi\.errors\.(\w+): (.*)")


def from_worker(exc: BaseException) -> HudiError | None:
    """The HudiError a Spark task raised, which reaches the driver only as text inside PySpark's
    PythonException (or a Py4J error): the same class again, with the task's message, so a caller can
    catch it as it would on the driver. None when the failure was not a HudiError."""
    if isinstance(exc, HudiError):
        return None
    found = _WORKER_ERROR.findall(str(exc))
    if not found:
        return None
    name, message = found[-1]
    cls = globals().get(name)
    if not (isinstance(cls, type) and issubclass(cls, HudiError)):
        return None
    return cls(f"{message} (raised in a Spark task)")


class PostCommitWarning(UserWarning):
    """Work after a write's commit (inline clustering or compaction, the cleaner, archival) failed.

    The write itself succeeded: its commit file exists and its rows are visible, so retrying it would
    write them twice. Hudi's write client lets such failures propagate from `postCommit` /
    `runTableServicesInline` after the commit; pyhudi never raises them from the write, because an
    exception out of `pyhudi.write` (or a streaming micro-batch) reads as "the write failed". The
    failure is logged, issued as this warning (`warnings.catch_warnings(record=True)` or
    `-W error::pyhudi.errors.PostCommitWarning` to see it) and kept on the WriteResult; the next
    commit, or `pyhudi.compact` / `cluster` / `clean` / `archive`, runs the service again."""

    def __init__(self, instant: str, service: str, error: BaseException) -> None:
        super().__init__(f"write {instant} committed; its {service} afterwards failed and was left for the next "
                         f"commit or a manual run: {type(error).__name__}: {error}")
        self.instant = instant
        self.service = service
        self.error = error
