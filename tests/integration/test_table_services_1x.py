"""Compaction and clustering on Hudi 1.x tables (versions 8 and 9, timeline layout 2), on copies of the 1.x
sample tables: after every step pyhudi and hudi-rs read the rows of a plain-Python model of the table, and
the plan and commit files pyhudi writes decode as the ones Hudi 1.1 wrote into the sample
`mor_avro_v9_txns_simple_meta` (same embedded schemas, same enums, relative file names in compaction plans,
absolute paths in clustering plans, pending clustering under the `clustering` action)."""

from __future__ import annotations

import io
import pathlib
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.model import avro_models as am
from pyhudi.model.commit_avro import read_commit_avro
from pyhudi.model.table_config import load_table_config
from pyhudi.services import clustering, compaction
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.config import ClusteringConfig
from tests.helpers import extract_sample_1x, hudi_rs, same_rows

REFERENCE = "mor_avro_v9_txns_simple_meta"  # Hudi 1.1.1 wrote a compaction and a clustering into it
# The samples' metadata tables hold indexes pyhudi cannot rebuild; pyhudi drops a metadata table before it
# commits, which these copies allow.
DROP_MDT = {"hoodie.write.drop.unrebuildable.metadata.indexes": "true"}
UPSERT = {"hoodie.datasource.write.operation": "upsert"}
SCHEDULE_COMPACTION = {"hoodie.compact.schedule.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
NEW_FILE_GROUPS = {"hoodie.parquet.small.file.limit": "0"}  # inserts open new (small) file groups


# --------------------------------------------------------------------------- the model
@dataclass
class Modeled:
    """A copy of a sample table and the rows it must hold (key -> data columns)."""

    path: str
    key: str
    ordering: str
    schema: pa.Schema
    rows: dict[Any, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, tmp_path: pathlib.Path, key: str, ordering: str) -> Modeled:
        path = str(extract_sample_1x(name, tmp_path))
        table = pyhudi.read(path)
        columns = [c for c in table.column_names if not c.startswith("_hoodie_")]
        model = cls(path, key, ordering, pa.schema([table.schema.field(c) for c in columns]))
        model.rows = {r[key]: r for r in table.select(columns).to_pylist()}
        return model

    @property
    def timeline_dir(self) -> pathlib.Path:
        return pathlib.Path(self.path) / ".hoodie" / "timeline"

    def upsert(self, keys: list[Any], options: dict[str, str] | None = None) -> str | None:
        """Later versions of `keys` (ordering value up, so every merge mode keeps them)."""
        rows = [dict(self.rows[k]) for k in keys]
        for r in rows:
            r[self.ordering] += 1000
        return self._write(rows, {**UPSERT, **(options or {})})

    def insert(self, rows: list[dict[str, Any]], options: dict[str, str] | None = None) -> str | None:
        return self._write(rows, {"hoodie.datasource.write.operation": "insert", **(options or {})})

    def delete(self, keys: list[Any]) -> str | None:
        rows = [self.rows[k] for k in keys]
        instant = pyhudi.write(pa.Table.from_pylist(rows, schema=self.schema), self.path,
                               {"hoodie.datasource.write.operation": "delete", **DROP_MDT})
        for k in keys:
            del self.rows[k]
        return instant

    def _write(self, rows: list[dict[str, Any]], options: dict[str, str]) -> str | None:
        instant = pyhudi.write(pa.Table.from_pylist(rows, schema=self.schema), self.path, {**DROP_MDT, **options})
        self.rows.update({r[self.key]: r for r in rows})
        return instant

    def expected(self) -> pa.Table:
        return pa.Table.from_pylist(list(self.rows.values()), schema=self.schema)

    def check(self, step: str, actual: pa.Table | None = None, with_hudi_rs: bool = True) -> None:
        """pyhudi (or `actual`, e.g. Spark's rows) and hudi-rs read exactly the model's rows."""
        names = self.schema.names
        ours = actual if actual is not None else pyhudi.read(self.path)
        assert same_rows(ours.select(names), self.expected()), f"{step}: pyhudi's rows differ from the model"
        if not with_hudi_rs:
            return
        theirs = hudi_rs(self.path)
        assert theirs is not None and same_rows(theirs.select(names), self.expected()), \
            f"{step}: hudi-rs's rows differ from the model"

    def new_rows(self, template_key: Any, count: int, prefix: str) -> list[dict[str, Any]]:
        """`count` rows with fresh keys, copies of one existing row (same partition)."""
        base = self.rows[template_key]
        return [{**base, self.key: f"{prefix}-{i:03d}"} for i in range(count)]

    def names(self) -> list[str]:
        return sorted(p.name for p in self.timeline_dir.iterdir() if p.is_file())

    def file(self, name: str) -> bytes:
        return (self.timeline_dir / name).read_bytes()

    def completed(self, instant: str, action: str) -> str:
        (name,) = [n for n in self.names() if n.startswith(f"{instant}_") and n.endswith(f".{action}")]
        return name

    def view(self) -> Any:
        storage = Storage(self.path)
        return build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))


