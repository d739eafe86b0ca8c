"""delete_partition: which partitions a write deletes, and which file groups that replaces.

Hudi 0.14's datasource (`HoodieSparkSqlWriter`, DELETE_PARTITION branch) takes the partitions from
`hoodie.datasource.write.partitions.to.delete` (split on ",", entries with `*` resolved against the
table's partitions by `resolvePartitionWildcards`), or else from the partition paths of the DataFrame's
records. `SparkDeletePartitionCommitActionExecutor` then refuses partitions under a pending compaction or
clustering and commits a replacecommit (operationType DELETE_PARTITION, no write stats) whose
partitionToReplaceFileIds lists every live file group of each partition; a named partition that does not
exist is kept with an empty list. Readers hide replaced groups; the cleaner deletes them later.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pyhudi.errors import HudiError, InvalidConfigError
from pyhudi.view.file_system_view import FileSystemView

OPTION = "hoodie.datasource.write.partitions.to.delete"
WILDCARD = "*"


class PendingTableServiceError(HudiError):
    """A partition to delete has file groups under a pending compaction or clustering."""


def split_option(value: str) -> list[str]:
    """The option's entries as Hudi's Java `String.split(",")` gives them: no trimming (a partition path
    may hold spaces), trailing empty entries dropped."""
    parts = value.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def wildcard_regex(pattern: str) -> re.Pattern[str]:
    """Hudi's rule: every character is literal except `*`, which matches any run of characters
    (`/` included, so `2024/*` reaches every partition below 2024/); the whole path must match."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split(WILDCARD)))


def resolve(requested: Sequence[str], existing: Iterable[str]) -> list[str]:
    """Named partitions (kept even if absent, as Hudi 0.14 does), then the existing partitions each
    wildcard entry matches, without duplicates, in that order."""
    existing = list(existing)
    out = [p for p in requested if WILDCARD not in p]
    for pattern in (p for p in requested if WILDCARD in p):
        regex = wildcard_regex(pattern)
        out.extend(p for p in existing if regex.fullmatch(p))
    return list(dict.fromkeys(out))


def refuse_empty(partitions: Sequence[str], requested: Sequence[str] | None, table: str) -> None:
    """Nothing to delete is an error before any instant exists (Hudi fails inside its executor on an empty
    list and leaves a pending instant behind)."""
    if partitions:
        return
    if requested is None:
        raise InvalidConfigError(
            f"delete_partition on {table}: {OPTION} is not set and the DataFrame has no records to take "
            f"partitions from; set {OPTION} (e.g. '2024/01/01,2024/01/02' or '2024/*') or pass records of "
            "the partitions to delete. Nothing was changed.")
    raise InvalidConfigError(
        f"delete_partition on {table}: {OPTION}={','.join(requested)!r} names no partition (wildcards "
        "matched none of the table's partitions); give existing partition paths. Nothing was changed.")


def check_no_pending_services(view: FileSystemView, partitions: Sequence[str]) -> None:
    """Hudi refuses to drop partitions with file groups under a pending compaction or clustering: the
    plan would write them back (or fail) after the partition is gone."""
    wanted = set(partitions)
    offending = sorted({ts for (part, _), ts in {**view.pending_compaction_file_ids(),
                                                  **view.pending_clustering_file_ids()}.items()
                        if part in wanted})
    if offending:
        raise PendingTableServiceError(
            f"cannot delete partitions {sorted(wanted)}: pending compaction/clustering instant(s) "
            f"{', '.join(offending)} include file groups of them. Complete them first (`pyhudi compaction PATH "
            "run` / `pyhudi clustering PATH run`) or roll them back. Nothing was changed.")


def replaced_file_ids(view: FileSystemView, partitions: Sequence[str]) -> dict[str, list[str]]:
    """Every live file group of each partition (Hudi's getAllExistingFileIds: the latest file slices);
    a partition without any keeps an empty list, as in Hudi's commit metadata."""
    existing = set(view.existing_partitions(partitions))
    return {part: sorted({g.file_id for g in view.live_groups(part)}) if part in existing else []
            for part in partitions}
