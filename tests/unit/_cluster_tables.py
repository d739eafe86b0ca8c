"""Hand-made tables for clustering tests: `hoodie.properties`, written instants and sparse data files.

Clustering plans from names, sizes and the timeline only, so files of any size
cost nothing (they are sparse) and need no content. Pending compaction and
clustering plans are written as Hudi's Avro; a clustering plan written "by
Hudi" names its files with full `file:/` paths, as Hadoop prints them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyhudi.config.registry import Options
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.table_config import COW, MOR, load_table_config, save_table_config
from pyhudi.model.write_stat import WriteStat
from pyhudi.services import clustering
from pyhudi.services.clustering_plan import ClusteringPlanDraft, draft_plan
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.config import ClusteringConfig
from tests.unit._tables import Table

KB = 1024
MB = 1024 * 1024
MAX_FILE_SIZE = 120 * MB  # hoodie.parquet.max.file.size default (125829120)
SCHEMA = json.dumps({"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "p", "type": ["null", "string"], "default": None}]})


def T(n: int) -> str:
    """A 17-digit instant time in 2025."""
    return f"2025010100{n:07d}"


def cfg(**short: Any) -> ClusteringConfig:
    """A ClusteringConfig parsed from Hudi options given by short names (see `opts`)."""
    return ClusteringConfig.from_options(Options.parse(opts(**short)))


def opts(**short: Any) -> dict[str, str]:
    """Hudi clustering keys from short names: small_file_limit=1 -> hoodie.clustering.plan.strategy.small.file.limit."""
    prefix = "hoodie.clustering.plan.strategy."
    names = {"filter_mode": "hoodie.clustering.plan.partition.filter.mode",
             "layout": "hoodie.layout.optimize.strategy",
             "lookback": prefix + "daybased.lookback.partitions",
             "skip_latest": prefix + "daybased.skipfromlatest.partitions",
             "begin": prefix + "cluster.begin.partition", "end": prefix + "cluster.end.partition",
             "regex": prefix + "partition.regex.pattern", "selected": prefix + "partition.selected",
             "single_group": prefix + "single.group.clustering.enabled"}
    return {names.get(k, prefix + k.replace("_", ".")): str(v) for k, v in short.items()}


class ClusterTable(Table):
    """A COPY_ON_WRITE or MERGE_ON_READ table made by hand, partitioned by `p` (directories named freely)."""

    def __init__(self, root: Path, table_type: str = COW, partitioned: bool = True) -> None:
        super().__init__(root, table_type, partitioned)
        self.storage = Storage(str(root))
        save_table_config(self.storage, self.config)

    @classmethod
    def open(cls, root: Path) -> ClusterTable:
        """An existing table (to add files and instants to it)."""
        t = cls.__new__(cls)
        t.root, t.hoodie, t.storage = root, root / ".hoodie", Storage(str(root))
        t.config = load_table_config(t.storage)
        return t

    @property
    def is_mor(self) -> bool:
        return self.config.table_type == MOR

    def sized(self, partition: str, name: str, size: int) -> str:
        with open(self._dir(partition) / name, "wb") as f:
            f.truncate(size)
        return name

    def write(self, ts: str, bases: tuple[tuple[str, str, int], ...] = (),
              logs: tuple[tuple[str, str, str, int, int], ...] = (), state: str = "completed",
              operation: str = "INSERT") -> CommitMetadata:
        """A commit (COW) or deltacommit (MOR) of `ts` that wrote `bases` (partition, fid, size) as
        `<fid>_0-1-1_<ts>.parquet` and `logs` (partition, fid, base instant, version, size) as
        `.<fid>_<base>.log.<version>_0-1-1`."""
        meta = CommitMetadata(operation_type=operation, extra_metadata={"schema": SCHEMA})
        for partition, fid, size in bases:
            name = self.sized(partition, f"{fid}_0-1-1_{ts}.parquet", size)
            meta.add(WriteStat(file_id=fid, path=f"{partition}/{name}" if partition else name,
                               partition_path=partition, num_writes=10, num_inserts=10, total_write_bytes=size,
                               file_size_in_bytes=size))
        for partition, fid, base_ts, version, size in logs:
            name = self.sized(partition, f".{fid}_{base_ts}.log.{version}_0-1-1", size)
            meta.add(WriteStat(file_id=fid, path=f"{partition}/{name}" if partition else name,
                               partition_path=partition, prev_commit=base_ts, num_writes=5, num_update_writes=5,
                               total_write_bytes=size, file_size_in_bytes=size, log_version=version, log_offset=0,
                               base_file="", log_files=[name]))
        self.instant(ts, "deltacommit" if self.is_mor else "commit", state, meta)
        return meta

    def compaction(self, ts: str, groups: list[tuple[str, str]]) -> None:
        """A requested compaction plan over (partition, fid) groups."""
        view = self.view()
        operations = []
        for partition, fid in groups:
            (sl,) = [s for s in view.latest_file_slices(partition) if s.file_id == fid]
            operations.append(am.compaction_operation(
                base_instant_time=sl.base_instant, file_id=fid, partition_path=partition,
                data_file_path=sl.base_file.name if sl.base_file else None,
                delta_file_paths=[lf.name for lf in sl.log_files], metrics={}))
        plan = am.write_instant_avro("HoodieCompactionPlan", am.compaction_plan(operations=operations))
        (self.hoodie / f"{ts}.compaction.requested").write_bytes(plan)

    def hudi_clustering(self, ts: str, groups: list[list[tuple[str, str]]], state: str = "requested",
                        sort_columns: str = "") -> None:
        """A clustering plan as Hudi's Java writer leaves it: slices named by `file:/` paths (Hadoop's
        form of a local path), only the sort columns in the strategy params."""
        view = self.view()
        input_groups = []
        for group in groups:
            slices = []
            for partition, fid in group:
                (sl,) = [s for s in view.latest_file_slices(partition) if s.file_id == fid]
                slices.append(am.slice_info(
                    file_id=fid, partition_path=partition,
                    data_file_path=self.hadoop_path(sl.base_file.path) if sl.base_file else "",
                    delta_file_paths=[self.hadoop_path(lf.path) for lf in sl.log_files]))
            input_groups.append(am.clustering_group(slices=slices, num_output_file_groups=1,
                                                    metrics={"TOTAL_IO_MB": 0.0}))
        params = {"hoodie.clustering.plan.strategy.sort.columns": sort_columns} if sort_columns else {}
        plan = am.clustering_plan(input_groups=input_groups, strategy=am.clustering_strategy(strategy_params=params))
        (self.hoodie / f"{ts}.replacecommit.requested").write_bytes(
            am.write_instant_avro("HoodieRequestedReplaceMetadata", am.requested_replace_metadata(clustering_plan=plan)))
        if state in ("inflight", "completed"):
            (self.hoodie / f"{ts}.replacecommit.inflight").write_bytes(b"")

    def complete_clustering(self, ts: str, written: dict[str, list[int]]) -> CommitMetadata:
        """Complete the pending clustering `ts` as the service does: new base files (sizes per partition in
        `written`) and a replacecommit naming every planned file group as replaced."""
        plan = clustering.read_plan(ActiveTimeline.load(self.storage), ts)
        replaced: dict[str, list[str]] = {}
        for g in plan["inputGroups"]:
            for sl in g["slices"]:
                replaced.setdefault(sl["partitionPath"], []).append(sl["fileId"])
        meta = CommitMetadata(operation_type="CLUSTER", extra_metadata={"schema": SCHEMA},
                              partition_to_replace_file_ids={p: sorted(ids) for p, ids in replaced.items()})
        for partition, sizes in written.items():
            for i, size in enumerate(sizes):
                fid = f"c{ts[-4:]}-{partition.replace('=', '')}-{i}"
                name = self.sized(partition, f"{fid}_0-9-9_{ts}.parquet", size)
                meta.add(WriteStat(file_id=fid, path=f"{partition}/{name}" if partition else name,
                                   partition_path=partition, num_writes=100 + i, num_inserts=100 + i,
                                   total_write_bytes=size, file_size_in_bytes=size))
        if not (self.hoodie / f"{ts}.replacecommit.inflight").exists():
            (self.hoodie / f"{ts}.replacecommit.inflight").write_bytes(b"")
        (self.hoodie / f"{ts}.replacecommit").write_bytes(meta.to_bytes())
        return meta

    def hadoop_path(self, rel: str) -> str:
        return f"file:{self.root.resolve()}/{rel}"

    def view(self) -> FileSystemView:  # type: ignore[override]
        return build_view(self.storage, load_table_config(self.storage), ActiveTimeline.load(self.storage))

    def draft(self, config: ClusteringConfig | None = None, max_file_size: int = MAX_FILE_SIZE) -> ClusteringPlanDraft:
        return draft_plan(self.view(), config or ClusteringConfig(), max_file_size)

    def schedule(self, config: ClusteringConfig | None = None, max_file_size: int = MAX_FILE_SIZE) -> str | None:
        return clustering.schedule(self.storage, load_table_config(self.storage), config or ClusteringConfig(),
                                   max_file_size)

    def requested(self, ts: str) -> dict[str, Any]:
        return am.read_instant_avro((self.hoodie / f"{ts}.replacecommit.requested").read_bytes())

    def replace_requests(self) -> list[str]:
        return sorted(p.name.split(".")[0] for p in self.hoodie.glob("*.replacecommit.requested"))


def groups_of(draft: ClusteringPlanDraft) -> list[list[str]]:
    """File ids per planned group, in plan order."""
    return [[s.file_id for s in g.slices] for g in draft.groups]


def decision(draft: ClusteringPlanDraft, fid: str) -> Any:
    (d,) = [d for d in draft.decisions if d.file_id == fid]
    return d