# --------------------------------------------------------------------------- Hudi 1.1's own files
@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The plan and commit files of the reference sample's compaction and clustering."""
    root = extract_sample_1x(REFERENCE, tmp_path_factory.mktemp("reference"))
    timeline = root / ".hoodie" / "timeline"
    files = {p.name: p.read_bytes() for p in timeline.iterdir() if p.is_file()}
    pick = {"compaction.requested": ".compaction.requested", "compaction.inflight": ".compaction.inflight",
            "clustering.requested": ".clustering.requested", "clustering.inflight": ".clustering.inflight"}
    out = {k: next(v for n, v in files.items() if n.endswith(suffix)) for k, suffix in pick.items()}
    compaction_ts = next(n for n in files if n.endswith(".compaction.requested")).split(".")[0]
    clustering_ts = next(n for n in files if n.endswith(".clustering.requested")).split(".")[0]
    out["commit"] = next(v for n, v in files.items() if n.startswith(f"{compaction_ts}_") and n.endswith(".commit"))
    out["replacecommit"] = next(v for n, v in files.items()
                                if n.startswith(f"{clustering_ts}_") and n.endswith(".replacecommit"))
    return out


def _schema_text(data: bytes) -> str:
    return str(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])


def _set_keys(stat: dict[str, Any]) -> set[str]:
    return {k for k, v in stat.items() if v is not None}


def _assert_compaction_files(model: Modeled, instant: str, reference: dict[str, bytes]) -> dict[str, Any]:
    """The compaction's plan, inflight and commit decode as Hudi 1.1's; returns the plan."""
    requested = model.file(f"{instant}.compaction.requested")
    assert _schema_text(requested) == _schema_text(reference["compaction.requested"])
    plan, ref_plan = am.read_instant_avro(requested), am.read_instant_avro(reference["compaction.requested"])
    assert plan.keys() == ref_plan.keys()
    assert (plan["version"], plan["strategy"], plan["preserveHoodieMetadata"]) == (2, None, False)
    assert isinstance(plan["missingSchedulePartitions"], list)
    for op in plan["operations"]:
        assert op.keys() == ref_plan["operations"][0].keys()
        assert op["metrics"].keys() == ref_plan["operations"][0]["metrics"].keys()
        names = [*([op["dataFilePath"]] if op["dataFilePath"] else []), *op["deltaFilePaths"]]
        assert all("/" not in n for n in names), "a compaction plan names files relative to their partition"
        # Hudi's log-file order: the writing delta commit's instant, then the version, then the write token.
        logs = [_log_order(n) for n in op["deltaFilePaths"]]
        assert logs == sorted(logs)
    assert model.file(f"{instant}.compaction.inflight") == reference["compaction.inflight"] == b""
    commit = model.file(model.completed(instant, "commit"))
    assert _schema_text(commit) == _schema_text(reference["commit"])
    meta, replace = read_commit_avro(commit)
    ref_meta, _ = read_commit_avro(reference["commit"])
    assert not replace and (meta["compacted"], meta["operationType"]) == (True, "COMPACT")
    assert set(meta["extraMetadata"]) >= set(ref_meta["extraMetadata"])
    ref_stat = next(iter(ref_meta["partitionToWriteStats"].values()))[0]
    for stats in meta["partitionToWriteStats"].values():
        for stat in stats:
            if stat["prevBaseFile"] is not None:  # merged with a base file, as the reference's were
                assert _set_keys(stat) == _set_keys(ref_stat)
    return plan


