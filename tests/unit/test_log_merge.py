"""`pyhudi.reader.log_merge`: merging one MOR file slice (base file + log files).

Part 1 reads the Spark-written MOR samples slice by slice and compares with
Spark's gold. Part 2 builds synthetic slices with pyhudi's own block writers
and checks each visibility and ordering rule; where hudi-rs (`hudi` 0.5.0) is
installed, the trickiest cases are also read through it as an oracle.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.io import schema as S
from pyhudi.io.log_blocks import (
    Ordering,
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
    encode_rollback_block,
)
from pyhudi.io.log_format import build_log_file
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice
from pyhudi.storage import Storage
from tests.helpers import SAMPLES, extract_sample, same_rows

MOR_SAMPLES = [
    "mor_parquet__v6_complexkeygen_hivestyle",
    "mor_parquet__v6_nonpartitioned",
    "mor_parquet__v6_simplekeygen_hivestyle_no_metafields",
    "mor_parquet__v6_simplekeygen_nonhivestyle",
    "mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable",
    "trips_mor_avro__v6_trips_8i1u",
]
TRIPS = "trips_mor_avro__v6_trips_8i1u"
_BASE = re.compile(r"^(?P<fid>[^_]+)_(?P<token>[^_]+)_(?P<ts>[^_.]+)\.parquet$")
_LOG = re.compile(r"^\.(?P<fid>[^_]+)_(?P<ts>[^.]+)\.log\.(?P<ver>\d+)_(?P<token>.+)$")

needs_samples = pytest.mark.skipif(not (SAMPLES / "manifest.json").exists(), reason="sample tables not found")


# ============================================================================ samples


class SampleTable:
    """Timeline facts and latest file slices of an extracted sample, straight from the listing."""

    def __init__(self, root: Path) -> None:
        self.root = root
        hoodie = root / ".hoodie"
        self.props = dict(line.split("=", 1) for line in (hoodie / "hoodie.properties").read_text().splitlines()
                          if "=" in line and not line.startswith("#"))
        self.commits: list[tuple[str, dict[str, Any]]] = []
        for f in sorted(hoodie.iterdir()):
            m = re.fullmatch(r"(\d+)\.(commit|deltacommit|replacecommit)", f.name)
            if m:
                self.commits.append((m[1], json.loads(f.read_text())))

    @property
    def populate_meta(self) -> bool:
        return self.props.get("hoodie.populate.meta.fields", "true") == "true"

    def committed(self, as_of: str | None = None) -> frozenset[str]:
        return frozenset(ts for ts, _ in self.commits if as_of is None or ts <= as_of)

    def target_schema(self, as_of: str | None = None) -> pa.Schema:
        meta = [m for ts, m in self.commits if as_of is None or ts <= as_of][-1]
        avro = S.from_json(meta["extraMetadata"]["schema"])
        return S.avro_to_arrow(S.with_meta_fields(avro))

    def replaced(self, as_of: str | None = None) -> set[tuple[str, str]]:
        out = set()
        for ts, meta in self.commits:
            if as_of is None or ts <= as_of:
                for part, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                    out.update((part, fid) for fid in ids)
        return out

    def latest_slices(self, as_of: str | None = None) -> list[tuple[str, str | None, list[str]]]:
        """(file id, base path, log paths) of the latest slice of every live file group."""
        committed = self.committed(as_of)
        groups: dict[tuple[str, str], dict[str, tuple[str | None, list[str]]]] = {}
        for f in self.root.rglob("*"):
            rel = f.relative_to(self.root)
            if not f.is_file() or rel.parts[0] == ".hoodie":
                continue
            part = "/".join(rel.parts[:-1])
            if (m := _BASE.match(f.name)) and m["ts"] in committed:
                slices = groups.setdefault((part, m["fid"]), {})
                slices[m["ts"]] = (str(rel), slices.get(m["ts"], (None, []))[1])
            elif (m := _LOG.match(f.name)) and m["ts"] in committed:
                slices = groups.setdefault((part, m["fid"]), {})
                base, logs = slices.get(m["ts"], (None, []))
                slices[m["ts"]] = (base, [*logs, str(rel)])
        out = []
        for (part, fid), slices in groups.items():
            if (part, fid) in self.replaced(as_of):
                continue
            base, logs = slices[max(slices)]
            out.append((fid, base, logs))
        return out

    def read(self, as_of: str | None = None, base_only: bool = False) -> pa.Table:
        storage = Storage(str(self.root))
        ordering = self.props.get("hoodie.table.precombine.field")
        payload = self.props.get("hoodie.compaction.payload.class", "")
        event_time = ordering if "DefaultHoodieRecordPayload" in payload else None
        spec = MergeSpec(self.committed(as_of), as_of, event_time, self.target_schema(as_of), self.populate_meta,
                         record_key_fields=tuple(self.props.get("hoodie.table.recordkey.fields", "").split(",")))
        parts = []
        for fid, base, logs in self.latest_slices(as_of):
            table, _ = merge_file_slice(storage, fid, base, [] if base_only else logs, spec)
            parts.append(table)
        out = pa.concat_tables(parts)
        if not self.populate_meta:
            out = out.drop_columns(S.META_FIELDS)
        return out


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], SampleTable]:
    cache: dict[str, SampleTable] = {}

    def get(name: str) -> SampleTable:
        if name not in cache:
            cache[name] = SampleTable(extract_sample(f"{name}.zip", tmp_path_factory.mktemp(name)))
        return cache[name]

    return get


def _gold(name: str, case: str | None = None) -> pa.Table:
    folder = SAMPLES / "gold" / name / ("gold_data" if case is None else f"gold_options/{case}")
    (path,) = folder.glob("*.parquet")
    return pq.read_table(path)


@needs_samples
@pytest.mark.parametrize("name", MOR_SAMPLES)
def test_sample_snapshot_matches_gold(samples: Callable[[str], SampleTable], name: str) -> None:
    gold = _gold(name)
    actual = samples(name).read()
    assert actual.column_names == gold.column_names
    assert same_rows(actual, gold)


@needs_samples
def test_merged_row_takes_file_id_as_file_name(samples: Callable[[str], SampleTable]) -> None:
    table = samples("mor_parquet__v6_nonpartitioned")
    rows = {r["_hoodie_record_key"]: r for r in table.read().to_pylist()}
    updated = rows["1"]
    assert updated["_hoodie_file_name"] == next(fid for fid, _, logs in table.latest_slices() if logs)
    assert updated["isActive"] is False and updated["_hoodie_commit_time"] == table.commits[-1][0]
    assert rows["2"]["_hoodie_file_name"].endswith(".parquet")  # untouched base row keeps its file name


@needs_samples
def test_trips_read_optimized_and_first_instant(samples: Callable[[str], SampleTable]) -> None:
    table = samples(TRIPS)
    cols = _gold(TRIPS, "read_optimized").column_names
    assert same_rows(table.read(base_only=True).select(cols), _gold(TRIPS, "read_optimized"))
    first = table.commits[0][0]
    assert same_rows(table.read(as_of=first).select(cols), _gold(TRIPS, "incr_through_penultimate"))


@needs_samples
@pytest.mark.parametrize("name", [n for n in MOR_SAMPLES if "no_metafields" not in n])
def test_sample_time_travel_to_first_instant(samples: Callable[[str], SampleTable], name: str) -> None:
    """As of the first instant, the log block of the second write is invisible: the first commit's rows."""
    table = samples(name)
    first = table.commits[0][0]
    snap = table.read(as_of=first)
    assert set(snap.column("_hoodie_commit_time").to_pylist()) == {first}
    manifest = {t["name"]: t for t in json.loads((SAMPLES / "manifest.json").read_text())["tables"]}
    assert snap.num_rows == manifest[name]["as_of_first_instant_rows"]
    # Nothing of the later commit leaks in: every row equals the first commit's base file row.
    base_only = table.read(as_of=first, base_only=True)
    assert same_rows(snap, base_only)


