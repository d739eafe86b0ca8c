"""Partition paths: listing them, and pruning them before listing.

Filters on partition columns are applied level by level while walking the
directory tree, so a query on `city = 'sf'` lists one directory, not all.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyhudi.errors import InvalidConfigError
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage

_OPS = ("=", "==", "!=", "<", "<=", ">", ">=", "in", "not in")


@dataclass(frozen=True)
class Condition:
    column: str
    op: str
    value: Any

    def matches(self, text: str | None) -> bool:
        if self.op in ("in", "not in"):
            values = self.value if isinstance(self.value, (list, tuple, set)) else [self.value]
            hit = any(_compare(text, v) == 0 for v in values)
            return hit if self.op == "in" else not hit
        cmp = _compare(text, self.value)
        if cmp is None:
            return self.op == "!="
        return {
            "=": cmp == 0, "==": cmp == 0, "!=": cmp != 0, "<": cmp < 0, "<=": cmp <= 0,
            ">": cmp > 0, ">=": cmp >= 0,
        }[self.op]


def _compare(text: str | None, value: Any) -> int | None:
    """Compare a partition value (always text on disk) with a filter value, numerically when both are numbers."""
    if text is None or value is None:
        return None
    try:
        left, right = float(text), float(value)
        return (left > right) - (left < right)
    except (TypeError, ValueError):
        right_s = str(value).lower() if isinstance(value, bool) else str(value)
        return (text > right_s) - (text < right_s)


class PartitionFilter:
    """Conjunction of conditions on partition columns; other columns are ignored here."""

    def __init__(self, conditions: Sequence[Condition]) -> None:
        self.conditions = list(conditions)

    @classmethod
    def from_tuples(cls, filters: Sequence[Sequence[Any]] | None) -> PartitionFilter | None:
        if not filters:
            return None
        conds = []
        for f in filters:
            if len(f) != 3:
                raise InvalidConfigError(f"filter {f!r} must be a (column, op, value) tuple")
            column, op, value = f
            op_norm = str(op).strip().lower()
            if op_norm not in _OPS:
                raise InvalidConfigError(f"filter operator {op!r} is not supported; use one of {', '.join(_OPS)}")
            conds.append(Condition(str(column), op_norm, value))
        return cls(conds)

    def accepts(self, column: str, value: str | None) -> bool:
        return all(c.matches(value) for c in self.conditions if c.column == column)


DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def partition_value(config: TableConfig, field: str, dir_name: str) -> str | None:
    """The value a partition directory stands for (None for Hudi's default partition)."""
    text = dir_name
    if config.hive_style_partitioning and "=" in text:
        text = text.split("=", 1)[1]
    if config.urlencode_partitions:
        text = urllib.parse.unquote_plus(text)
    return None if text == DEFAULT_PARTITION else text


def list_partitions(storage: Storage, config: TableConfig, pfilter: PartitionFilter | None = None) -> list[str]:
    if not config.is_partitioned:
        return [""]
    fields = config.partition_fields
    level = [""]
    for depth, field in enumerate(fields):
        nxt = []
        for parent in level:
            for info in storage.list_dir(parent):
                if not info.is_dir or info.name.startswith((".", "_")) and not info.name.startswith(DEFAULT_PARTITION):
                    continue
                if depth == 0 and info.name == ".hoodie":
                    continue
                if pfilter is not None and not pfilter.accepts(field, partition_value(config, field, info.name)):
                    continue
                nxt.append(info.path)
        level = nxt
    return sorted(level)


def partition_depth(partition_path: str) -> int:
    return 0 if not partition_path else partition_path.count("/") + 1