def _log_order(name: str) -> tuple[str, int, str]:
    """HoodieLogFile's comparator key of a log file name (instant in the name, version, write token)."""
    from pyhudi.model.file_names import parse_log_file

    parsed = parse_log_file(name)
    assert parsed is not None
    return parsed.base_instant, parsed.version, parsed.write_token or ""


def _assert_clustering_files(model: Modeled, instant: str, reference: dict[str, bytes]) -> dict[str, Any]:
    """The clustering's plan (under the `clustering` action), inflight and replacecommit decode as Hudi 1.1's."""
    names = model.names()
    assert f"{instant}.replacecommit.requested" not in names and f"{instant}.replacecommit.inflight" not in names
    requested = model.file(f"{instant}.clustering.requested")
    assert _schema_text(requested) == _schema_text(reference["clustering.requested"])
    meta, ref = am.read_instant_avro(requested), am.read_instant_avro(reference["clustering.requested"])
    assert meta.keys() == ref.keys() and (meta["operationType"], meta["version"]) == ("CLUSTER", 1)
    plan, ref_plan = meta["clusteringPlan"], ref["clusteringPlan"]
    assert plan.keys() == ref_plan.keys()
    assert (plan["version"], plan["preserveHoodieMetadata"]) == (1, True)
    assert plan["strategy"]["strategyClassName"] == ref_plan["strategy"]["strategyClassName"]
    assert isinstance(plan["missingSchedulePartitions"], list)
    for group in plan["inputGroups"]:
        assert group.keys() == ref_plan["inputGroups"][0].keys()
        for sl in group["slices"]:
            assert sl.keys() == ref_plan["inputGroups"][0]["slices"][0].keys()
            for path in [sl["dataFilePath"], *sl["deltaFilePaths"]]:
                if path:  # absolute, as Hudi writes them (`file:/...` in the reference)
                    assert path.startswith("file:") and model.path in path
    assert model.file(f"{instant}.clustering.inflight") == reference["clustering.inflight"] == b""
    done = model.file(model.completed(instant, "replacecommit"))
    assert _schema_text(done) == _schema_text(reference["replacecommit"])
    commit, replace = read_commit_avro(done)
    assert replace and (commit["compacted"], commit["operationType"]) == (False, "CLUSTER")
    replaced = {(p, f) for p, ids in commit["partitionToReplaceFileIds"].items() for f in ids}
    assert replaced == {(s["partitionPath"], s["fileId"]) for g in plan["inputGroups"] for s in g["slices"]}
    return plan


