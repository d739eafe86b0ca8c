"""Jackson default pretty printer layout, byte for byte."""

from __future__ import annotations

import json

import pytest

from pyhudi.model.jackson import dumps


def test_empty_containers():
    assert dumps({}) == "{ }"
    assert dumps([]) == "[ ]"
    assert dumps({"a": {}, "b": []}) == '{\n  "a" : { },\n  "b" : [ ]\n}'


def test_scalars():
    assert dumps(None) == "null"
    assert dumps(True) == "true"
    assert dumps(False) == "false"
    assert dumps(0) == "0"
    assert dumps(-12345678901234) == "-12345678901234"
    assert dumps("x") == '"x"'
    assert dumps(0.35) == "0.35"
    assert dumps(2.0) == "2.0"


def test_nested_layout_like_commit_files():
    doc = {"partitionToWriteStats": {"p": [{"fileId": "f", "n": 1}, {"fileId": "g", "n": 2}]},
           "compacted": False, "extraMetadata": {}, "list": ["a", "b"]}
    expected = (
        '{\n'
        '  "partitionToWriteStats" : {\n'
        '    "p" : [ {\n'
        '      "fileId" : "f",\n'
        '      "n" : 1\n'
        '    }, {\n'
        '      "fileId" : "g",\n'
        '      "n" : 2\n'
        '    } ]\n'
        '  },\n'
        '  "compacted" : false,\n'
        '  "extraMetadata" : { },\n'
        '  "list" : [ "a", "b" ]\n'
        '}'
    )
    assert dumps(doc) == expected
    assert not dumps(doc).endswith("\n")


def test_nested_arrays():
    assert dumps([[1, 2], [], [{"a": None}]]) == '[ [ 1, 2 ], [ ], [ {\n  "a" : null\n} ] ]'


def test_key_order_preserved():
    assert dumps({"b": 1, "a": 2}) == '{\n  "b" : 1,\n  "a" : 2\n}'


@pytest.mark.parametrize("text", [
    'say "hi"', "back\\slash", "tab\tnew\nline\r", "café 中文 \U0001F680", "{\"type\":\"record\"}", "a/b",
])
def test_strings_are_valid_json_and_round_trip(text):
    out = dumps({"k": text})
    assert json.loads(out) == {"k": text}


def test_non_ascii_written_raw_like_jackson():
    assert dumps("é中") == '"é中"'


def test_short_escapes_like_jackson():
    assert dumps("\b\f\n\r\t") == '"\\b\\f\\n\\r\\t"'
    assert dumps('"\\') == '"\\"\\\\"'


@pytest.mark.parametrize("char, escaped", [("\x01", "\\u0001"), ("\x1f", "\\u001F"), ("\x0b", "\\u000B"),
                                           ("\x1a", "\\u001A")])
def test_control_chars_use_uppercase_hex_like_jackson(char, escaped):
    """Jackson writes other control characters as \\u00XX with upper-case hex digits."""
    assert dumps(char) == f'"{escaped}"'


def test_keys_escaped_like_values():
    assert dumps({'a"b': 1}) == '{\n  "a\\"b" : 1\n}'