# ============================================================================ synthetic slices

FID = "0a1b2c3d-0000-4000-8000-000000000001-0"
TABLE_AVRO: dict[str, Any] = {
    "type": "record", "name": "t_record", "namespace": "hoodie.t",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "ts", "type": ["null", "long"], "default": None},
        {"name": "val", "type": ["null", "string"], "default": None},
    ],
}
TARGET = S.avro_to_arrow(S.with_meta_fields(TABLE_AVRO))
WRITER_SCHEMA = S.to_json(S.with_meta_fields(TABLE_AVRO))


def T(n: int) -> str:
    """A 17-digit instant time."""
    return f"2025010100000{n:04d}"


class Slice:
    """One file group of a hand-made non-partitioned MOR table, readable by pyhudi and by hudi-rs."""

    def __init__(self, root: Path, base_ts: str = T(1), event_time: bool = False) -> None:
        self.root = root
        self.base_ts = base_ts
        self.event_time = event_time
        self.base_path: str | None = None
        self.logs: list[str] = []
        self.committed: set[str] = set()
        (root / ".hoodie").mkdir(parents=True, exist_ok=True)
        payload = "DefaultHoodieRecordPayload" if event_time else "OverwriteWithLatestAvroPayload"
        (root / ".hoodie" / "hoodie.properties").write_text("\n".join([
            "hoodie.table.name=t", "hoodie.table.type=MERGE_ON_READ", "hoodie.table.version=6",
            "hoodie.timeline.layout.version=1", "hoodie.table.recordkey.fields=id",
            "hoodie.table.precombine.field=ts", "hoodie.populate.meta.fields=true",
            f"hoodie.compaction.payload.class=org.apache.hudi.common.model.{payload}",
            "hoodie.table.keygenerator.class=org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            "hoodie.table.base.file.format=PARQUET", "",
        ]))

    @staticmethod
    def rows(instant: str, *records: tuple[str, int | None, str | None], file_name: str = FID,
             schema: pa.Schema = TARGET) -> pa.Table:
        return pa.Table.from_pylist([
            {"_hoodie_commit_time": instant, "_hoodie_commit_seqno": f"{instant}_0_{i}", "_hoodie_record_key": k,
             "_hoodie_partition_path": "", "_hoodie_file_name": file_name, "id": k, "ts": ts, "val": v}
            for i, (k, ts, v) in enumerate(records)], schema=schema)

    def base(self, *records: tuple[str, int | None, str | None], schema: pa.Schema = TARGET) -> str:
        name = f"{FID}_0-1-1_{self.base_ts}.parquet"
        pq.write_table(self.rows(self.base_ts, *records, file_name=name, schema=schema), self.root / name)
        self.base_path = name
        self.commit(self.base_ts)
        return name

    def log(self, *blocks: bytes, version: int | None = None, token: str = "0-1-1") -> Path:
        version = version or len(self.logs) + 1
        name = f".{FID}_{self.base_ts}.log.{version}_{token}"
        (self.root / name).write_bytes(build_log_file(list(blocks)))
        self.logs.append(name)
        return self.root / name

    def commit(self, *instants: str) -> None:
        for ts in instants:
            self.committed.add(ts)
            meta = {"partitionToWriteStats": {"": [{"fileId": FID, "path": self.base_path or "",
                                                    "partitionPath": "", "numWrites": 1}]},
                    "compacted": False, "extraMetadata": {"schema": S.to_json(TABLE_AVRO)},
                    "operationType": "UPSERT"}
            hoodie = self.root / ".hoodie"
            (hoodie / f"{ts}.deltacommit.requested").write_bytes(b"")
            (hoodie / f"{ts}.deltacommit.inflight").write_bytes(b"{}")
            (hoodie / f"{ts}.deltacommit").write_text(json.dumps(meta))

    def spec(self, as_of: str | None = None, target: pa.Schema = TARGET, **kw: Any) -> MergeSpec:
        return MergeSpec(frozenset(self.committed), as_of, "ts" if self.event_time else None, target, **kw)

    def merge(self, as_of: str | None = None, **kw: Any) -> pa.Table:
        table, _ = merge_file_slice(Storage(str(self.root)), FID, self.base_path, list(self.logs),
                                    self.spec(as_of, **kw))
        return table

    def state(self, as_of: str | None = None, **kw: Any) -> dict[str, tuple[Any, Any]]:
        return {r["id"]: (r["ts"], r["val"]) for r in self.merge(as_of, **kw).to_pylist()}

    def hudi_rs_state(self, as_of: str | None = None) -> dict[str, tuple[Any, Any]]:
        from tests.helpers import hudi_rs

        table = hudi_rs(self.root, as_of=as_of)
        return {} if table is None else {r["id"]: (r["ts"], r["val"]) for r in table.to_pylist()}