# --------------------------------------------------------------------------- tests
def test_plan_schemas_are_hudi_1x(tmp_path):
    """Every plan of the 1.0 and 1.1 samples re-encodes byte for byte with the 1.x schemas; version-6
    tables keep the 0.x schema text."""
    seen = 0
    for name in ("mor_avro_v9_txns_simple_meta", "qs_mor_avro_v8_trips_8i3u1d", "cow_v9_txns_simple_meta"):
        timeline = extract_sample_1x(name, tmp_path / name) / ".hoodie" / "timeline"
        for path in timeline.iterdir():
            kind = {".compaction.requested": "HoodieCompactionPlan",
                    ".clustering.requested": "HoodieRequestedReplaceMetadata"}.get(
                next((s for s in (".compaction.requested", ".clustering.requested") if path.name.endswith(s)), ""))
            if kind is None:
                continue
            data = path.read_bytes()
            assert am.write_instant_avro_1x(kind, am.read_instant_avro(data), sync_marker=data[-16:]) == data
            seen += 1
    assert seen == 4
    assert "missingSchedulePartitions" not in am.avro_schema_json("HoodieCompactionPlan")
    assert "missingSchedulePartitions" not in am.avro_schema_json("HoodieRequestedReplaceMetadata")


def test_compaction_on_v9_mor(tmp_path, reference):
    model = Modeled.of("mor_avro_v9_txns_simple_meta", tmp_path, "txn_id", "txn_ts")
    keys = sorted(model.rows)
    model.upsert(keys[:4])
    model.upsert(keys[2:6])
    model.delete(keys[6:7])
    model.check("after upserts and a delete")
    (instant,) = pyhudi.compact(None, model.path, DROP_MDT)
    model.check("after compaction")
    plan = _assert_compaction_files(model, instant, reference)
    view = model.view()
    for op in plan["operations"]:  # every compacted group now starts a slice at the compaction
        (group,) = [g for g in view.file_groups(op["partitionPath"]) if g.file_id == op["fileId"]]
        assert group.slices[-1].base_instant == instant and group.slices[-1].base_file is not None


def test_write_while_compaction_is_pending_on_v8_mor(tmp_path, reference):
    """A log written between schedule and execute lands in the compaction's slice (it completed after the
    compaction was planned): the readers merge it onto the slice before, the compaction leaves it out, and
    the next compaction folds it into the compacted base file."""
    model = Modeled.of("qs_mor_avro_v8_trips_8i3u1d", tmp_path, "uuid", "ts")
    keys = sorted(model.rows)
    model.upsert(keys[:3])
    model.upsert(keys[1:5], SCHEDULE_COMPACTION)
    (pending,) = compaction.pending_compactions(Storage(model.path))
    model.check("compaction scheduled")
    model.upsert(keys[2:5])
    model.check("write while the compaction is pending")
    late = {(p, f): s for (p, f), s in _latest_slices(model).items() if s.base_instant == pending}
    assert late and all(s.base_file is None and s.log_files for s in late.values())
    assert pyhudi.compact(None, model.path, DROP_MDT) == [pending]
    model.check("pending compaction executed")
    plan = am.read_instant_avro(model.file(f"{pending}.compaction.requested"))
    planned = {n for op in plan["operations"] for n in op["deltaFilePaths"]}
    for group, sl in _latest_slices(model).items():
        if group in late:  # compacted base + the log written while it was pending
            assert sl.base_instant == pending and sl.base_file is not None
            assert [lf.name for lf in sl.log_files] == [lf.name for lf in late[group].log_files]
            assert not planned & {lf.name for lf in sl.log_files}
    (following,) = pyhudi.compact(None, model.path, DROP_MDT)
    model.check("next compaction")
    plan = _assert_compaction_files(model, following, reference)
    folded = {(op["partitionPath"], op["fileId"]): op for op in plan["operations"]}
    for group, sl in late.items():
        op = folded[group]
        assert op["baseInstantTime"] == pending
        assert op["deltaFilePaths"] == [lf.name for lf in sl.log_files]


def _latest_slices(model: Modeled) -> dict[tuple[str, str], Any]:
    view = model.view()
    return {(s.partition, s.file_id): s for p in view.partition_paths for s in view.latest_file_slices(p)}


