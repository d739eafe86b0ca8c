"""jackson._string's fast path (no character needs an escape: one regex search) writes exactly what the
character loop writes, so commit files stay byte-identical (the samples' byte-for-byte round trip is in
test_commit_metadata.py)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.model import jackson
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.jackson import escaped
from pyhudi.model.write_stat import WriteStat


def _reference(text: str) -> str:
    """The serializer before the fast path: every character looked at."""
    return escaped(text)


ADVERSARIAL = ["", "p00001/abc_0-1-1_20240101.parquet", "2024/01/02", "é ü", "日本", "7", 'a"b', "back\\slash",
               "tab\there", "nl\n", "\x00\x1f\x7f", "\u2028\u2029", "😀 astral", '{"numWrites": 7}', "x=1/y=2"]


def test_fast_path_equals_the_character_loop_on_adversarial_strings() -> None:
    for text in ADVERSARIAL:
        assert jackson._string(text) == _reference(text), text


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_fast_path_equals_the_character_loop(text: str) -> None:
    assert jackson._string(text) == _reference(text)


def test_commit_json_of_a_spread_write_is_unchanged_and_valid() -> None:
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": json.dumps({"a": "b\n"})})
    for i, part in enumerate(ADVERSARIAL[1:]):
        meta.add(WriteStat(file_id=f"f{i}", path=f"{part}/f{i}.parquet", partition_path=part, num_writes=i))
    text = meta.to_bytes().decode()
    assert json.loads(text)["partitionToWriteStats"].keys() == {s for s in ADVERSARIAL[1:]}
    for part in ADVERSARIAL[1:]:
        assert _reference(part) in text
