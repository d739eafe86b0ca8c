"""Shared test helpers: sample extraction, the independent reader (hudi-rs), row comparison."""

from __future__ import annotations

import collections
import json
import os
import pathlib
import zipfile
from typing import Any

import pyarrow as pa

REPO = pathlib.Path(__file__).resolve().parents[1]
# The project's own copies of the Spark-written sample tables (provenance and licence in their README.md),
# so a fresh clone runs every sample-based test; PYHUDI_SAMPLES points at another copy.
SAMPLES = pathlib.Path(os.environ.get("PYHUDI_SAMPLES") or REPO / "tests" / "fixtures" / "samples")


# Hudi 1.x tables (versions 8 and 9) with their rows as hudi-rs 0.5 reads them (tests/fixtures/samples-1x).
SAMPLES_1X = pathlib.Path(os.environ.get("PYHUDI_SAMPLES_1X") or REPO / "tests" / "fixtures" / "samples-1x")


def samples_1x() -> dict[str, dict[str, Any]]:
    """name -> manifest entry of each Hudi 1.x sample table; a missing folder fails, never skips."""
    if not (SAMPLES_1X / "manifest.json").exists():
        import pytest

        pytest.fail(f"Hudi 1.x sample tables not found at {SAMPLES_1X}", pytrace=False)
    return dict(json.loads((SAMPLES_1X / "manifest.json").read_text())["tables"])


def extract_sample_1x(name: str, dest: pathlib.Path) -> pathlib.Path:
    """Unzip one 1.x sample into `dest`; returns the table's base path."""
    with zipfile.ZipFile(SAMPLES_1X / "tables" / f"{name}.zip") as z:
        keep = [m for m in z.namelist() if not m.startswith("__MACOSX/")]
        z.extractall(dest, keep)
        (root,) = {m.split("/")[0] for m in keep}
    return dest / root


def samples_root() -> pathlib.Path:
    """The Spark-written sample tables (tests/fixtures/samples, or $PYHUDI_SAMPLES). A missing folder is a
    failure, never a skip: the compatibility tests must not silently stop running."""
    if (SAMPLES / "manifest.json").exists():
        return SAMPLES
    import pytest

    pytest.fail(f"sample Hudi tables not found at {SAMPLES} (they ship in tests/fixtures/samples; "
                "PYHUDI_SAMPLES overrides the folder)", pytrace=False)
    raise AssertionError("unreachable")


def manifest() -> list[dict[str, Any]]:
    data = json.loads((samples_root() / "manifest.json").read_text())
    return data["tables"] if isinstance(data, dict) else data


def extract_sample(zip_name: str, dest: pathlib.Path) -> pathlib.Path:
    with zipfile.ZipFile(samples_root() / "tables" / zip_name) as z:
        keep = [m for m in z.namelist() if not m.startswith("__MACOSX/")]
        z.extractall(dest, keep)
        roots = {m.split("/")[0] for m in keep} - {"gold_data", "gold_options"}
    (root,) = roots
    return dest / root


