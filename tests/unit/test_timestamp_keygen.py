"""TimestampBasedKeyGenerator partition paths, checked against the expected strings of Hudi's own tests
(hudi-spark-datasource/hudi-spark/src/test/java/org/apache/hudi/keygen/TestTimestampBasedKeyGenerator.java),
plus the Joda pattern engine (keygen/java_date_format.py) and option resolution."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.config.registry import Options
from pyhudi.engine.spark.keygen import KeyGenerator
from pyhudi.errors import InvalidConfigError, InvalidRecordError
from pyhudi.keygen.java_date_format import UTC, compile_pattern, format_instant, java_zone, parse_first
from pyhudi.keygen.timestamp_keygen import PartitionFormatter, settings_from
from pyhudi.writer.config import resolve_table_config

TB = "hoodie.keygen.timebased."
OLD = "hoodie.deltastreamer.keygen.timebased."
TS_KEYGEN = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"


def _text(props: dict[str, str], value: str | None, kind: str = "long", *, hive: bool = False,
          encode: bool = False, default_zone: str = "UTC") -> str:
    fmt = PartitionFormatter(settings_from(props), "createTime", hive, encode, default_zone)
    return fmt.text(value, kind)


def _base(ts_type: str, out: str, zone: str, unit: str | None = None) -> dict[str, str]:
    """TestTimestampBasedKeyGenerator.getBaseKeyConfig: the deprecated `timezone` key sets both zones."""
    props = {TB + "timestamp.type": ts_type, TB + "output.dateformat": out, TB + "timezone": zone}
    if unit is not None:
        props[OLD + "timestamp.scalar.time.unit"] = unit
    return props


# --- TestTimestampBasedKeyGenerator#testTimestampBasedKeyGenerator --------------------------------------

def test_epoch_millis_in_gmt_plus_8_and_gmt():
    assert _text(_base("EPOCHMILLISECONDS", "yyyy-MM-dd hh", "GMT+8:00"), "1578283932000") == "2020-01-06 12"
    assert _text(_base("EPOCHMILLISECONDS", "yyyy-MM-dd hh", "GMT"), "1578283932000") == "2020-01-06 04"


def test_decimal_epoch_millis_and_micros_truncate():
    props = _base("EPOCHMILLISECONDS", "yyyy-MM-dd hh", "GMT+8:00")
    assert _text(props, "1578283932000.0001", "decimal") == "2020-01-06 12"
    micros = _base("EPOCHMICROSECONDS", "yyyy-MM-dd hh", "GMT+8:00")
    assert _text(micros, "1578283932123456.0001", "decimal") == "2020-01-06 12"
    assert _text(micros, "1578283932123456") == "2020-01-06 12"


def test_date_string_with_old_input_format_key():
    for zone in ("GMT+8:00", "GMT"):
        props = {**_base("DATE_STRING", "yyyy-MM-dd hh", zone), OLD + "input.dateformat": "yyyy-MM-dd hh:mm:ss"}
        assert _text(props, "2020-01-06 12:12:12", "string") == "2020-01-06 12"


def test_null_values_use_hudis_defaults():
    # EPOCHMILLISECONDS: 1 ms; DATE_STRING: 1 ms after the epoch printed with the first input format.
    assert _text(_base("EPOCHMILLISECONDS", "yyyy-MM-dd hh", "GMT+8:00"), None) == "1970-01-01 08"
    props = {**_base("DATE_STRING", "yyyy-MM-dd hh:mm:ss", "GMT"), OLD + "input.dateformat": "yyyy-MM-dd hh:mm:ss"}
    assert _text(props, None, "string") == "1970-01-01 12:00:00"


# --- TestTimestampBasedKeyGenerator#testScalar / testScalarWithLogicalType --------------------------------

def test_scalar_days():
    assert _text(_base("SCALAR", "yyyy-MM-dd hh", "GMT", "days"), "20000") == "2024-10-04 12"
    assert _text(_base("SCALAR", "yyyy-MM-dd hh", "GMT", "days"), None) == "1970-01-02 12"
    assert _text(_base("SCALAR", "yyyy-MM-dd", "GMT", "DAYS"), "18736") == "2021-04-19"


def test_scalar_microseconds_of_a_timestamp_column():
    # A Spark timestamp is the Avro long of epoch micros: SCALAR/MICROSECONDS prints it as Hudi does.
    assert _text(_base("SCALAR", "yyyy/MM/dd", "GMT", "MICROSECONDS"), "1638513806000000") == "2021/12/03"
    assert _text(_base("SCALAR", "yyyy/MM/dd", "GMT", "MICROSECONDS"), None) == "1970/01/01"


# --- TestTimestampBasedKeyGenerator: the ISO-8601 input format list tests ---------------------------------

def _list_props(inputs: str, out_zone: str, in_zone: str = "") -> dict[str, str]:
    return {TB + "timestamp.type": "DATE_STRING", TB + "input.dateformat": inputs,
            TB + "input.dateformat.list.delimiter.regex": "", TB + "input.timezone": in_zone,
            TB + "output.dateformat": "yyyyMMddHH", TB + "output.timezone": out_zone}


ISO_PAIR = "yyyy-MM-dd'T'HH:mm:ssZ,yyyy-MM-dd'T'HH:mm:ss.SSSZ"


@pytest.mark.parametrize(("inputs", "out_zone", "value", "expected"), [
    # test_ExpectsMatch_SingleInputFormat_ISO8601WithMsZ_OutputTimezoneAsUTC
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "GMT", "2020-04-01T13:01:33.428Z", "2020040113"),
    # test_ExpectsMatch_SingleInputFormats_ISO8601WithMsZ_OutputTimezoneAsInputDateTimeZone
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "", "2020-04-01T13:01:33.428Z", "2020040113"),
    # test_ExpectsMatch_MultipleInputFormats_ISO8601WithMsZ_OutputTimezoneAsUTC
    (ISO_PAIR, "UTC", "2020-04-01T13:01:33.428Z", "2020040113"),
    # test_ExpectsMatch_MultipleInputFormats_ISO8601NoMsZ_OutputTimezoneAsUTC
    (ISO_PAIR, "UTC", "2020-04-01T13:01:33Z", "2020040113"),
    # test_ExpectsMatch_MultipleInputFormats_ISO8601NoMsWithOffset_OutputTimezoneAsUTC
    (ISO_PAIR, "UTC", "2020-04-01T13:01:33-05:00", "2020040118"),
    # test_ExpectsMatch_MultipleInputFormats_ISO8601WithMsWithOffset_OutputTimezoneAsUTC
    (ISO_PAIR, "UTC", "2020-04-01T13:01:33.123-05:00", "2020040118"),
    # test_ExpectsMatch_MultipleInputFormats_ISO8601WithMsZ_OutputTimezoneAsEST (Joda: EST = New York, EDT)
    (ISO_PAIR, "EST", "2020-04-01T13:01:33.123Z", "2020040109"),
])
def test_iso8601_input_format_lists(inputs, out_zone, value, expected):
    assert _text(_list_props(inputs, out_zone), value, "string") == expected


def test_short_date_output_custom_date():
    # test_ExpectsMatch_MultipleInputFormats_ShortDate_OutputCustomDate
    props = _list_props(ISO_PAIR + ",yyyyMMdd", "UTC", in_zone="UTC")
    props[TB + "output.dateformat"] = "MM/dd/yyyy"
    assert _text(props, "20200401", "string") == "04/01/2020"


def test_input_date_not_matching_formats_fails():
    # test_Throws_MultipleInputFormats_InputDateNotMatchingFormats
    with pytest.raises(InvalidRecordError, match="2020-04-01 13:01:33.123-05:00"):
        _text(_list_props(ISO_PAIR, "UTC"), "2020-04-01 13:01:33.123-05:00", "string")


def test_custom_delimiter_regex():
    props = _list_props("yyyy-MM-dd|yyyyMMdd", "UTC", in_zone="UTC")
    props[TB + "input.dateformat.list.delimiter.regex"] = r"\|"
    assert _text(props, "20200401", "string") == "2020040100"
    assert _text(props, "2020-04-01", "string") == "2020040100"


# --- output zone, hive style, encoding, unit conversion ------------------------------------------------

def test_numbers_without_output_zone_use_the_jvm_default_zone():
    props = {TB + "timestamp.type": "EPOCHMILLISECONDS", TB + "output.dateformat": "yyyy/MM/dd/HH"}
    assert _text(props, "1578283932000", default_zone="UTC") == "2020/01/06/04"
    assert _text(props, "1578283932000", default_zone="Asia/Shanghai") == "2020/01/06/12"


def test_hive_style_and_escape_path_name():
    props = _base("EPOCHMILLISECONDS", "yyyy/MM/dd", "UTC")
    assert _text(props, "1578283932000", hive=True) == "createTime=2020/01/06"
    assert _text(props, "1578283932000", hive=True, encode=True) == "createTime=2020%2F01%2F06"


def test_unix_timestamp_and_truncating_unit_conversion():
    props = _base("UNIX_TIMESTAMP", "yyyy-MM-dd HH:mm:ss.SSS", "UTC")
    assert _text(props, "1578283932") == "2020-01-06 04:12:12.000"
    assert _text(props, "-1.9", "double") == "1969-12-31 23:59:59.000"  # (long) -1.9 == -1
    micros = _base("EPOCHMICROSECONDS", "yyyy-MM-dd HH:mm:ss.SSS", "UTC")
    assert _text(micros, "-1") == "1970-01-01 00:00:00.000"  # TimeUnit.convert truncates toward zero


def test_text_fields_and_zone_letters():
    pattern = "EEE EEEE MMM MMMM a h z zzzz Z ZZ ZZZ 'at' ''"
    assert format_instant(pattern, 1578283932123, java_zone("GMT+8:00")) == \
        "Mon Monday Jan January PM 12 +08:00 +08:00 +0800 +08:00 +08:00 at '"
    assert format_instant(pattern, 0, UTC) == \
        "Thu Thursday Jan January AM 12 UTC Coordinated Universal Time +0000 +00:00 UTC at '"
    assert format_instant("ZZZ Z", 1585746093000, java_zone("EST")) == "America/New_York -0400"


def test_unsupported_letters_are_refused_naming_the_pattern():
    with pytest.raises(InvalidConfigError, match="yyyy-ww"):
        compile_pattern("yyyy-ww")
    with pytest.raises(InvalidConfigError, match="EEE"):
        settings_from({TB + "timestamp.type": "DATE_STRING", TB + "input.dateformat": "EEE yyyy",
                       TB + "output.dateformat": "yyyy"})
    with pytest.raises(InvalidConfigError, match="'z'"):
        settings_from({TB + "timestamp.type": "EPOCHMILLISECONDS", TB + "output.dateformat": "yyyy z",
                       TB + "output.timezone": "America/New_York"})


def test_zone_resolution_like_java_and_joda():
    assert java_zone("GMT+8:00").id == "+08:00"
    assert java_zone("GMT-05").id == "-05:00"
    assert java_zone("GMT+0").id == "UTC"
    with pytest.warns(UserWarning, match="UTC\\+8"):
        assert java_zone("UTC+8").id == "UTC"  # not a Java custom id: TimeZone.getTimeZone falls back to GMT
    assert java_zone("CTT").id == "Asia/Shanghai"
    assert java_zone("Europe/Paris").id == "Europe/Paris"


def test_parse_resolves_dst_overlap_to_the_earlier_instant():
    ny = java_zone("America/New_York")
    parsed = parse_first(("yyyy-MM-dd HH:mm",), "2020-11-01 01:30", ny, UTC)
    assert parsed.instant_ms == int(datetime(2020, 11, 1, 5, 30, tzinfo=timezone.utc).timestamp() * 1000)


def test_missing_or_invalid_settings_are_refused():
    with pytest.raises(InvalidConfigError, match="timestamp.type"):
        settings_from({TB + "output.dateformat": "yyyy"})
    with pytest.raises(InvalidConfigError, match="output.dateformat"):
        settings_from({TB + "timestamp.type": "EPOCHMILLISECONDS"})
    with pytest.raises(InvalidConfigError, match="input.dateformat"):
        settings_from({TB + "timestamp.type": "DATE_STRING", TB + "output.dateformat": "yyyy"})
    with pytest.raises(InvalidConfigError, match="FORTNIGHTS"):
        settings_from({**_base("SCALAR", "yyyy", "UTC"), TB + "timestamp.scalar.time.unit": "fortnights"})


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-62_000_000_000_000, max_value=250_000_000_000_000),
       st.sampled_from(["UTC", "GMT+8:00", "GMT-03:30", "America/New_York", "Asia/Kolkata"]))
def test_format_then_parse_round_trips(millis, zone_name):
    """Any instant printed with an offset parses back to itself (offsets with seconds, the local mean
    time of a region before ~1900, are printed to the minute by ZZ, as in Joda: kept out)."""
    zone = java_zone(zone_name)
    if zone.fixed_ms is None:
        millis = max(millis, -631_152_000_000)  # 1950
    pattern = "yyyy-MM-dd'T'HH:mm:ss.SSSZZ"
    text = format_instant(pattern, millis, zone)
    assert parse_first((pattern,), text, None, UTC).instant_ms == millis


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-2_000_000_000_000, max_value=4_000_000_000_000),
       st.sampled_from(["UTC", "Europe/Paris", "Asia/Kolkata", "America/Sao_Paulo"]))
def test_format_matches_python_calendar(millis, zone_name):
    from zoneinfo import ZoneInfo

    expected = (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=millis)).astimezone(
        UTC_ZONE if zone_name == "UTC" else ZoneInfo(zone_name))
    got = format_instant("yyyy/MM/dd HH:mm:ss.SSS EEE", millis, java_zone(zone_name))
    assert got == expected.strftime("%Y/%m/%d %H:%M:%S.") + f"{expected.microsecond // 1000:03d} " + \
        expected.strftime("%a")


UTC_ZONE = timezone.utc


# --- options: current and old key names, stored properties ----------------------------------------------

def _options(**extra: str) -> Options:
    return Options.parse({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                          "hoodie.datasource.write.partitionpath.field": "ts",
                          "hoodie.datasource.write.keygenerator.class": TS_KEYGEN, **extra})


def test_old_deltastreamer_option_names_are_accepted():
    table = resolve_table_config(_options(**{OLD + "timestamp.type": "EPOCHMILLISECONDS",
                                             OLD + "output.dateformat": "yyyy/MM/dd",
                                             OLD + "timezone": "GMT"}), None)
    keygen = KeyGenerator.for_table(table)
    assert keygen.partition_types == ("TIMESTAMP",)
    assert keygen.timestamp is not None and keygen.timestamp.output_format == "yyyy/MM/dd"
    assert keygen.timestamp.zones()[1] == UTC


def test_keygenerator_type_timestamp():
    table = resolve_table_config(Options.parse({
        "hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "ts", "hoodie.datasource.write.keygenerator.type": "TIMESTAMP",
        TB + "timestamp.type": "EPOCHMILLISECONDS", TB + "output.dateformat": "yyyy/MM/dd"}), None)
    assert table.keygen_class == TS_KEYGEN


def test_timebased_options_are_persisted_under_current_names():
    # HoodieSparkSqlWriter.extractConfigsRelatedToTimestampBasedKeyGenerator + HoodieTableConfig
    # .PERSISTED_CONFIG_LIST: a TimestampBased table's hoodie.properties carries its timebased options.
    table = resolve_table_config(_options(**{OLD + "timestamp.type": "EPOCHMILLISECONDS",
                                             TB + "output.dateformat": "yyyy/MM/dd", OLD + "timezone": "GMT"}), None)
    props = table.to_properties()
    assert {k: v for k, v in props.items() if "timebased" in k} == {
        TB + "timestamp.type": "EPOCHMILLISECONDS", TB + "output.dateformat": "yyyy/MM/dd", TB + "timezone": "GMT"}
    # ... and a later write without them uses the stored ones.
    from pyhudi.model.table_config import TableConfig

    stored = TableConfig.from_properties(props)
    later = resolve_table_config(Options.parse({"hoodie.datasource.write.recordkey.field": "id"}), stored)
    keygen = KeyGenerator.for_table(later)
    assert keygen.timestamp is not None and keygen.timestamp.output_format == "yyyy/MM/dd"


def test_write_without_timestamp_options_is_refused_before_writing():
    with pytest.raises(InvalidConfigError, match="timestamp.type"):
        resolve_table_config(_options(), None)


def test_timestamp_keygen_refuses_several_partition_fields():
    with pytest.raises(InvalidConfigError, match="exactly one"):
        resolve_table_config(_options(**{"hoodie.datasource.write.partitionpath.field": "a,b",
                                         TB + "timestamp.type": "EPOCHMILLISECONDS",
                                         TB + "output.dateformat": "yyyy"}), None)


def test_existing_hudi_table_takes_write_options():
    from pyhudi.model.table_config import TableConfig

    stored = TableConfig.from_properties({
        "hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
        "hoodie.table.recordkey.fields": "id", "hoodie.table.partition.fields": "ts",
        "hoodie.table.keygenerator.class": TS_KEYGEN})
    table = resolve_table_config(_options(**{TB + "timestamp.type": "EPOCHMILLISECONDS",
                                             TB + "output.dateformat": "yyyy/MM/dd"}), stored)
    assert KeyGenerator.for_table(table).timestamp is not None


def test_arrow_path_declines_timestamp_partition_fields():
    from pyspark.sql.types import LongType, StructField, StructType

    from pyhudi.engine.spark.direct import arrow_schema
    from pyhudi.keygen.arrow_keys import supports

    schema = arrow_schema(StructType([StructField("id", LongType()), StructField("createTime", LongType())]))
    plain = KeyGenerator(("id",), ("createTime",), "org.apache.hudi.keygen.SimpleKeyGenerator", False, False)
    timed = KeyGenerator(("id",), ("createTime",), TS_KEYGEN, False, False, ("TIMESTAMP",),
                         settings_from(_base("EPOCHMILLISECONDS", "yyyy/MM/dd", "UTC")))
    assert supports(plain, schema) and not supports(timed, schema)
