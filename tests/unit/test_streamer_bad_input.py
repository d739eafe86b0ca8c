"""Streamer bad input without Spark: why a record is malformed, Spark read failures naming the file, the
error table's options."""

from __future__ import annotations

import pytest

from pyhudi.engine.spark.streamer_error_table import ErrorTableConfig
from pyhudi.engine.spark.streamer_source import display_path, read_failure
from pyhudi.errors import InvalidConfigError, MalformedRecordError, SchemaMismatchError
from pyhudi.streamer.reasons import classify, csv_reason, json_reason, truncate

FIELDS = [("id", "bigint"), ("name", "string"), ("fare", "double"), ("ok", "boolean"), ("day", "date"),
          ("n", "int"), ("tags", "array<string>")]


@pytest.mark.parametrize("line, reason", [
    ('{"id": 5, "name": "e", "pa', "malformed JSON: Unterminated string starting at column 24"),
    ('{"id": 1} trailing', "malformed JSON: Extra data at column 11"),
    ("[1, 2]", "not a JSON object but a JSON array"),
    ('"text"', "not a JSON object but a JSON string"),
    ('{"id": "x5", "fare": 1.0}', 'field id: "x5" is not an integer (bigint)'),
    ('{"id": 1.5}', "field id: 1.5 is not an integer (bigint)"),
    ('{"id": true}', "field id: true is not an integer (bigint)"),
    ('{"id": 1, "fare": "abc"}', 'field fare: "abc" is not a number (double)'),
    ('{"id": 1, "ok": "yes"}', 'field ok: "yes" is not true or false'),
    ('{"id": 1, "n": 3000000000}', "field n: 3000000000 does not fit int"),
    ('{"id": 1, "tags": "a"}', 'field tags: "a" is not a JSON array (array<string>)'),
    ('{"id": 1, "day": "someday", "fare": "x"}', 'field fare: "x" is not a number (double)'),  # definite first
    ('{"id": 1, "day": "someday"}', "field day: cannot read 'someday' as date"),
    ('{"id": 1, "name": {"any": "value"}, "fare": "NaN", "day": "2024-01-31"}', "record does not fit the schema"),
])
def test_json_reasons(line, reason):
    assert json_reason(line, FIELDS) == reason


CSV_FIELDS = [("id", "bigint"), ("name", "string"), ("ts", "int"), ("fare", "double")]


@pytest.mark.parametrize("line, reason", [
    ("4,d,2", "expected 4 fields, found 3"),
    ("5,e,2,1.0,extra", "expected 4 fields, found 5"),
    ("x7,g,2,1.0", "field id: cannot read 'x7' as bigint"),
    ("6,f,2,abc", "field fare: cannot read 'abc' as double"),
    ("6,f,99999999999,1.0", "field ts: 99999999999 does not fit int"),
    ('"8,"i,2,1.0', "malformed CSV: ',' expected after '\"'"),
    ("9,,,", "row does not fit the schema"),  # empty values are nulls, which fit
])
def test_csv_reasons(line, reason):
    assert csv_reason(line, CSV_FIELDS) == reason


def test_classify_dispatches_on_format_and_skips_missing_text():
    assert classify("json", "[1]", FIELDS) == "not a JSON object but a JSON array"
    assert classify("csv", "1,a", CSV_FIELDS) == "expected 4 fields, found 2"
    assert classify("json", None, FIELDS) is None


def test_truncate():
    assert truncate("abc", 5) == "abc"
    assert truncate("abcdefgh", 5) == "abcde... (3 more characters)"
    assert truncate(None) == ""


SPARK_TYPE_MISMATCH = (
    "py4j.protocol.Py4JJavaError: An error occurred while calling o52.count.\n"
    ": org.apache.spark.SparkException: [FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] Encountered error "
    "while reading file file:///data/landing/b%20v2.parquet. Data type mismatches when reading Parquet column "
    "[fare]. Expected Spark type double, actual Parquet type BINARY. SQLSTATE: KD001\n\tat org.apache...")


def test_parquet_type_mismatch_names_file_column_and_types():
    err = read_failure(SPARK_TYPE_MISMATCH, 7)
    assert isinstance(err, SchemaMismatchError)
    msg = str(err)
    assert "landing file /data/landing/b v2.parquet" in msg
    assert "column fare is parquet BINARY in the file but double" in msg
    assert "micro-batch 7" in msg and "Move the file out of the landing directory" in msg