def _norm(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if hasattr(v, "isoformat"):
        try:
            return v.replace(tzinfo=None).isoformat()
        except TypeError:
            return v.isoformat()
    return v


def row_bag(table: pa.Table, columns: list[str]) -> collections.Counter:
    return collections.Counter(tuple(repr(_norm(r[c])) for c in columns) for r in table.select(columns).to_pylist())


def same_rows(actual: pa.Table, expected: pa.Table, columns: list[str] | None = None) -> bool:
    cols = columns or expected.column_names
    return actual.num_rows == expected.num_rows and row_bag(actual, cols) == row_bag(expected, cols)


def hudi_rs(path: str | os.PathLike[str], *, as_of: str | None = None, start: str | None = None,
            end: str | None = None, read_optimized: bool = False) -> pa.Table | None:
    """Read with the independent hudi-rs reader; None for an empty result."""
    from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(os.path.abspath(path)).build()
    opts = HudiReadOptions()
    if as_of:
        opts = opts.with_as_of_timestamp(as_of)
    if start is not None:
        opts = opts.with_query_type(HudiQueryType.Incremental).with_start_timestamp(start)
        if end:
            opts = opts.with_end_timestamp(end)
    if read_optimized:
        opts = opts.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    batches = table.read(opts)
    return pa.Table.from_batches(batches) if batches else None


def rows_by_key(table: pa.Table | None, key: str, columns: list[str]) -> dict[Any, tuple[Any, ...]]:
    """key -> normalised data columns; asserts keys are unique."""
    if table is None:
        return {}
    out: dict[Any, tuple[Any, ...]] = {}
    for r in table.select([key, *columns]).to_pylist():
        assert r[key] not in out, f"duplicate key {r[key]!r}"
        out[r[key]] = tuple(_norm(r[c]) for c in columns)
    return out


def time_travel(spark: Any, path: str, instant: str) -> tuple[pa.Table | None, str | None]:
    """(rows as of `instant`, None), or (None, the earliest readable instant) when the cleaner removed its files."""
    import re

    import pyhudi
    from pyhudi.errors import InstantNotFoundError

    try:
        return pyhudi.read(spark, path, {"as.of.instant": instant}).toArrow(), None
    except InstantNotFoundError as exc:
        m = re.search(r"earliest instant still readable is (\d{17})", str(exc))
        assert m, f"time travel error must name the earliest readable instant: {exc}"
        return None, m.group(1)


def state_at(history: list[tuple[str, Any]], instant: str) -> Any:
    """The model state after the newest history entry at or before `instant`."""
    older = [state for ts, state in history if ts <= instant]
    assert older, f"no model state at or before {instant}"
    return older[-1]


def plant_metadata_table(root: pathlib.Path, inflight: str = "column_stats") -> dict[str, str]:
    """What a Hudi 0.14 writer with the metadata table on leaves: partitions named in the properties and
    a metadata table (a Hudi MOR table of its own) under .hoodie/metadata."""
    from pyhudi.model.properties import format_properties, parse_properties

    props = parse_properties((root / ".hoodie" / "hoodie.properties").read_text())
    props["hoodie.table.metadata.partitions"] = "files"
    props["hoodie.table.metadata.partitions.inflight"] = inflight
    (root / ".hoodie" / "hoodie.properties").write_text(format_properties(props))
    meta = root / ".hoodie" / "metadata"
    (meta / ".hoodie").mkdir(parents=True)
    (meta / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t_metadata\n")
    (meta / ".hoodie" / "00000000000000010.deltacommit").write_text("{}")
    (meta / "files").mkdir()
    (meta / "files" / ".files-0000-0_00000000000000010.log.1_0-0-0").write_bytes(b"#HUDI#")
    return props


# --------------------------------------------------------------------------- both engines (issue 17)
def in_process_read_available() -> bool:
    """Whether `pyhudi.read(path, options, filters, columns)` (the Arrow reader, no Spark) has landed."""
    from importlib.util import find_spec

    return find_spec("pyhudi.reader.arrow_read") is not None


def arrow_read(path: str | os.PathLike[str], options: dict[str, str] | None = None,
               spark_getter: Any = None) -> pa.Table:
    """Read a table as Arrow with the in-process reader; until that reader exists, through Spark
    (`spark_getter()` returns the session, so tests on the in-process path start no JVM once it does)."""
    import pyhudi

    if in_process_read_available():
        result = pyhudi.read(str(path), options)
        return result.read_all() if isinstance(result, pa.RecordBatchReader) else result
    if spark_getter is None:
        import pytest

        pytest.fail("the in-process reader pyhudi.read(path, ...) has not landed and no Spark session was given")
    return pyhudi.read(spark_getter(), str(path), options).toArrow()


def marked_files(path: str | os.PathLike[str], instant: str) -> list[str]:
    """The data files an instant's markers name, read as Hudi reads them: DIRECT marker files
    (`<partition>/<file>.marker.<IO>`) and the lines of `MARKERS<n>` files (TIMELINE_SERVER_BASED)."""
    root = pathlib.Path(path, ".hoodie", ".temp", instant)
    names = [str(p.relative_to(root)) for p in root.rglob("*.marker.*")]
    for f in root.glob("MARKERS*"):
        if f.name != "MARKERS.type":
            names += [line for line in f.read_text(encoding="utf-8").splitlines() if ".marker." in line]
    return sorted({n.split(".marker.")[0].lstrip("/") for n in names})


def spy_create_filled(monkeypatch: Any) -> list[list[int]]:
    """The runs of keys each `BloomFilter.create_filled` call builds, in call order (one list per call)."""
    from pyhudi.index.bloom_filter import BloomFilter

    filled: list[list[int]] = []
    real = BloomFilter.create_filled.__func__  # type: ignore[attr-defined]

    def spy(cls, entries, fpp, max_entries, type_code, keys, runs):  # type: ignore[no-untyped-def]
        filled.append(list(runs))
        return real(cls, entries, fpp, max_entries, type_code, keys, runs)

    monkeypatch.setattr(BloomFilter, "create_filled", classmethod(spy))
    return filled
