"""Partition paths: finding them (partition_discovery.py) and pruning them by a filter.

A partition path is mapped back to one value per partition field (`field_texts`): hive-style
paths split at `/<field>=`, a one-field path is the value itself at any depth (a value may hold
`/`), other multi-field paths split at `/` only when the depth equals the number of fields.
A partition is pruned only when no value it can hold passes the filter as Spark evaluates it on
the column's own type (partition_values.py); a path, field or value pyhudi cannot map exactly is
kept, and the row filter applied after the read decides. Directories are skipped before they
are listed only where their level names their field exactly (`_walk_pruner`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pyhudi.errors import HudiError, InvalidConfigError
from pyhudi.io import schema as S
from pyhudi.keygen.path_escape import unescape_path_name
from pyhudi.keygen.spec import PARTITION_SPEC_KEY, custom_partition_types
from pyhudi.model.table_config import CUSTOM_KEYGENS, TIMESTAMP_KEYGENS, TableConfig
from pyhudi.storage import FileInfo, Storage
from pyhudi.view.partition_discovery import discover_partitions
from pyhudi.view.partition_values import (
    DEFAULT_PARTITION,
    UNKNOWN,
    Kind,
    candidates,
    compare,
    equality_literal,
    kind_of,
    kind_of_spark,
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

    def bind(self, schema: pa.Schema | Any, fields: Sequence[str]) -> PartitionFilter:
        """This filter with the types of the partition `fields` in `schema` (the schema rows are
        read with, so pruning agrees with the row filter): an Arrow schema, or a Spark StructType
        (read by its type names; this module does not import pyspark)."""
        kinds = {f: k for f in fields if (k := column_kind(schema, f)) is not None}
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



def column_kind(schema: pa.Schema | Any, dotted: str) -> Kind | None:
    """The pruning kind of the (possibly nested, `a.b`) column `dotted` of an Arrow schema or a Spark
    StructType; None when absent or not modelled."""
    if isinstance(schema, pa.Schema):
        current: Any = pa.struct(list(schema))
        for part in dotted.split("."):
            if not pa.types.is_struct(current) or current.get_field_index(part) < 0:
                return None
            current = current.field(part).type
        return kind_of(current)
    current = schema
    for part in dotted.split("."):
        named = {f.name: f.dataType for f in getattr(current, "fields", None) or []}
        if part not in named:
            return None
        current = named[part]
    return kind_of_spark(current)


def partition_value(config: TableConfig, field: str, dir_name: str) -> str | None:
    """The value a partition directory stands for (None for Hudi's default partition)."""
    text = dir_name
    if config.hive_style_partitioning and "=" in text:
        text = text.split("=", 1)[1]
    return _decode(config, text)


def _decode(config: TableConfig, text: str) -> str | None:
    if config.urlencode_partitions:
        text = unescape_path_name(text)
    return None if text == DEFAULT_PARTITION else text


def field_texts(config: TableConfig, partition_path: str) -> list[str] | None:
    """The raw (still escaped) text of each partition field in `partition_path`, or None when the
    path cannot be split unambiguously. Hive-style paths split at the `/<field>=` boundaries (each
    exactly once, in order); other paths of one field are the value itself at any depth; other
    multi-field paths split at `/` only when the depth equals the number of fields."""
    fields = config.partition_fields
    if config.hive_style_partitioning:
        return _split_hive(partition_path, fields)
    if len(fields) == 1:
        return [partition_path]
    parts = partition_path.split("/")
    return parts if len(parts) == len(fields) else None


def _split_hive(path: str, fields: Sequence[str]) -> list[str] | None:
    first = f"{fields[0]}="
    if not path.startswith(first):
        return None
    rest, texts = path[len(first):], []
    for name in fields[1:]:
        marker = f"/{name}="
        if rest.count(marker) != 1:
            return None  # absent, or a value holds the marker too: ambiguous
        head, rest = rest.split(marker, 1)
        texts.append(head)
    return [*texts, rest]


def partition_field_values(config: TableConfig, partition_path: str) -> dict[str, str | None] | None:
    """Field -> decoded value (None: default partition) of a partition path, None if ambiguous."""
    texts = field_texts(config, partition_path)
    if texts is None:
        return None
    return {f: _decode(config, t) for f, t in zip(config.partition_fields, texts)}


def prunable_fields(config: TableConfig) -> frozenset[str]:
    """Fields whose directory text is the column's own text: not those a timestamp key generator
    formats (the path holds e.g. `2024/01/02`, the column an epoch or another format)."""
    fields = config.partition_fields
    if config.keygen_class in TIMESTAMP_KEYGENS:
        return frozenset()
    if config.keygen_class in CUSTOM_KEYGENS:
        try:
            types = custom_partition_types(config.keygen_options.get(PARTITION_SPEC_KEY), fields)
        except HudiError:
            return frozenset()
        return frozenset(f for f, t in zip(fields, types) if t == "SIMPLE")
    return frozenset(fields)


def partition_accepted(pfilter: PartitionFilter, config: TableConfig, partition_path: str,
                       prunable: frozenset[str]) -> bool:
    """Whether a partition may hold a row passing `pfilter`; a path pyhudi cannot map to values
    is kept (the row filter decides)."""
    values = partition_field_values(config, partition_path)
    if values is None:
        return True
    return all(pfilter.accepts(f, v) for f, v in values.items() if f in prunable)


def list_partitions(storage: Storage, config: TableConfig, pfilter: PartitionFilter | None = None) -> list[str]:
    """Partition paths, pruned by `pfilter` (typed by `PartitionFilter.bind`; an unbound filter
    takes the types of the table's create schema, or prunes nothing without one)."""
    return sorted(list_partition_files(storage, config, pfilter))


def list_partition_files(storage: Storage, config: TableConfig, pfilter: PartitionFilter | None = None
                         ) -> dict[str, list[FileInfo] | None]:
    """Partition path -> the files directly in it as the walk listed them (partition_discovery.py),
    pruned by `pfilter`; a non-partitioned table is `{"": None}` (not listed yet)."""
    if not config.is_partitioned:
        return {"": None}
    if pfilter is not None and pfilter.kinds is None:
        pfilter = pfilter.bind(_create_schema(config), config.partition_fields)
    if pfilter is None:
        return dict(discover_partitions(storage))
    prunable = prunable_fields(config)
    found = discover_partitions(storage, _walk_pruner(pfilter, config, prunable))
    return {p: files for p, files in found.items() if partition_accepted(pfilter, config, p, prunable)}


def _walk_pruner(pfilter: PartitionFilter, config: TableConfig, prunable: frozenset[str]
                 ) -> Callable[[str], bool] | None:
    """Pruning while walking, on the leading levels that name their field exactly: a field's text
    holds no `/` when it is URL-encoded or its column is not text-like (numbers, dates, booleans,
    timestamps as epoch micros), so level d is field d (`field=value` when hive-style) as long as
    every field before it is such a field. A string value may hold `/` (directory `a` may hold the
    value `a/b`), so from the first such field on only the partitions found are filtered."""
    fields = config.partition_fields
    kinds = pfilter.kinds or {}

    def exact(name: str) -> bool:
        kind = kinds.get(name)
        return name in prunable and kind is not None and (config.urlencode_partitions or kind.name != "string")

    aligned = 0
    while aligned < len(fields) and exact(fields[aligned]):
        aligned += 1
    if aligned == 0:
        return _prefix_pruner(pfilter, config, prunable)

    def descend(path: str) -> bool:
        for name, field_name in zip(path.split("/")[:aligned], fields):
            if config.hive_style_partitioning and not name.startswith(f"{field_name}="):
                return True  # not a directory this table's key generator makes: keep walking
            if not pfilter.accepts(field_name, partition_value(config, field_name, name)):
                return False
        return True

    return descend


def _prefix_pruner(pfilter: PartitionFilter, config: TableConfig, prunable: frozenset[str]
                   ) -> Callable[[str], bool] | None:
    """Pruning while walking for a first field whose text may hold `/` (a string, not URL-encoded):
    below a directory whose text so far is `x` (one field: the whole path; several: the first level
    only), the first field's value is `x` or starts with `x/`. A subtree is skipped only when an `=`
    or `in` on that field lists strings and none of them is `x` or starts with `x/`."""
    first = config.partition_fields[0]
    kind = (pfilter.kinds or {}).get(first)
    if first not in prunable or kind is None or kind.name != "string":
        return None
    wanted = _listed_strings(pfilter, first)
    if wanted is None:
        return None
    single = len(config.partition_fields) == 1
    prefix = f"{first}=" if config.hive_style_partitioning else ""

    def descend(path: str) -> bool:
        text = path if single else path.split("/", 1)[0]
        if not text.startswith(prefix):
            return True  # not a directory this table's key generator makes: keep walking
        value = text[len(prefix):]
        if value == DEFAULT_PARTITION or (not single and "/" in path):
            return True  # the default partition may hold '' (decided per partition); deeper: undecided
        return any(w == value or w.startswith(value + "/") for w in wanted)

    return descend


def _listed_strings(pfilter: PartitionFilter, column: str) -> list[str] | None:
    """The string literals of the most selective `=` / `in` condition on `column` (None literals match
    nothing), or None when no such condition exists or one lists a non-string literal."""
    best: list[str] | None = None
    for c in pfilter.conditions:
        if c.column != column or c.op not in ("=", "==", "in"):
            continue
        values = list(c.value) if c.op == "in" and isinstance(c.value, (list, tuple, set, frozenset)) else [c.value]
        if not values or not all(v is None or isinstance(v, str) for v in values):
            continue
        strings = [v for v in values if isinstance(v, str)]
        if best is None or len(strings) < len(best):
            best = strings
    return best


def _create_schema(config: TableConfig) -> pa.Schema:
    if not config.create_schema:
        return pa.schema([])
    return S.avro_to_arrow(S.from_json(config.create_schema))


def partition_depth(partition_path: str) -> int:
    return 0 if not partition_path else partition_path.count("/") + 1