def data(instant: str, *records: tuple[str, int | None, str | None], parquet: bool = False) -> bytes:
    encode = encode_parquet_data_block if parquet else encode_avro_data_block
    return encode(Slice.rows(instant, *records), WRITER_SCHEMA, instant)


def delete(instant: str, *keys: tuple[str, Any]) -> bytes:
    return encode_delete_block([(k, "", o) for k, o in keys], instant, WRITER_SCHEMA)


def L(v: int) -> Ordering:
    return Ordering("LongWrapper", v)


def I(v: int) -> Ordering:  # noqa: E743
    return Ordering("IntWrapper", v)


@pytest.fixture
def mk(tmp_path: Path) -> Callable[..., Slice]:
    counter = iter(range(1000))

    def make(event_time: bool = False, base_ts: str = T(1)) -> Slice:
        return Slice(tmp_path / f"t{next(counter)}", base_ts=base_ts, event_time=event_time)

    return make


def _hudi_rs_available() -> bool:
    try:
        import hudi  # noqa: F401
    except ImportError:
        return False
    return True


def check_oracle(s: Slice, as_of: str | None = None) -> None:
    """Where hudi-rs is installed, it must read the same slice the same way."""
    if _hudi_rs_available():
        assert s.state(as_of) == s.hudi_rs_state(as_of)


