"""Java `.properties` text: escaping round trips, Java parsing rules, and every sample `hoodie.properties`."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from pyhudi.model.properties import format_properties, java_date_comment, parse_properties
from tests.unit._samples import SampleTables, manifest, sample_names


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("props_samples"))


# ----------------------------------------------------------------------------- escaping round trip
TRICKY = {
    "hoodie.table.create.schema": '{"type":"record","name":"t","fields":[{"name":"a=b","type":"string"}]}',
    "colon:key": "v:1",
    "equals=key": "a=b==c",
    "hash#bang!": "#not a comment !either",
    "key with spaces": "  leading and trailing  ",
    "back\\slash": "C:\\path\\to\\file\\",
    "tabs\tand\nnewlines": "line1\nline2\r\n\tx\f",
    "unicode": "café 中文 ü",
    "empty": "",
    "": "empty key",
    "trailing backslash": "ends with \\",
}


def test_round_trip_tricky_values():
    text = format_properties(TRICKY)
    assert parse_properties(text) == TRICKY


def test_every_line_of_formatted_output_is_one_property():
    text = format_properties(TRICKY, comments=["a comment"])
    lines = text.split("\n")
    assert text.endswith("\n")
    assert lines[0] == "#a comment"
    assert lines[1].startswith("#")
    assert len([ln for ln in lines[2:] if ln]) == len(TRICKY)  # newlines inside values are escaped


def test_escape_forms_match_java_properties_store():
    text = format_properties({"k": 'a:b=c#d!e\\f', "sp key": " lead mid"})
    body = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert "k=a\\:b\\=c\\#d\\!e\\\\f" in body
    # Java escapes every space in a key but only a leading space in a value.
    assert "sp\\ key=\\ lead mid" in body


def test_non_ascii_written_as_uppercase_unicode_escapes():
    """Properties.store(OutputStream) writes ISO-8859-1 with \\uXXXX (upper-case hex) for chars > 0x7E."""
    text = format_properties({"k": "é中"})
    assert "k=\\u00E9\\u4E2D" in text.splitlines()


def test_supplementary_characters_round_trip():
    """Characters outside the BMP (emoji in a schema doc, say) must survive a write/read cycle."""
    props = {"doc": "rocket \U0001F680 done"}
    assert parse_properties(format_properties(props)) == props


def test_supplementary_characters_written_as_utf16_surrogates_like_java():
    """Java escapes chars, i.e. UTF-16 code units: U+1F680 becomes \\uD83D\\uDE80."""
    text = format_properties({"doc": "\U0001F680"})
    assert "doc=\\uD83D\\uDE80" in text.splitlines()


def test_java_written_surrogate_pair_parses_to_one_code_point():
    parsed = parse_properties("doc=\\uD83D\\uDE80\n")
    assert parsed == {"doc": "\U0001F680"}
    parsed["doc"].encode("utf-8")  # must be valid text, not lone surrogates


# ----------------------------------------------------------------------------- Java parsing rules
@pytest.mark.parametrize("text, expected", [
    ("a=b", {"a": "b"}),
    ("a = b", {"a": "b"}),
    ("a:b", {"a": "b"}),
    ("a b", {"a": "b"}),
    ("a\t  b c", {"a": "b c"}),
    ("a", {"a": ""}),
    ("a=", {"a": ""}),
    ("a=b=c", {"a": "b=c"}),
    ("a\\=b=c", {"a=b": "c"}),
    ("a\\:b:c", {"a:b": "c"}),
    ("key\\ with\\ spaces=v", {"key with spaces": "v"}),
    ("a=b  ", {"a": "b  "}),
    ("   indented=yes", {"indented": "yes"}),
    ("# comment\n! also comment\n\n  \na=1", {"a": "1"}),
    ("a=line1\\\n    line2", {"a": "line1line2"}),
    ("a=x\\\\\nb=y", {"a": "x\\", "b": "y"}),
    ("a=\\u0041\\u00e9", {"a": "Aé"}),
    ("a=\\t\\n\\r\\f", {"a": "\t\n\r\f"}),
    ("a=\\q", {"a": "q"}),
    ("a=1\na=2", {"a": "2"}),
    ("a=1\r\nb=2\r\n", {"a": "1", "b": "2"}),
])
def test_parse_java_rules(text, expected):
    assert parse_properties(text) == expected


def test_java_date_comment_format():
    moment = datetime(2025, 3, 1, 3, 6, 42, tzinfo=timezone.utc)
    assert java_date_comment(moment) == "Sat Mar 01 03:06:42 UTC 2025"
    assert re.fullmatch(r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d UTC \d{4}", java_date_comment())


def test_java_date_comment_names_every_day_and_month_as_java_does():
    """English names, as `Date.toString` writes them whatever the locale (not `strftime`'s %a/%b, which
    follow LC_TIME); 2024-01-01 was a Monday; a time zone other than UTC is converted first."""
    got = [java_date_comment(datetime(2024, 1, d, 9, 5, 7, tzinfo=timezone.utc)) for d in range(1, 8)]
    assert got == [f"{day} Jan 0{d} 09:05:07 UTC 2024"
                   for d, day in zip(range(1, 8), ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"))]
    months = [java_date_comment(datetime(2023, m, 15, tzinfo=timezone.utc)).split()[1] for m in range(1, 13)]
    assert months == ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    plus_two = timezone(timedelta(hours=2))
    assert java_date_comment(datetime(2024, 3, 1, 1, 0, 0, tzinfo=plus_two)) == "Thu Feb 29 23:00:00 UTC 2024"


# ----------------------------------------------------------------------------- samples
@pytest.mark.parametrize("name", sample_names())
def test_parse_every_sample_properties(samples, name):
    facts = manifest()[name]
    text = (samples.hoodie(name) / "hoodie.properties").read_text(encoding="latin-1")
    props = parse_properties(text)
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.timeline.layout.version"] == "1"
    assert props["hoodie.table.name"] == facts["table_name"]
    assert props["hoodie.database.name"] == facts["database_name"]
    assert props["hoodie.table.type"] == facts["table_type"]
    assert props["hoodie.table.checksum"] == str(facts["checksum"])
    assert props["hoodie.table.keygenerator.class"] == facts["keygen"]
    assert props["hoodie.table.recordkey.fields"] == ",".join(facts["record_key_fields"])
    assert props.get("hoodie.table.precombine.field") == facts["ordering_field"]
    assert props["hoodie.datasource.write.partitionpath.urlencode"] == "false"
    if facts["partition_fields"]:
        assert props["hoodie.table.partition.fields"] == ",".join(facts["partition_fields"])
        assert props["hoodie.datasource.write.hive_style_partitioning"] == str(facts["hive_style"]).lower()
    assert props.get("hoodie.compaction.payload.class") == facts["payload_class"]
    assert props.get("hoodie.compaction.record.merger.strategy") == facts["record_merger_strategy"]
    assert ("hoodie.populate.meta.fields" in props) == facts["populate_meta_fields_key_present"]
    # No comment line leaks in as a key.
    assert not any(k.startswith("#") for k in props)

    # The create schema is stored with `\:` escapes; parsed, it is plain JSON.
    raw_line = next(ln for ln in text.splitlines() if ln.startswith("hoodie.table.create.schema="))
    assert '"type"\\:"record"' in raw_line
    schema_text = props["hoodie.table.create.schema"]
    assert "\\:" not in schema_text
    schema = json.loads(schema_text)
    assert schema["type"] == "record"
    assert schema["name"] == f"{facts['table_name']}_record"
    assert schema["namespace"] == f"hoodie.{facts['table_name']}"
    assert not any(f["name"].startswith("_hoodie_") for f in schema["fields"])


@pytest.mark.parametrize("name", sample_names())
def test_sample_lines_reproduced_exactly_by_formatter(samples, name):
    """Our escaping writes every key=value line exactly as Java's Properties.store did."""
    text = (samples.hoodie(name) / "hoodie.properties").read_text(encoding="latin-1")
    sample_lines = {ln for ln in text.splitlines() if ln and not ln.startswith("#")}
    ours = format_properties(parse_properties(text))
    our_lines = {ln for ln in ours.splitlines() if ln and not ln.startswith("#")}
    assert our_lines == sample_lines
