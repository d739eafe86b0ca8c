"""Schema errors name types as Spark's `simpleString` does, computed without pyspark (io/schema.py's
`_SqlNames`), so both engines print the same words; checked here against pyspark's own types."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyhudi.errors import SchemaMismatchError
from pyhudi.io.schema import _convert, _expand, _SqlNames, evolve

_DEC = {"type": "fixed", "name": "d", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}
_TYPES = [
    "boolean", "int", "long", "float", "double", "string", "bytes", ["null", "int"], ["int", "long", "null"],
    ["float", "double"], ["string", "int"], {"type": "int", "logicalType": "date"},
    {"type": "long", "logicalType": "timestamp-millis"}, {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "local-timestamp-micros"}, {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"}, {"type": "bytes", "logicalType": "decimal", "precision": 38,
                                                     "scale": 0},
    _DEC, {"type": "fixed", "name": "f", "size": 4}, {"type": "enum", "name": "e", "symbols": ["A", "B"]},
    {"type": "array", "items": ["null", {"type": "map", "values": "long"}]},
    {"type": "record", "name": "r", "fields": [{"name": "é/1", "type": "string"}, {"name": "n", "type": "null"}]},
    {"type": "long", "logicalType": "unknown-logical"},
]


@pytest.mark.parametrize("avro", _TYPES, ids=[str(i) for i in range(len(_TYPES))])
def test_names_match_spark_simple_string(avro: object) -> None:
    from pyhudi.engine.spark.schema import _types

    record = _expand({"type": "record", "name": "t", "fields": [{"name": "c", "type": avro}]}, None, {})
    column = record["fields"][0]["type"]
    assert _convert(column, _SqlNames())[0] == _convert(column, _types())[0].simpleString()


def test_evolution_error_names_spark_types_without_importing_pyspark() -> None:
    code = (
        "import sys, importlib.abc\n"
        "class B(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in ('pyspark', 'py4j'): raise ImportError(name)\n"
        "sys.meta_path.insert(0, B())\n"
        "from pyhudi.io.schema import evolve\n"
        "from pyhudi.errors import SchemaMismatchError\n"
        "rec = lambda t: {'type': 'record', 'name': 'r', 'namespace': 'n', 'fields': [{'name': 'x', 'type': t}]}\n"
        "try:\n"
        "    evolve(rec('long'), rec('string'))\n"
        "except SchemaMismatchError as e:\n"
        "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "Column 'x' is bigint in the table but string in the incoming batch" in out


def test_evolution_error_names_decimal_and_nested_types() -> None:
    def rec(t: object) -> dict:
        return {"type": "record", "name": "r", "namespace": "n", "fields": [{"name": "x", "type": t}]}

    with pytest.raises(SchemaMismatchError, match=r"'x\.element' is decimal\(10,2\) in the table but "
                                                  r"decimal\(12,1\)"):
        evolve(rec({"type": "array", "items": _DEC}),
               rec({"type": "array", "items": dict(_DEC, precision=12, scale=1, size=6)}))
