"""Wide commits are read from their tail: replaced file ids, extraMetadata and the write totals a commit
stamps for itself equal what the whole file says, and the whole file is not read when the tail holds them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyhudi.model.commit_metadata import TOTALS_KEY, CommitMetadata
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.commit_totals import json_totals
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSystemView

# Partition names that a byte search or a careless decode would get wrong.
ODD = ["partitionToReplaceFileIds", "extraMetadata", 'quo"te', "back\\slash", "dt=2024/01/02", "ünï/çødé",
       "1.5", "", "a}b{c", "p[0]"]


def _wide(partitions: list[str], replace: bool, base_and_logs: bool = False) -> CommitMetadata:
    meta = CommitMetadata(operation_type="CLUSTER" if replace else "UPSERT",
                          extra_metadata={"schema": '{"type":"record","name":"x"}', "k": 'v "q" \\'})
    for i, p in enumerate(partitions):
        for j in range(2):
            name = f"f{i}-{j}_0-1-1_20260101000000000.parquet" if not base_and_logs or j == 0 \
                else f".f{i}-{j}_20260101000000000.log.1_0-1-1"
            meta.add(WriteStat(file_id=f"f{i}-{j}", path=f"{p}/{name}" if p else name, partition_path=p,
                               num_writes=10 + i, total_write_bytes=1000 + j + i))
    if replace:
        meta.partition_to_replace_file_ids = {p: [f"old-{i}-a", f"old-{i}-b"] for i, p in enumerate(partitions)}
    return meta


def _timeline(tmp_path: Path, metas: dict[str, tuple[Action, bytes]]) -> ActiveTimeline:
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir(exist_ok=True)
    for ts, (action, data) in metas.items():
        (hoodie / f"{ts}.{action.value}.requested").write_bytes(b"")
        (hoodie / f"{ts}.{action.value}").write_bytes(data)
    return ActiveTimeline.load(Storage(str(tmp_path)))


class _Reads:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.whole: list[str] = []
        self.ranges: list[tuple[str, int, int]] = []
        read_bytes, read_range = Storage.read_bytes, Storage.read_range

        def spy_bytes(storage: Storage, rel: str) -> bytes:
            self.whole.append(rel)
            return read_bytes(storage, rel)

        def spy_range(storage: Storage, rel: str, start: int, end: int) -> bytes:
            self.ranges.append((rel, start, end))
            return read_range(storage, rel, start, end)

        monkeypatch.setattr(Storage, "read_bytes", spy_bytes)
        monkeypatch.setattr(Storage, "read_range", spy_range)


def _partitions(n: int) -> list[str]:
    return ODD + [f"p{i:05d}" for i in range(n)]


def test_replaced_ids_of_a_wide_replacecommit_come_from_its_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = _partitions(3000)
    meta = _wide(parts, replace=True)
    data = meta.to_bytes("20260101000000001")
    assert len(data) > 1 << 20
    timeline = _timeline(tmp_path, {"20260101000000001": (Action.REPLACE_COMMIT, data)})
    reads = _Reads(monkeypatch)
    inst = Instant("20260101000000001", Action.REPLACE_COMMIT)
    ids = timeline.replaced_ids(inst)
    assert reads.whole == [] and len(reads.ranges) == 1  # the tail only
    expected = json.loads(data)["partitionToReplaceFileIds"]
    for p in parts:
        assert ids.get(p) == expected[p]
    assert ids.get("no such partition") == []
    assert dict(ids.items()) == expected
    assert timeline.top_level(inst, "operationType", str) == "CLUSTER"
    assert timeline.top_level(inst, "extraMetadata", dict) == json.loads(data)["extraMetadata"]
    assert reads.whole == []


def test_a_section_larger_than_the_tail_falls_back_to_the_whole_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    parts = _partitions(6000)
    meta = _wide(parts, replace=True)
    meta.partition_to_write_stats = {}  # a delete_partition: replaced ids only, so the tail is not enough
    data = meta.to_bytes("20260101000000001")
    timeline = _timeline(tmp_path, {"20260101000000001": (Action.REPLACE_COMMIT, data)})
    reads = _Reads(monkeypatch)
    ids = timeline.replaced_ids(Instant("20260101000000001", Action.REPLACE_COMMIT))
    assert len(reads.whole) == 1
    assert dict(ids.items()) == json.loads(data)["partitionToReplaceFileIds"]


def test_view_answers_per_partition_what_the_whole_table_set_says(tmp_path: Path) -> None:
    parts = _partitions(3000)
    first = _wide(parts, replace=True).to_bytes("20260101000000001")
    second = _wide(parts[:5], replace=True)
    second.partition_to_replace_file_ids = {p: ["later-" + str(i)] for i, p in enumerate(parts[:5])}
    timeline = _timeline(tmp_path, {"20260101000000001": (Action.REPLACE_COMMIT, first),
                                    "20260101000000002": (Action.REPLACE_COMMIT, second.to_bytes())})
    view = FileSystemView(Storage(str(tmp_path)), None, timeline)  # type: ignore[arg-type]
    for as_of in (None, "20260101000000001", "20260101000000000"):
        whole = view.replaced_file_ids(as_of)
        for p in parts[:40] + ["missing"]:
            assert view.replaced_in(p, as_of) == {fid for q, fid in whole if q == p}


@pytest.mark.parametrize("action", [Action.COMMIT, Action.DELTA_COMMIT])
def test_stamped_totals_equal_the_sums_of_the_write_stats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          action: Action) -> None:
    meta = _wide(_partitions(3000), replace=False, base_and_logs=True)
    data = meta.to_bytes("20260101000000001")
    timeline = _timeline(tmp_path, {"20260101000000001": (action, data)})
    reads = _Reads(monkeypatch)
    inst = Instant("20260101000000001", action)
    for base_only in (False, True):
        assert timeline.write_totals(inst, base_only) == json_totals(data, base_only, "x")
    assert reads.whole == []
    assert len(data) > 1 << 20 and [end - start for _, start, end in reads.ranges] == [256 << 10]


@pytest.mark.parametrize("stamp", [
    "20260101000000000:1,2,3,4",  # copied from another commit
    "20260101000000001:1,2,3",  # malformed
    "20260101000000001:1,2,x,4",
    "20260101000000001:-1,2,3,4",
])
def test_a_stamp_for_another_instant_or_malformed_is_ignored(tmp_path: Path, stamp: str) -> None:
    meta = _wide(_partitions(3000), replace=False)
    meta.extra_metadata[TOTALS_KEY] = stamp
    data = meta.to_bytes()  # not stamped again: the odd value stays
    assert json.loads(data)["extraMetadata"][TOTALS_KEY] == stamp
    timeline = _timeline(tmp_path, {"20260101000000001": (Action.COMMIT, data)})
    inst = Instant("20260101000000001", Action.COMMIT)
    assert timeline.write_totals(inst) == json_totals(data, False, "x")


# ------------------------------------------------------------------------ in-place lookup, adversarially

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pyhudi.model import jackson  # noqa: E402
from pyhudi.model.replaced_ids import ReplacedIds  # noqa: E402

_NAMES = st.one_of(st.text(alphabet=st.sampled_from(list('ab1/=:",[]{}\\ \t\nü😀')), max_size=8),
                   st.sampled_from(["partitionToReplaceFileIds", '"partitionToReplaceFileIds": {', "p00001"]))


@settings(max_examples=300, deadline=None)
@given(ids=st.dictionaries(_NAMES, st.one_of(st.none(), st.lists(_NAMES, max_size=3)), max_size=8),
       stats=st.dictionaries(_NAMES, st.just([{"path": "x", "numWrites": 1}]), max_size=3),
       probe=st.lists(_NAMES, max_size=4), style=st.sampled_from(["jackson", "ascii", "utf8", "compact"]),
       cut=st.integers(min_value=0, max_value=400))
def test_in_place_lookup_equals_a_decode(ids: dict, stats: dict, probe: list, style: str, cut: int) -> None:
    doc = {"partitionToWriteStats": stats, "compacted": False,
           "extraMetadata": {"partitionToReplaceFileIds": '{"a": ["b"]}'}, "operationType": "CLUSTER",
           "partitionToReplaceFileIds": ids}
    data = {"jackson": lambda: jackson.dumps(doc).encode(),
            "ascii": lambda: json.dumps(doc).encode(),
            "utf8": lambda: json.dumps(doc, ensure_ascii=False).encode(),
            "compact": lambda: json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()}[style]()
    for tail in (False, True):
        chunk = data[min(cut, len(data) - 1):] if tail else data
        found = ReplacedIds.locate(chunk, tail=tail)
        if found is None:
            assert tail  # the whole file always has it; a tail may have cut it
            continue
        for p in list(ids) + probe:
            assert found.get(p) == [str(f) for f in ids.get(p) or []], (p, style, tail)
        assert dict(found.items()) == {p: [str(f) for f in v or []] for p, v in ids.items()}


@pytest.mark.parametrize("probe", ['a" ],\n    "b', 'x" : [ "a', "x", "b", "", ":", " ],\n    ", '"'])
def test_a_name_spanning_two_strings_is_not_a_key(probe: str) -> None:
    ids = {"x": ["a"], "b": ["B1"], ":y": ["c"]}
    data = jackson.dumps({"partitionToWriteStats": {}, "partitionToReplaceFileIds": ids}).encode()
    assert b"\\" not in data  # the in-place lookup, not a decode
    found = ReplacedIds.locate(data)
    assert found is not None and found._raw is None
    assert found.get(probe) == ids.get(probe, [])
