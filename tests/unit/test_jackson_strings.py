"""jackson._string (a regex search, and a regex substitution where a character needs an escape) writes
exactly what a loop over every character writes, so commit files stay byte-identical (the samples'
byte-for-byte round trip is in test_commit_metadata.py)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.model import jackson
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.write_stat import WriteStat

SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _reference(text: str) -> str:
    """Jackson's escaping, every character looked at: short escapes, other control characters as
    upper-case \\u00XX, everything else (DEL, U+2028, astral characters) as it is."""
    out = ['"']
    for ch in text:
        out.append(SHORT.get(ch) or (f"\\u{ord(ch):04X}" if ord(ch) < 0x20 else ch))
    return "".join(out) + '"'


ADVERSARIAL = ["", "p00001/abc_0-1-1_20240101.parquet", "2024/01/02", "é ü", "日本", "7", 'a"b', "back\\slash",
               "tab\there", "nl\n", "\x00\x1f\x7f", "\u2028\u2029", "😀 astral", '{"numWrites": 7}', "x=1/y=2"]


def test_string_equals_the_character_loop_on_adversarial_strings() -> None:
    for text in ADVERSARIAL:
        assert jackson._string(text) == _reference(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x40)) | st.text())
def test_string_equals_the_character_loop(text: str) -> None:
    assert jackson._string(text) == _reference(text)


def test_commit_json_of_a_spread_write_is_unchanged_and_valid() -> None:
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": json.dumps({"a": "b\n"})})
    for i, part in enumerate(ADVERSARIAL[1:]):
        meta.add(WriteStat(file_id=f"f{i}", path=f"{part}/f{i}.parquet", partition_path=part, num_writes=i))
    text = meta.to_bytes().decode()
    assert json.loads(text)["partitionToWriteStats"].keys() == {s for s in ADVERSARIAL[1:]}
    for part in ADVERSARIAL[1:]:
        assert _reference(part) in text
