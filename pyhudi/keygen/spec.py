"""A table's key generator as data: which fields make the record key and partition path, and how.

Engine-neutral (no Spark, no Arrow): `keygen.KeyGenerator` renders keys as Spark column expressions,
`arrow_keys.ArrowKeys` with Arrow compute; both read this spec. The constants are Hudi's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from pyhudi.errors import InvalidConfigError
from pyhudi.keygen import timestamp_keygen as TS
from pyhudi.model.table_config import (
    COMPLEX_KEYGEN,
    CUSTOM_KEYGENS,
    NONPARTITIONED_KEYGEN,
    TIMESTAMP_KEYGENS,
    TableConfig,
)

NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
RECORD_KEY_COL = "_hoodie_record_key"
PARTITION_COL = "_hoodie_partition_path"
_K = TypeVar("_K", bound="KeySpec")


@dataclass(frozen=True)
class KeySpec:
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    keygen_class: str
    hive_style: bool
    urlencode: bool
    # Per partition field: SIMPLE or TIMESTAMP (only TIMESTAMP keygens and CustomKeyGenerator have any).
    partition_types: tuple[str, ...] = ()
    timestamp: TS.TimestampSettings | None = None

    @classmethod
    def for_table(cls: type[_K], config: TableConfig) -> _K:
        types, settings = _partition_types(config)
        return cls(config.record_key_fields, config.partition_fields, config.keygen_class,
                   config.hive_style_partitioning, config.urlencode_partitions, types, settings)

    @property
    def uses_timestamps(self) -> bool:
        return "TIMESTAMP" in self.partition_types

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields) and self.keygen_class != NONPARTITIONED_KEYGEN

    @property
    def is_complex(self) -> bool:
        return self.keygen_class == COMPLEX_KEYGEN or (
            len(self.record_key_fields) > 1 and self.keygen_class != NONPARTITIONED_KEYGEN)

    def key_and_partition_fields(self, need_partition: bool = True) -> list[tuple[str, str]]:
        """(role, field) of every field the keys read: record key fields, then partition fields."""
        wanted = [("record key", f) for f in self.record_key_fields]
        if need_partition and self.is_partitioned:
            wanted += [("partition path", f) for f in self.partition_fields]
        return wanted


PARTITION_SPEC_KEY = "hoodie.datasource.write.partitionpath.field"


def _partition_types(config: TableConfig) -> tuple[tuple[str, ...], TS.TimestampSettings | None]:
    """The partition field kinds and timestamp settings of a TimestampBased or Custom key generator,
    refusing what Hudi's constructors refuse (several fields for TimestampBased, untyped Custom fields)."""
    if config.keygen_class in TIMESTAMP_KEYGENS:
        if len(config.record_key_fields) > 1 or len(config.partition_fields) != 1:
            raise InvalidConfigError(
                f"{config.keygen_class} takes exactly one record key field and one partition field (got "
                f"{','.join(config.record_key_fields)!r} / {','.join(config.partition_fields)!r}); use "
                "CustomKeyGenerator (field:TIMESTAMP) for more")
        return ("TIMESTAMP",), TS.settings_from(config.keygen_options)
    if config.keygen_class not in CUSTOM_KEYGENS or not config.partition_fields:
        return (), None
    types = custom_partition_types(config.keygen_options.get(PARTITION_SPEC_KEY), config.partition_fields)
    settings = TS.settings_from(config.keygen_options) if "TIMESTAMP" in types else None
    return types, settings


def custom_partition_types(spec: str | None, names: tuple[str, ...]) -> tuple[str, ...]:
    """`f1:simple,f2:TIMESTAMP` -> ("SIMPLE", "TIMESTAMP") for the fields `names`."""
    if not spec:
        raise InvalidConfigError(
            f"CustomKeyGenerator needs {PARTITION_SPEC_KEY} with a type per field, e.g. "
            f"{','.join(n + ':SIMPLE' for n in names)} (Hudi does not store the types in table version 6); "
            "pass it on every write")
    types = []
    for part in (p.strip() for p in spec.split(",")):
        pieces = part.split(":")
        if len(pieces) != 2 or pieces[1].strip().upper() not in ("SIMPLE", "TIMESTAMP"):
            raise InvalidConfigError(
                f"{PARTITION_SPEC_KEY}={spec!r}: {part!r} is not field:SIMPLE or field:TIMESTAMP, which "
                "CustomKeyGenerator needs for every field (e.g. city:simple,ts:timestamp)")
        types.append(pieces[1].strip().upper())
    if len(types) != len(names):
        raise InvalidConfigError(f"{PARTITION_SPEC_KEY}={spec!r} does not name the table's partition fields "
                                 f"{','.join(names)}")
    return tuple(types)
