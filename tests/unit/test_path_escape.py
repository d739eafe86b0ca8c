"""Partition path escaping with hoodie.datasource.write.partitionpath.urlencode, as Hudi's
PartitionPathEncodeUtils.escapePathName / unescapePathName (Hive's FileUtils) do it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyhudi.keygen.path_escape import escape_path_name, unescape_path_name


def test_hudi_examples() -> None:
    # TestHoodieFileIndex escapes "2021/03/08"; the rest follow the escape list character by character
    assert escape_path_name("2021/03/08") == "2021%2F03%2F08"
    assert escape_path_name("a b+c") == "a b+c"  # URLEncoder would give a+b%2Bc
    assert escape_path_name("é中\U0001F600") == "é中\U0001F600"  # non-ASCII stays
    assert escape_path_name("100%") == "100%25"
    assert escape_path_name("k=v:w") == "k%3Dv%3Aw"
    assert escape_path_name("\t\n\x7f") == "%09%0A%7F"
    assert escape_path_name("\"#'*?\\{[]^}") == "%22%23%27%2A%3F%5C%7B%5B%5D%5E}"


def test_unescape_keeps_what_is_not_an_escape() -> None:
    assert unescape_path_name("a%2Fb%zz%4") == "a/b%zz%4"
    assert unescape_path_name("a+b") == "a+b"


@given(st.text())
def test_round_trip(value: str) -> None:
    assert unescape_path_name(escape_path_name(value)) == value
