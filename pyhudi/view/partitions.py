"""Partition paths: listing them, and pruning them before listing.

Filters on partition columns are applied level by level while walking the
directory tree, so a query on `city = 'sf'` lists one directory, not all.
A directory is pruned only when no value it can hold passes the filter as
Spark evaluates it on the column's own type (partition_values.py); anything
pyhudi cannot decide exactly keeps the directory, and the row filter applied
after the read decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import StructType

from pyhudi.errors import InvalidConfigError
from pyhudi.io import schema as S
from pyhudi.keygen.keygen import field_type
from pyhudi.keygen.path_escape import unescape_path_name
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage
from pyhudi.view.partition_values import (
    DEFAULT_PARTITION,
    UNKNOWN,
    Kind,
    candidates,
    compare,
    equality_literal,
    kind_of,
    literal,
)

_OPS = ("=", "==", "!=", "<", "<=", ">", ">=", "in", "not in")
_ORDER = {"=": lambda c: c == 0, "==": lambda c: c == 0, "!=": lambda c: c != 0, "<": lambda c: c < 0,
          "<=": lambda c: c <= 0, ">": lambda c: c > 0, ">=": lambda c: c >= 0}


@dataclass(frozen=True)
class Condition:
    column: str
    op: str
    value: Any

    def holds(self, kind: Kind, value: Any) -> Any:
        """Spark's three-valued answer for a row whose column is `value`: True, False, None (null)
        or UNKNOWN (not modelled: the partition must be kept)."""
        if self.op in ("in", "not in"):
            found = self._is_in(kind, value)
            if self.op == "in" or found is UNKNOWN or found is None:
                return found
            return not found
        lit = equality_literal(kind, self.value) if self.op in ("=", "==", "!=") else literal(self.value)
        cmp = compare(kind, value, *lit)
        return cmp if cmp is UNKNOWN or cmp is None else _ORDER[self.op](cmp)

    def may_match_default_of_unknown_type(self) -> bool:
        """For a column of a type pruning does not model, the default partition holds nulls and,
        for text-like types, values such as ''. Only `=` and `in` without a string literal decide:
        null equals nothing, and no other literal equals such text under any coercion."""
        if self.op not in ("=", "==", "in"):
            return True
        values = list(self.value) if isinstance(self.value, (list, tuple, set, frozenset)) else [self.value]
        return not values or any(isinstance(v, str) for v in values)

    def _is_in(self, kind: Kind, value: Any) -> Any:
        values = list(self.value) if isinstance(self.value, (list, tuple, set, frozenset)) else [self.value]
        lits = [equality_literal(kind, v) for v in values]
        if not lits or len({k for k, _ in lits if k != "null"}) > 1:
            return UNKNOWN  # empty lists and mixed literal types: Spark's rewrite/coercion not modelled
        answers = [compare(kind, value, k, v) for k, v in lits]
        if UNKNOWN in answers:
            return UNKNOWN
        if 0 in answers:
            return True
        return None if None in answers else False


class PartitionFilter:
    """Conjunction of conditions on partition columns; other columns are ignored here.

    `kinds` maps a partition column to its type (see `bind`); a column without one is never pruned.
    """

    def __init__(self, conditions: Sequence[Condition], kinds: Mapping[str, Kind] | None = None) -> None:
        self.conditions = list(conditions)
        self.kinds = dict(kinds) if kinds is not None else None

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

    def bind(self, schema: StructType, fields: Sequence[str]) -> PartitionFilter:
        """This filter with the types of the partition `fields` in `schema` (the schema rows are
        read with, so pruning agrees with the row filter)."""
        kinds = {f: k for f in fields if (k := kind_of(field_type(schema, f))) is not None}
        return PartitionFilter(self.conditions, kinds)

    def accepts(self, column: str, value: str | None) -> bool:
        """Whether a directory whose decoded text for `column` is `value` (None: default
        partition) may hold a row that passes every condition on `column`."""
        conds = [c for c in self.conditions if c.column == column]
        kind = (self.kinds or {}).get(column)
        if not conds:
            return True
        if kind is None:
            return value is not None or all(c.may_match_default_of_unknown_type() for c in conds)
        options = candidates(kind, value)
        if options is None:
            return True
        return any(all(c.holds(kind, v) in (True, UNKNOWN) for c in conds) for v in options)



def partition_value(config: TableConfig, field: str, dir_name: str) -> str | None:
    """The value a partition directory stands for (None for Hudi's default partition)."""
    text = dir_name
    if config.hive_style_partitioning and "=" in text:
        text = text.split("=", 1)[1]
    if config.urlencode_partitions:
        text = unescape_path_name(text)
    return None if text == DEFAULT_PARTITION else text


def list_partitions(storage: Storage, config: TableConfig, pfilter: PartitionFilter | None = None) -> list[str]:
    """Partition paths, pruned by `pfilter` (typed by `PartitionFilter.bind`; an unbound filter
    takes the types of the table's create schema, or prunes nothing without one)."""
    if not config.is_partitioned:
        return [""]
    fields = config.partition_fields
    if pfilter is not None and pfilter.kinds is None:
        pfilter = pfilter.bind(_create_schema(config), fields)
    level = [""]
    for depth, field_name in enumerate(fields):
        nxt = []
        for parent in level:
            for info in storage.list_dir(parent):
                if not info.is_dir or info.name.startswith((".", "_")) and not info.name.startswith(DEFAULT_PARTITION):
                    continue
                if depth == 0 and info.name == ".hoodie":
                    continue
                if pfilter is not None and not _dir_accepted(pfilter, config, field_name, info.name):
                    continue
                nxt.append(info.path)
        level = nxt
    return sorted(level)


def _dir_accepted(pfilter: PartitionFilter, config: TableConfig, field_name: str, dir_name: str) -> bool:
    if config.hive_style_partitioning and not dir_name.startswith(f"{field_name}="):
        return True  # not a directory this field's values produce (e.g. a value with '/'): keep it
    return pfilter.accepts(field_name, partition_value(config, field_name, dir_name))


def _create_schema(config: TableConfig) -> StructType:
    if not config.create_schema:
        return StructType([])
    return S.avro_to_spark(S.from_json(config.create_schema))


def partition_depth(partition_path: str) -> int:
    return 0 if not partition_path else partition_path.count("/") + 1
