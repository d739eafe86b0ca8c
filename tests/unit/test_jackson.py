"""Jackson default pretty printer layout, byte for byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _reference(value, indent=0):
    """Jackson's layout in its plainest form, a call per value: the printer must give these bytes."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        entries = [f"{pad}  {dumps(str(k))} : {_reference(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(entries) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)):
        return "[ " + ", ".join(_reference(v, indent) for v in value) + " ]" if value else "[ ]"
    return dumps(value)


class _Text(str):
    pass


_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=6) | st.sampled_from(["a\x00b", 'q"', "\\", "\u2028", "é"])
            | st.text(max_size=3).map(_Text))
_KEYS = st.text(max_size=4) | st.sampled_from(["fileId", "a\nb", "1", "True"]) | st.integers(0, 2) | st.booleans()
_DOCS = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                     | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(_DOCS)
def test_printer_equals_the_reference_layout(doc):
    """Names and values of every kind at every depth, the same name at several depths, keys that hash like
    others (1 and True), str subclasses: the printer that makes each name once per depth gives the bytes of
    the printer that makes everything per value."""
    assert dumps(doc) == _reference(doc)
    assert dumps(doc) == _reference(doc)  # again, with the names made on the first run
