"""The typed option registry: every `hoodie.*` key pyhudi understands, declared once.

Users arrive with Apache Hudi Spark datasource options (strings, mostly), so
the boundary accepts strings or Python values, parses each key exactly once
into its declared type, and hands typed values inward. Unknown `hoodie.*` keys
warn instead of failing because real pipelines carry many keys we do not act
on; malformed values fail loudly, naming the key and what it accepts.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

from pyhudi.errors import InvalidConfigError

log = logging.getLogger(__name__)

T = TypeVar("T")


class Group(str, Enum):
    """Where a key belongs, for docs and `pyhudi config` listings."""

    TABLE = "table"
    WRITE = "write"
    INDEX = "index"
    STORAGE = "storage"
    COMPACTION = "compaction"
    CLUSTERING = "clustering"
    CLEAN = "clean"
    ARCHIVAL = "archival"
    LOCK = "lock"
    READ = "read"
    STREAMING = "streaming"
    SYNC = "sync"


Parser = Callable[[str, Any], Any]


_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
               "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3, "t": 1024**4, "tb": 1024**4,
               "tib": 1024**4}


def size_in_bytes(text: str) -> int:
    """Bytes from `104857600`, `100MB`, `100MiB`, `100m` or Spark's `10485760b` (binary units, as Hudi's
    and Spark's size settings are powers of two). Raises ValueError naming the text."""
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _SIZE_UNITS:
        raise ValueError(f"{text!r} is not a size; use bytes or e.g. 100MB")
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def _parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise InvalidConfigError(f"{key}={value!r} is not a boolean; use true or false")