def test_clustering_on_v9_cow(tmp_path, reference):
    """Pending under `clustering` (readers and planners see it as pending clustering), completed as a
    replacecommit that hides the input groups."""
    model = Modeled.of("cow_v9_txns_simple_meta", tmp_path, "txn_id", "txn_ts")
    keys = sorted(model.rows)
    for i, key in enumerate(keys[:3]):
        model.insert(model.new_rows(key, 2, f"NEW{i}"), NEW_FILE_GROUPS)
    model.upsert(keys[3:5])
    model.check("after inserts into new file groups")
    storage, table = Storage(model.path), load_table_config(Storage(model.path))
    instant = clustering.schedule(storage, table, ClusteringConfig(), 128 * 1024 * 1024)
    assert instant is not None and clustering.pending_clusterings(storage) == [instant]
    pending = ActiveTimeline.load(storage).find(instant)
    assert pending is not None and pending.action is Action.CLUSTERING and pending.is_pending
    assert set(model.view().pending_clustering_file_ids().values()) == {instant}
    model.check("clustering pending")
    assert pyhudi.cluster(None, model.path, DROP_MDT) == [instant]
    model.check("after clustering")
    plan = _assert_clustering_files(model, instant, reference)
    assert not clustering.pending_clusterings(storage)
    view = model.view()
    for g in plan["inputGroups"]:
        for sl in g["slices"]:
            assert sl["fileId"] in view.replaced_in(sl["partitionPath"])


def test_clustering_hudi_planned_is_executed(tmp_path, reference):
    """A clustering Hudi 1.1 planned (pending under `clustering`, its slices named by absolute paths of
    the machine that wrote the table) is found and executed by pyhudi: the sample with its clustering's
    completion and output files removed ends with the same rows as Hudi's own clustering left."""
    model = Modeled.of(REFERENCE, tmp_path, "txn_id", "txn_ts")
    root = pathlib.Path(model.path)
    (done,) = [n for n in model.names() if n.endswith(".replacecommit") and
               f"{n.split('_')[0]}.clustering.requested" in model.names()]
    instant = done.split("_")[0]
    meta, _ = read_commit_avro(model.file(done))
    for stats in meta["partitionToWriteStats"].values():
        for stat in stats:
            (root / stat["path"]).unlink()
    (model.timeline_dir / done).unlink()
    assert clustering.pending_clusterings(Storage(model.path)) == [instant]
    assert pyhudi.cluster(None, model.path, DROP_MDT) == [instant]
    model.check("Hudi's clustering plan executed by pyhudi")
    commit, replace = read_commit_avro(model.file(model.completed(instant, "replacecommit")))
    assert replace and {p: set(ids) for p, ids in commit["partitionToReplaceFileIds"].items()} == \
        {p: set(ids) for p, ids in meta["partitionToReplaceFileIds"].items()}


def test_compaction_hudi_planned_is_executed(tmp_path, reference):
    """A compaction Hudi 1.0 planned is executed by pyhudi, with the log Hudi wrote while it was pending: the
    v8 sample with its compaction's commit and base files removed. That log completed after the plan, so it
    joins the compaction's slice, is left out of the compacted file and stays readable beside it."""
    model = Modeled.of("qs_mor_avro_v8_trips_8i3u1d", tmp_path, "uuid", "ts")
    root = pathlib.Path(model.path)
    (done,) = [n for n in model.names() if n.endswith(".commit") and "_" in n]
    instant = done.split("_")[0]
    meta, _ = read_commit_avro(model.file(done))
    for stats in meta["partitionToWriteStats"].values():
        for stat in stats:
            (root / stat["path"]).unlink()
    (model.timeline_dir / done).unlink()
    storage = Storage(model.path)
    assert compaction.pending_compactions(storage) == [instant]
    late = {k: s for k, s in _latest_slices(model).items() if s.base_instant == instant}
    assert late and all(s.base_file is None and s.log_files for s in late.values())
    model.check("Hudi's compaction pending", with_hudi_rs=False)  # hudi-rs lists the removed files from the MDT
    assert pyhudi.compact(None, model.path, DROP_MDT) == [instant]
    model.check("Hudi's compaction plan executed by pyhudi")
    for key, sl in _latest_slices(model).items():
        if key in late:
            assert sl.base_file is not None and [lf.name for lf in sl.log_files] == \
                [lf.name for lf in late[key].log_files]
    ours, _ = read_commit_avro(model.file(model.completed(instant, "commit")))
    assert {(st["partitionPath"], st["fileId"], st["prevBaseFile"]) for v in ours["partitionToWriteStats"].values()
            for st in v} == {(st["partitionPath"], st["fileId"], st["prevBaseFile"])
                             for v in meta["partitionToWriteStats"].values() for st in v}


