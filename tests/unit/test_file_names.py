"""Base/log file names, file ids and write tokens, checked against every data file in the samples."""

from __future__ import annotations

import re
import uuid

import pytest

from pyhudi.model.file_names import (
    PARTITION_METAFILE,
    BaseFileName,
    LogFileName,
    base_file_name,
    file_id,
    join_path,
    log_file_name,
    new_file_id_prefix,
    parse_base_file,
    parse_log_file,
    write_token,
)
from tests.unit._samples import SampleTables, sample_names


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("fn_samples"))


def test_parse_sample_base_file():
    name = "a079bdb3-731c-4894-b855-abfcd6921007-0_0-182-253_20240418173550988.parquet"
    parsed = parse_base_file(name)
    assert parsed == BaseFileName("a079bdb3-731c-4894-b855-abfcd6921007-0", "0-182-253", "20240418173550988")
    assert parsed.name == name


def test_parse_sample_log_file():
    name = ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85"
    parsed = parse_log_file(name)
    assert parsed == LogFileName("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "20250331030642808", 1, "0-26-85")
    assert parsed.name == name


def test_log_version_is_numeric_and_multi_digit():
    parsed = parse_log_file(".fid-0_20250101000000000.log.12_3-4-5")
    assert parsed is not None and parsed.version == 12 and parsed.write_token == "3-4-5"
    assert parse_log_file(".fid-0_20250101000000000.log.x_3-4-5") is None


def test_log_without_write_token():
    parsed = parse_log_file(".fid-0_20250101000000000.log.3")
    assert parsed is not None and parsed.version == 3 and parsed.write_token is None
    assert parsed.name == ".fid-0_20250101000000000.log.3"


@pytest.mark.parametrize("name", [
    PARTITION_METAFILE, ".DS_Store", "_SUCCESS", "notes.txt", "hoodie.properties",
    "part-00000-34daeedf-3baa-40b1-90b5-dc398a341a4f-c000.snappy.parquet",
    "fid_token_20250101000000000.orc", "fid_20250101000000000.parquet",
    ".fid-0_20250101000000000.log",
])
def test_non_hudi_names_are_not_base_files(name):
    assert parse_base_file(name) is None


@pytest.mark.parametrize("name", [
    PARTITION_METAFILE, ".DS_Store", "fid-0_1-2-3_20250101000000000.parquet",
    ".commits_.archive.1_1-0-1", "fid-0_20250101000000000.log.1_0-1-2",
    ".fid-0_20250101000000000.archive.1_0-1-2",
])
def test_non_log_names_are_not_log_files(name):
    assert parse_log_file(name) is None


@pytest.mark.parametrize("name", sample_names())
def test_every_sample_data_file_parses_and_round_trips(samples, name):
    root = samples.root(name)
    seen_base = seen_log = 0
    for path in root.rglob("*"):
        if not path.is_file() or ".hoodie" in path.relative_to(root).parts:
            continue
        fname = path.name
        if fname.endswith(".parquet"):
            parsed = parse_base_file(fname)
            assert parsed is not None, fname
            assert parsed.name == fname
            assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+", parsed.file_id)
            assert re.fullmatch(r"\d+-\d+-\d+", parsed.write_token)
            assert re.fullmatch(r"\d{17}", parsed.instant)
            assert parse_log_file(fname) is None
            seen_base += 1
        elif ".log." in fname:
            parsed_log = parse_log_file(fname)
            assert parsed_log is not None, fname
            assert parsed_log.name == fname
            assert parse_base_file(fname) is None
            assert parsed_log.version >= 1
            seen_log += 1
        else:
            assert fname in (PARTITION_METAFILE, ".DS_Store"), fname
            assert parse_base_file(fname) is None and parse_log_file(fname) is None
    if "empty" not in name:
        assert seen_base > 0


def test_builders():
    assert base_file_name("f-0", "1-2-3", "20250101000000000") == "f-0_1-2-3_20250101000000000.parquet"
    assert log_file_name("f-0", "20250101000000000", 2, "1-0-1") == ".f-0_20250101000000000.log.2_1-0-1"
    assert write_token(0, 182, 253) == "0-182-253"
    assert file_id("abc", 0) == "abc-0"
    assert file_id("abc", 3) == "abc-3"
    assert join_path("", "x.parquet") == "x.parquet"
    assert join_path("city=sf", "x.parquet") == "city=sf/x.parquet"
    assert join_path("a=1/b=2", "x") == "a=1/b=2/x"


def test_new_file_id_prefix_is_a_fresh_uuid_without_underscores():
    prefixes = {new_file_id_prefix() for _ in range(200)}
    assert len(prefixes) == 200
    for p in prefixes:
        assert str(uuid.UUID(p)) == p
        assert "_" not in p
    fid = file_id(next(iter(prefixes)))
    parsed = parse_base_file(base_file_name(fid, write_token(1, 2, 3), "20250101000000000"))
    assert parsed is not None and parsed.file_id == fid