def test_other_read_failures_name_the_file_and_unrelated_errors_pass():
    err = read_failure("x [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered error while reading file "
                       "s3://bucket/in/c.parquet. File is corrupt.\n\tat ...", 2)
    assert isinstance(err, MalformedRecordError)
    assert "landing file s3://bucket/in/c.parquet cannot be read (CANNOT_READ_FILE_FOOTER)" in str(err)
    assert read_failure("java.lang.OutOfMemoryError: Java heap space", 2) is None


def test_display_path():
    assert display_path("file:///x/a%20b.json") == "/x/a b.json"
    assert display_path("file:/x/a.json") == "/x/a.json"
    assert display_path("s3a://b/k.json") == "s3a://b/k.json"


def test_error_table_config_defaults_follow_the_target():
    cfg = ErrorTableConfig.from_options({"hoodie.table.name": "trips"}, "/data/trips/")
    assert cfg == ErrorTableConfig(enabled=False, base_path="/data/trips/.hoodie/.aux/errors",
                                   table_name="trips_errors", failure_strategy="ROLLBACK_COMMIT",
                                   validate_record_creation=True)
    cfg = ErrorTableConfig.from_options({"hoodie.errortable.enable": "true", "hoodie.errortable.base.path": "/err",
                                         "hoodie.errortable.target.table.name": "bad",
                                         "hoodie.errortable.write.failure.strategy": "log_error",
                                         "hoodie.errortable.validate.recordcreation.enable": False}, "/t")
    assert (cfg.enabled, cfg.base_path, cfg.table_name, cfg.failure_strategy, cfg.validate_record_creation) == (
        True, "/err", "bad", "LOG_ERROR", False)
    assert cfg.write_options()["hoodie.table.name"] == "bad"


def test_error_table_config_rejects_unknown_strategy():
    with pytest.raises(InvalidConfigError, match="hoodie.errortable.write.failure.strategy.*ROLLBACK_COMMIT"):
        ErrorTableConfig.from_options({"hoodie.errortable.write.failure.strategy": "IGNORE"}, "/t")


SPARK_CSV_HEADER = (
    ": org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
    "file:///land/b.csv.  SQLSTATE: KD001\n\tat org.apache...\n"
    "Caused by: org.apache.spark.SparkIllegalArgumentException: CSV header does not conform to the schema.\n"
    " Header: id, part, name, ts\n Schema: id, name, part, ts\nExpected: name but found: part\n"
    "CSV file: file:///land/b.csv\n\t... 1 more")


def test_csv_header_that_differs_is_a_schema_mismatch_naming_file_and_columns():
    err = read_failure(SPARK_CSV_HEADER, 3)
    assert isinstance(err, SchemaMismatchError)
    assert ("landing file /land/b.csv: its CSV header does not match the streamer's columns (Header: id, part, name, "
            "ts; Schema: id, name, part, ts; Expected: name but found: part)") in str(err)
    longer = SPARK_CSV_HEADER.replace(
        "CSV header does not conform to the schema.\n Header: id, part, name, ts\n Schema: id, name, part, ts\n"
        "Expected: name but found: part",
        "Number of column in CSV header is not equal to number of fields in the schema:\n Header length: 5, "
        "schema size: 4")
    assert "(Header length: 5, schema size: 4)" in str(read_failure(longer, 3))


class _Persisted:
    def persist(self):
        return self

    def unpersist(self):
        return self


@pytest.mark.parametrize("strategy", ["ROLLBACK_COMMIT", "LOG_ERROR"])
def test_error_table_write_failure_strategy(monkeypatch, strategy):
    from pyhudi.engine.spark import streamer_sink as sink_module
    from pyhudi.errors import HudiError

    def failing_write(*_args):
        raise OSError("disk full")

    monkeypatch.setattr(sink_module, "error_records", lambda *_args: _Persisted())
    monkeypatch.setattr(sink_module, "write_errors", failing_write)
    sink = sink_module.StreamerSink.__new__(sink_module.StreamerSink)
    sink.fmt, sink.fields = "json", []
    sink.errors = ErrorTableConfig(True, "/t/errors", "t_errors", strategy, True)
    if strategy == "ROLLBACK_COMMIT":
        with pytest.raises(HudiError, match="micro-batch 5: writing 3 malformed record.*/t/errors failed .disk full.; "
                                            "nothing was committed"):
            sink._quarantine(None, 3, 5, "ident", "query")
    else:  # the good records are committed; the commit line says the malformed ones were not kept
        note = sink._quarantine(None, 3, 5, "ident", "query")
        assert note == ", 3 malformed records NOT quarantined (error table write failed: disk full)"