def _parse_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidConfigError(f"{key}={value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            return int(text)
        except ValueError:
            pass
    raise InvalidConfigError(f"{key}={value!r} is not an integer; give a whole number such as 134217728")


def _parse_float(key: str, value: Any) -> float:
    if isinstance(value, bool):
        raise InvalidConfigError(f"{key}={value!r} is not a number")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise InvalidConfigError(f"{key}={value!r} is not a number; give a decimal such as 0.35")


def _parse_str(key: str, value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise InvalidConfigError(f"{key}={value!r} must be a string")


def _parse_list(key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if not isinstance(item, str):
                raise InvalidConfigError(f"{key}: list item {item!r} must be a string")
            out.append(item.strip())
        return tuple(out)
    raise InvalidConfigError(f"{key}={value!r} must be a comma-separated string or a list of strings")


def enum_parser(choices: Iterable[str], aliases: Mapping[str, str] | None = None) -> Parser:
    """Case-insensitive choice parser that canonicalises to the declared spelling."""
    canon = {c.upper(): c for c in choices}
    alias_map = {k.upper(): v for k, v in (aliases or {}).items()}

    def parse(key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise InvalidConfigError(f"{key}={value!r} must be one of {', '.join(canon.values())}")
        text = value.strip()
        upper = text.upper()
        if upper in canon:
            return canon[upper]
        if upper in alias_map:
            return alias_map[upper]
        # Hudi accepts fully qualified class names for strategies; match on the simple name.
        simple = upper.rsplit(".", 1)[-1]
        if simple in alias_map:
            return alias_map[simple]
        if simple in canon:
            return canon[simple]
        raise InvalidConfigError(
            f"{key}={value!r} is not valid; valid values: {', '.join(canon.values())}"
        )

    return parse


PARSERS: dict[str, Parser] = {
    "bool": _parse_bool,
    "int": _parse_int,
    "float": _parse_float,
    "str": _parse_str,
    "list": _parse_list,
}


@dataclass(frozen=True)
class ConfigProperty(Generic[T]):
    """One declared option: its key, how to parse it, its default and a one-line doc."""

    key: str
    kind: str
    default: T | None
    doc: str
    group: Group
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    parser: Parser | None = field(default=None, compare=False, repr=False)
    validator: Callable[[str, Any], None] | None = field(default=None, compare=False, repr=False)

    def parse(self, value: Any) -> T:
        parser = self.parser or PARSERS[self.kind]
        parsed = parser(self.key, value)
        if self.validator is not None:
            self.validator(self.key, parsed)
        return parsed  # type: ignore[no-any-return]


class Registry:
    """All declared keys, addressable by key or alias."""

    def __init__(self) -> None:
        self._by_key: dict[str, ConfigProperty[Any]] = {}

    def register(self, prop: ConfigProperty[T]) -> ConfigProperty[T]:
        names = (prop.key, *prop.aliases)
        clashes = [n for n in names if n in self._by_key] + [n for i, n in enumerate(names) if n in names[:i]]
        if clashes:
            raise ValueError(f"config key declared twice: {', '.join(clashes)}")
        for name in names:
            self._by_key[name] = prop
        return prop

    def lookup(self, key: str) -> ConfigProperty[Any] | None:
        return self._by_key.get(key)

    def properties(self) -> list[ConfigProperty[Any]]:
        seen: dict[str, ConfigProperty[Any]] = {}
        for prop in self._by_key.values():
            seen.setdefault(prop.key, prop)
        return sorted(seen.values(), key=lambda p: (p.group.value, p.key))


REGISTRY = Registry()


def declare(
    key: str,
    kind: str,
    default: Any,
    doc: str,
    group: Group,
    *,
    aliases: Iterable[str] = (),
    choices: Iterable[str] = (),
    choice_aliases: Mapping[str, str] | None = None,
    validator: Callable[[str, Any], None] | None = None,
) -> ConfigProperty[Any]:
    """Declare a key in the global registry (module-level, at import time)."""
    choice_tuple = tuple(choices)
    parser = enum_parser(choice_tuple, choice_aliases) if kind == "enum" else None
    prop: ConfigProperty[Any] = ConfigProperty(
        key=key,
        kind=kind,
        default=default,
        doc=doc,
        group=group,
        aliases=tuple(aliases),
        choices=choice_tuple,
        parser=parser,
        validator=validator,
    )
    return REGISTRY.register(prop)


def non_negative(key: str, value: Any) -> None:
    if value < 0:
        raise InvalidConfigError(f"{key}={value} must not be negative")


def positive(key: str, value: Any) -> None:
    if value <= 0:
        raise InvalidConfigError(f"{key}={value} must be greater than 0")


class Options:
    """Parsed options: typed values by property, plus the raw extras we pass through.

    Built once from a user's mapping; `get` returns the typed value or the
    declared default, so nothing downstream ever sees a raw string.
    """

    def __init__(self, values: Mapping[str, Any], extras: Mapping[str, Any]) -> None:
        self._values = dict(values)
        self.extras = dict(extras)

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None, *, warn_unknown: bool = True) -> Options:
        values: dict[str, Any] = {}
        extras: dict[str, Any] = {}
        for raw_key, raw_value in (options or {}).items():
            key = str(raw_key)
            prop = REGISTRY.lookup(key)
            if prop is None:
                extras[key] = raw_value
                if warn_unknown and key.startswith("hoodie."):
                    msg = f"pyhudi does not know option {key!r}; it is ignored"
                    warnings.warn(msg, UserWarning, stacklevel=3)
                    log.warning(msg)
                continue
            if raw_value is None:
                continue
            parsed = prop.parse(raw_value)
            if prop.key in values and values[prop.key] != parsed:
                raise InvalidConfigError(
                    f"{prop.key} is given twice with different values ({values[prop.key]!r} and "
                    f"{parsed!r}, possibly through an alias); keep one"
                )
            values[prop.key] = parsed
        return cls(values, extras)

    def get(self, prop: ConfigProperty[T]) -> T:
        if prop.key in self._values:
            return self._values[prop.key]  # type: ignore[no-any-return]
        return prop.default  # type: ignore[return-value]

    def is_set(self, prop: ConfigProperty[Any]) -> bool:
        return prop.key in self._values

    def with_values(self, overrides: Mapping[ConfigProperty[Any], Any]) -> Options:
        merged = dict(self._values)
        for prop, value in overrides.items():
            merged[prop.key] = prop.parse(value) if isinstance(value, str) else value
        return Options(merged, self.extras)

    def explicit(self) -> dict[str, Any]:
        return dict(self._values)