# ---------------------------------------------------------------------------- visibility of blocks


def test_multiple_files_and_blocks_in_order(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"), ("c", 1, "c1"))
    s.log(data(T(2), ("a", 2, "a2")), data(T(3), ("b", 3, "b3"), ("d", 3, "d3"), parquet=True))
    s.log(data(T(4), ("a", 4, "a4")), delete(T(4), ("c", None)))
    s.log(data(T(5), ("b", 5, "b5")))
    s.commit(T(2), T(3), T(4), T(5))
    assert s.state() == {"a": (4, "a4"), "b": (5, "b5"), "d": (3, "d3")}
    check_oracle(s)
    # Log files handed over out of order are still read in (version, write token) order.
    table, _ = merge_file_slice(Storage(str(s.root)), FID, s.base_path, list(reversed(s.logs)), s.spec())
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {"a": "a4", "b": "b5", "d": "d3"}


def test_delete_then_reinsert(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"))
    s.log(delete(T(2), ("a", None), ("b", None)), data(T(3), ("a", 0, "again")))
    s.commit(T(2), T(3))
    assert s.state() == {"a": (0, "again")}
    assert s.state(as_of=T(2)) == {}
    check_oracle(s)
    check_oracle(s, as_of=T(2))


def test_uncommitted_block_is_ignored(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"))
    s.log(data(T(2), ("a", 2, "failed")), data(T(3), ("b", 3, "b3")))
    s.log(delete(T(4), ("b", None)))  # T4 still inflight: its delete does not count
    s.commit(T(3))
    assert s.state() == {"a": (1, "a1"), "b": (3, "b3")}
    check_oracle(s)


def test_blocks_after_as_of_are_ignored(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"))
    s.log(data(T(2), ("a", 2, "a2")), data(T(3), ("a", 3, "a3"), ("b", 3, "b3")))
    s.log(encode_rollback_block(T(5), T(2)))  # a later rollback is invisible before it happened
    s.commit(T(2), T(3))
    assert s.state(as_of=T(1)) == {"a": (1, "a1")}
    assert s.state(as_of=T(2)) == {"a": (2, "a2")}
    assert s.state(as_of=T(3)) == {"a": (3, "a3"), "b": (3, "b3")}
    assert s.state(as_of=T(4)) == s.state(as_of=T(3))


def test_rollback_block_voids_earlier_blocks(mk: Callable[..., Slice]) -> None:
    """The shape a Spark v6 rollback leaves: the failed write's log, then a log with the command block."""
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"))
    s.log(data(T(2), ("a", 2, "bad")), delete(T(2), ("b", None)))
    s.log(encode_rollback_block(T(3), T(2)))
    s.log(data(T(4), ("c", 4, "c4")))
    s.commit(T(2), T(4))  # even a completed target (rollback_to_instant) is voided by its rollback block
    table, stats = merge_file_slice(Storage(str(s.root)), FID, s.base_path, s.logs, s.spec())
    assert {r["id"]: (r["ts"], r["val"]) for r in table.to_pylist()} == \
        {"a": (1, "a1"), "b": (1, "b1"), "c": (4, "c4")}
    assert (stats.total_rollback_blocks, stats.total_log_blocks, stats.log_files_read) == (1, 4, 3)
    assert stats.total_log_records == 1 and stats.total_deletes == 0
    check_oracle(s)


def test_rollback_block_also_voids_later_blocks(mk: Callable[..., Slice]) -> None:
    """Hudi 0.14's scanner collects rollback targets over the whole slice first, so a block of the
    rolled-back instant that sits after the command block (a zombie task's retry) is void too.

    hudi-rs 0.5.0 (reader_v2 pass 1) only removes blocks seen before the command block, so it is not
    used as the oracle here.
    """
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"))
    s.log(encode_rollback_block(T(3), T(2)), encode_rollback_block(T(3), T(4)))
    s.log(data(T(2), ("a", 2, "bad")), data(T(4), ("b", 4, "bad")), data(T(5), ("c", 5, "c5")))
    s.commit(T(2), T(4), T(5))
    table, stats = merge_file_slice(Storage(str(s.root)), FID, s.base_path, s.logs, s.spec())
    assert {r["id"]: (r["ts"], r["val"]) for r in table.to_pylist()} == \
        {"a": (1, "a1"), "b": (1, "b1"), "c": (5, "c5")}
    assert (stats.total_rollback_blocks, stats.total_log_blocks, stats.total_log_records) == (2, 5, 1)


def test_torn_last_block_is_skipped(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"))
    path = s.log(data(T(2), ("a", 2, "a2")), data(T(3), ("a", 3, "torn"), parquet=True))
    path.write_bytes(path.read_bytes()[:-25])  # the writer died inside the second block
    s.commit(T(2), T(3))
    table, stats = merge_file_slice(Storage(str(s.root)), FID, s.base_path, s.logs, s.spec())
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {"a": "a2"}
    assert (stats.total_log_blocks, stats.total_corrupt_blocks) == (2, 1)


def test_corrupt_middle_block_is_skipped(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"))
    blocks = [data(T(2), ("a", 2, "a2")), data(T(3), ("b", 3, "corrupt")), delete(T(4), ("a", None))]
    raw = bytearray(build_log_file(blocks))
    raw[len(blocks[0]) + len(blocks[1]) - 1] ^= 0xFF  # the middle block's trailing size no longer matches
    s.log(bytes(raw))
    s.commit(T(2), T(3), T(4))
    table, stats = merge_file_slice(Storage(str(s.root)), FID, s.base_path, s.logs, s.spec())
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {"b": "b1"}
    assert (stats.total_log_blocks, stats.total_corrupt_blocks, stats.total_deletes) == (3, 1, 1)
    assert stats.deleted_records == 1 and stats.updated_records == 0


# ---------------------------------------------------------------------------- ordering

ORDERING_CASES: list[tuple[str, list[tuple[str, int | None, str]] | None, list[bytes], dict[str, Any]]] = [
    # name, base, blocks, expected by event time (all confirmed against hudi-rs 0.5.0)
    ("lower log value loses to base", [("k", 5, "base")], [data(T(2), ("k", 3, "log"))], {"k": (5, "base")}),
    ("equal value: later wins", [("k", 5, "base")], [data(T(2), ("k", 5, "log"))], {"k": (5, "log")}),
    ("stale delete is ignored", [("k", 5, "base")], [delete(T(2), ("k", L(3)))], {"k": (5, "base")}),
    ("delete with equal value wins", [("k", 5, "base")], [delete(T(2), ("k", L(5)))], {}),
    ("IntWrapper(0) delete always wins", [("k", 5, "base")], [delete(T(2), ("k", I(0)))], {}),
    ("null delete always wins", [("k", 5, "base")], [delete(T(2), ("k", None))], {}),
    ("LongWrapper(0) is a real value", [("k", 5, "base")], [delete(T(2), ("k", L(0)))], {"k": (5, "base")}),
    ("IntWrapper compares with a long column", [("k", 5, "base")], [delete(T(2), ("k", I(3)))], {"k": (5, "base")}),
    ("log records merge first, then with the base", [("k", 5, "base")],
     [delete(T(2), ("k", I(0))), data(T(3), ("k", 1, "re"))], {"k": (5, "base")}),
    ("re-insert above the base", [("k", 1, "base")],
     [delete(T(2), ("k", I(0))), data(T(3), ("k", 3, "re"))], {"k": (3, "re")}),
    ("re-insert below a stale delete stays deleted", None,
     [data(T(2), ("k", 5, "x")), delete(T(3), ("k", L(6))), data(T(4), ("k", 4, "re"))], {}),
    ("a commit-time delete absorbs later deletes", [("k", 3, "base")],
     [delete(T(2), ("k", None)), delete(T(3), ("k", L(2)))], {}),
    ("data after an absorbed delete wins", None,
     [delete(T(2), ("k", I(0))), delete(T(3), ("k", L(9))), data(T(4), ("k", 5, "re"))], {"k": (5, "re")}),
    ("null ordering counts as 0", [("k", 5, "base")], [data(T(2), ("k", None, "null"))], {"k": (5, "base")}),
    ("null ordering ties with 0", None, [data(T(2), ("k", 0, "zero")), data(T(3), ("k", None, "null"))],
     {"k": (None, "null")}),
    ("duplicates in one block", None, [data(T(2), ("k", 5, "a"), ("k", 4, "b"))], {"k": (5, "a")}),
]


@pytest.mark.parametrize("event_time", [True, False], ids=["event_time", "commit_time"])
@pytest.mark.parametrize(("name", "base", "blocks", "expected"), ORDERING_CASES, ids=[c[0] for c in ORDERING_CASES])
def test_ordering(mk: Callable[..., Slice], event_time: bool, name: str, base: list[Any] | None,
                  blocks: list[bytes], expected: dict[str, Any]) -> None:
    s = mk(event_time=event_time)
    if base:
        s.base(*base)
    s.log(*blocks)
    s.commit(*[T(n) for n in range(2, 6)])
    if event_time:
        assert s.state() == expected
    else:  # commit time: the last operation on the key decides, whatever the ordering values
        log_rows = {r["id"]: (r["ts"], r["val"]) for b in blocks for r in _block_rows(b)}
        last = _last_operation(blocks)
        assert s.state() == ({"k": log_rows["k"]} if last == "data" else {})
    check_oracle(s)


def _block_rows(block: bytes) -> list[dict[str, Any]]:
    from pyhudi.io.log_blocks import avro_block_to_arrow
    from pyhudi.io.log_format import BlockType, read_blocks

    (b,) = read_blocks(block)
    return avro_block_to_arrow(b).to_pylist()[-1:] if b.block_type == BlockType.AVRO_DATA_BLOCK else []


def _last_operation(blocks: list[bytes]) -> str:
    from pyhudi.io.log_format import BlockType, read_blocks

    (b,) = read_blocks(blocks[-1])
    return "data" if b.block_type == BlockType.AVRO_DATA_BLOCK else "delete"


def test_event_time_differs_from_commit_time(mk: Callable[..., Slice]) -> None:
    blocks = [data(T(2), ("a", 9, "a9"), ("b", 2, "b2")), data(T(3), ("a", 4, "a4"), ("b", 7, "b7")),
              delete(T(4), ("b", L(3)))]
    ct, et = mk(), mk(event_time=True)
    for s in (ct, et):
        s.base(("a", 5, "a5"), ("b", 5, "b5"))
        s.log(*blocks)
        s.commit(T(2), T(3), T(4))
    assert ct.state() == {"a": (4, "a4")}
    assert et.state() == {"a": (9, "a9"), "b": (7, "b7")}
    check_oracle(ct)
    check_oracle(et)


@pytest.mark.skipif(not _hudi_rs_available(), reason="hudi (hudi-rs) not installed")
@pytest.mark.parametrize("seed", range(3))
def test_random_histories_match_hudi_rs(mk: Callable[..., Slice], seed: int) -> None:
    """Random bases, data and delete blocks (every wrapper kind), read by pyhudi and by hudi-rs."""
    import random

    rng = random.Random(seed)
    for _ in range(25):
        s = mk(event_time=rng.random() < 0.7)
        keys = ["a", "b", "c"]
        if rng.random() < 0.8:
            s.base(*[(k, rng.choice([None, 1, 3, 5]), "base") for k in keys if rng.random() < 0.8])
        blocks = []
        for j in range(2, rng.randint(3, 7)):
            if rng.random() < 0.6:
                recs = [(k, rng.choice([None, 0, 1, 3, 5, 7]), f"v{j}") for k in keys if rng.random() < 0.6]
                if recs:
                    blocks.append(data(T(j), *recs, parquet=rng.random() < 0.5))
            else:  # hudi-rs needs one wrapper kind per delete block
                pick = rng.choice([lambda: I(0), lambda: None, lambda: L(rng.choice([0, 2, 5, 9])),
                                   lambda: I(rng.choice([3, 4, 6]))])
                dels = [(k, pick()) for k in keys if rng.random() < 0.6]
                if dels:
                    blocks.append(delete(T(j), *dels))
        if not blocks:
            continue
        s.log(*blocks)
        s.commit(*[T(j) for j in range(2, 8)])
        assert s.state() == s.hudi_rs_state()


# ---------------------------------------------------------------------------- schema, meta columns, shapes


def test_schema_evolution_across_blocks(mk: Callable[..., Slice]) -> None:
    old = {**TABLE_AVRO, "fields": [TABLE_AVRO["fields"][0], {"name": "ts", "type": ["null", "int"], "default": None},
                                    TABLE_AVRO["fields"][2]]}
    new = {**TABLE_AVRO, "fields": [*TABLE_AVRO["fields"], {"name": "extra", "type": ["null", "string"],
                                                              "default": None}]}
    old_json, new_json = S.to_json(S.with_meta_fields(old)), S.to_json(S.with_meta_fields(new))
    old_arrow, new_arrow = S.avro_to_arrow(S.with_meta_fields(old)), S.avro_to_arrow(S.with_meta_fields(new))
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"), schema=old_arrow)
    rows_new = Slice.rows(T(3), ("c", 2**40, "c3"), schema=TARGET).append_column("extra", pa.array(["x"]))
    s.log(encode_avro_data_block(Slice.rows(T(2), ("a", 2, "a2"), schema=old_arrow), old_json, T(2)),
          encode_parquet_data_block(Slice.rows(T(2), ("b", 2, "b2"), schema=old_arrow), old_json, T(2)),
          encode_parquet_data_block(rows_new, new_json, T(3)))
    s.commit(T(2), T(3))
    table = s.merge(target=new_arrow)
    assert table.schema == new_arrow
    assert {r["id"]: (r["ts"], r["val"], r["extra"]) for r in table.to_pylist()} == \
        {"a": (2, "a2", None), "b": (2, "b2", None), "c": (2**40, "c3", "x")}
    # Read with the old schema (time travel to before the column was added): the block of T3 is not visible.
    assert s.merge(as_of=T(2), target=old_arrow).schema == old_arrow


def test_meta_columns_and_row_order(mk: Callable[..., Slice]) -> None:
    s = mk()
    name = s.base(("a", 1, "a1"), ("b", 1, "b1"), ("c", 1, "c1"))
    s.log(data(T(2), ("z", 2, "new"), ("b", 2, "b2")))
    s.commit(T(2))
    table, stats = merge_file_slice(Storage(str(s.root)), FID, s.base_path, s.logs, s.spec())
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == ["a", "b", "c", "z"]  # base order, update in place, then inserts
    assert [r["_hoodie_file_name"] for r in rows] == [name, FID, name, FID]
    assert rows[1]["_hoodie_commit_time"] == T(2) and rows[1]["_hoodie_commit_seqno"] == f"{T(2)}_0_1"
    assert rows[0]["_hoodie_commit_time"] == T(1)
    assert table.schema == TARGET
    assert (stats.updated_records, stats.deleted_records, stats.total_log_records) == (1, 0, 2)
    assert stats.log_files_read == 1 and stats.log_bytes_read == (s.root / s.logs[0]).stat().st_size


def test_log_only_slice(mk: Callable[..., Slice]) -> None:
    s = mk(base_ts=T(2))
    s.log(data(T(2), ("a", 1, "a1"), ("b", 1, "b1")), delete(T(3), ("a", None)))
    s.log(data(T(4), ("c", 1, "c1"), parquet=True))
    s.commit(T(2), T(3), T(4))
    assert s.state() == {"b": (1, "b1"), "c": (1, "c1")}
    assert s.state(as_of=T(2)) == {"a": (1, "a1"), "b": (1, "b1")}
    check_oracle(s)


def test_no_logs_returns_base_unchanged(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"), ("a", 2, "dup"))  # not deduplicated: Hudi does not dedupe a base file either
    table, stats = merge_file_slice(Storage(str(s.root)), FID, s.base_path, [], s.spec())
    assert table.num_rows == 2 and stats == type(stats)()
    empty, _ = merge_file_slice(Storage(str(s.root)), FID, None, [], s.spec())
    assert empty.num_rows == 0 and empty.schema == TARGET


def test_virtual_keys_without_meta_fields(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"))
    blank = Slice.rows(T(2), ("a", 2, "a2")).set_column(2, "_hoodie_record_key", pa.nulls(1, pa.string()))
    s.log(encode_parquet_data_block(blank, WRITER_SCHEMA, T(2)), delete(T(2), ("b", None)))
    s.commit(T(2))
    assert s.state(populate_meta=False, record_key_fields=("id",)) == {"a": (2, "a2")}


def test_is_deleted_flag_acts_as_delete(mk: Callable[..., Slice]) -> None:
    avro = {**TABLE_AVRO, "fields": [*TABLE_AVRO["fields"], {"name": "_hoodie_is_deleted",
                                                               "type": ["null", "boolean"], "default": None}]}
    target, writer = S.avro_to_arrow(S.with_meta_fields(avro)), S.to_json(S.with_meta_fields(avro))
    s = mk()
    s.base(("a", 1, "a1"), ("b", 1, "b1"), schema=target)
    rows = Slice.rows(T(2), ("a", 2, "gone"), schema=target).set_column(8, "_hoodie_is_deleted", pa.array([True]))
    s.log(encode_avro_data_block(rows, writer, T(2)))
    s.commit(T(2))
    assert {r["id"] for r in s.merge(target=target).to_pylist()} == {"b"}


def test_merge_speed_50k_records(mk: Callable[..., Slice]) -> None:
    """50k log records in 5 parquet blocks over a 50k-row base; prints the time (no assertion on it)."""
    s = mk()
    n = 50_000
    ids = [f"key-{i:06d}" for i in range(n)]
    base = pa.table({
        "_hoodie_commit_time": [T(1)] * n, "_hoodie_commit_seqno": [f"{T(1)}_0_{i}" for i in range(n)],
        "_hoodie_record_key": ids, "_hoodie_partition_path": [""] * n, "_hoodie_file_name": ["f.parquet"] * n,
        "id": ids, "ts": list(range(n)), "val": ids}, schema=TARGET)
    pq.write_table(base, s.root / f"{FID}_0-1-1_{T(1)}.parquet")
    s.base_path = f"{FID}_0-1-1_{T(1)}.parquet"
    s.commit(T(1))
    blocks = []
    for b in range(5):
        keys = [f"key-{(i * 7 + b * 3) % (2 * n):06d}" for i in range(b * 10_000, (b + 1) * 10_000)]
        t = base.slice(0, 10_000).set_column(2, "_hoodie_record_key", pa.array(keys)).set_column(
            5, "id", pa.array(keys))
        blocks.append(encode_parquet_data_block(t, WRITER_SCHEMA, T(2 + b)))
    s.log(*blocks[:3])
    s.log(*blocks[3:], delete(T(7), *[(f"key-{i:06d}", None) for i in range(0, n, 10)]))
    s.commit(*[T(i) for i in range(2, 8)])
    start = time.perf_counter()
    table, stats = merge_file_slice(Storage(str(s.root)), FID, s.base_path, s.logs, s.spec())
    elapsed = time.perf_counter() - start
    print(f"\nmerged {n} base + {stats.total_log_records} log records + {stats.total_deletes} deletes "
          f"into {table.num_rows} rows in {elapsed:.3f}s")
    assert stats.total_log_records == 50_000
    assert table.num_rows == len(set(table.column("_hoodie_record_key").to_pylist()))


@pytest.mark.parametrize(("avro_type", "low", "mid", "high"), [
    ({"type": "int", "logicalType": "date"}, dt.date(2024, 1, 1), dt.date(2024, 6, 1), dt.date(2025, 1, 1)),
    ({"type": "long", "logicalType": "timestamp-micros"}, dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
     dt.datetime(2024, 6, 1, tzinfo=dt.timezone.utc), dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)),
    ({"type": "fixed", "name": "fixed", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2},
     Decimal("1.50"), Decimal("2.25"), Decimal("10.00")),
    ("string", "2024-01", "2024-06", "2025-01"),
    ("double", -1.5, 0.25, 7.0),
], ids=["date", "timestamp", "decimal", "string", "double"])
def test_event_time_with_other_ordering_types(tmp_path: Path, avro_type: Any, low: Any, mid: Any, high: Any) -> None:
    avro = {"type": "record", "name": "o_record", "namespace": "hoodie.o", "fields": [
        {"name": "id", "type": "string"}, {"name": "o", "type": ["null", avro_type], "default": None}]}
    target, writer = S.avro_to_arrow(S.with_meta_fields(avro)), S.to_json(S.with_meta_fields(avro))

    def rows(instant: str, *recs: tuple[str, Any]) -> pa.Table:
        return pa.Table.from_pylist([{"_hoodie_commit_time": instant, "_hoodie_record_key": k, "id": k, "o": o}
                                     for k, o in recs], schema=target)

    base_name = f"{FID}_0-1-1_{T(1)}.parquet"
    pq.write_table(rows(T(1), ("a", mid), ("b", mid), ("c", mid), ("d", mid), ("e", mid)), tmp_path / base_name)
    log = f".{FID}_{T(1)}.log.1_0-1-1"
    (tmp_path / log).write_bytes(build_log_file([
        encode_parquet_data_block(rows(T(2), ("a", low), ("b", high), ("e", None)), writer, T(2)),
        encode_delete_block([("c", "", high), ("d", "", low)], T(3), writer),
    ]))
    spec = MergeSpec(frozenset({T(1), T(2), T(3)}), None, "o", target)
    table, stats = merge_file_slice(Storage(str(tmp_path)), FID, base_name, [log], spec)
    got = {r["id"]: r["_hoodie_commit_time"] for r in table.to_pylist()}
    # a: lower log value loses; b: higher wins; c: deleted by a higher value; d: stale delete ignored;
    # e: a null ordering value loses to a real one (it ranks as 0 or lowest).
    assert got == {"a": T(1), "b": T(2), "d": T(1), "e": T(1)}
    assert (stats.updated_records, stats.deleted_records) == (1, 1)


def test_blocks_older_than_the_active_timeline_count_as_committed(mk: Callable[..., Slice]) -> None:
    s = mk()
    s.base(("a", 1, "a1"))
    s.log(data(T(2), ("a", 2, "archived")), data(T(3), ("a", 3, "failed")))
    s.commit(T(4))  # T2's deltacommit was archived; T3 is simply not committed
    assert s.state() == {"a": (1, "a1")}
    assert s.state(committed_before=T(3)) == {"a": (2, "archived")}