def test_inline_services_on_v9_mor(tmp_path, reference):
    """hoodie.compact.inline and hoodie.clustering.inline run after MOR writes of a 1.x table: the compaction
    completes as `<C>_<completion>.commit`, the clustering (merging its groups' logs) as a replacecommit."""
    model = Modeled.of("mor_avro_v9_txns_simple_meta", tmp_path, "txn_id", "txn_ts")
    keys = sorted(model.rows)
    model.upsert(keys[:5])
    before = set(model.names())
    model.upsert(keys[3:8], {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"})
    model.check("after inline compaction")
    (compacted,) = {n.split(".")[0] for n in set(model.names()) - before if n.endswith(".compaction.requested")}
    _assert_compaction_files(model, compacted, reference)
    model.insert(model.new_rows(keys[0], 2, "NEW"), NEW_FILE_GROUPS)
    before = set(model.names())
    model.upsert(keys[:2], {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "2"})
    model.check("after inline clustering")
    (clustered,) = {n.split(".")[0] for n in set(model.names()) - before if n.endswith(".clustering.requested")}
    plan = _assert_clustering_files(model, clustered, reference)
    assert any(sl["deltaFilePaths"] for g in plan["inputGroups"] for sl in g["slices"])


def test_dropped_clustering_leaves_no_instant_files(tmp_path):
    """A clustering rolled back (conflict, replaced inputs, bad plan) removes its `clustering` files."""
    model = Modeled.of("cow_v9_txns_simple_meta", tmp_path, "txn_id", "txn_ts")
    keys = sorted(model.rows)
    model.insert(model.new_rows(keys[0], 2, "NEW"), NEW_FILE_GROUPS)
    storage = Storage(model.path)
    instant = clustering.schedule(storage, load_table_config(storage), ClusteringConfig(), 128 * 1024 * 1024)
    assert instant is not None
    assert not clustering.owner_gone(storage, instant, 60000, 2)  # its plan file is fresh
    clustering.rollback_clustering(storage, instant)
    assert not [n for n in model.names() if n.startswith(instant)]
    assert not clustering.pending_clusterings(storage)
    model.check("clustering dropped")


# --------------------------------------------------------------------------- Spark
@pytest.mark.spark
def test_compaction_on_spark(spark, tmp_path, reference):
    model = Modeled.of("qs_mor_avro_v8_trips_8i3u1d", tmp_path, "uuid", "ts")
    keys = sorted(model.rows)
    model.upsert(keys[:4])
    (instant,) = pyhudi.compact(spark, model.path, DROP_MDT)
    model.check("compacted on Spark", pyhudi.read(spark, model.path).toArrow())
    _assert_compaction_files(model, instant, reference)


@pytest.mark.spark
def test_clustering_on_spark(spark, tmp_path, reference):
    model = Modeled.of("mor_avro_v9_txns_simple_meta", tmp_path, "txn_id", "txn_ts")
    keys = sorted(model.rows)
    model.insert(model.new_rows(keys[0], 2, "NEW"), NEW_FILE_GROUPS)
    model.upsert(keys[:3])
    (instant,) = pyhudi.cluster(spark, model.path, DROP_MDT)
    model.check("clustered on Spark", pyhudi.read(spark, model.path).toArrow())
    _assert_clustering_files(model, instant, reference)

