"""`pyhudi files --as-of` and `--plot OUT.png|OUT.html`, on hand-made tables (no Spark).

The table: 12 small files at T1, then a clustering-like replacecommit at T2 that replaces them with one
well-sized and one small file, so "before" and "after" differ in every number the plot shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pyhudi.cli import files_plot, plot_html
from pyhudi.cli.main import main
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.table_config import MOR, save_table_config
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from tests.unit._tables import T, Table

KIB = 1024
LIMIT, MAX = 100 * KIB, 120 * KIB
LIMIT_FLAGS = ("--small-file-limit", str(LIMIT), "--max-file-size", str(MAX))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _table(root: Path, table_type: str = "COPY_ON_WRITE") -> Table:
    t = Table(root, table_type)
    save_table_config(Storage(str(root)), t.config)
    return t


@pytest.fixture
def clustered(tmp_path: Path) -> Path:
    """T1: 8 x 15 KiB in p=a, 4 x 10 KiB in p=b. T2 replaces all of them: 110 KiB in a, 40 KiB in b."""
    t = _table(tmp_path / "t")
    for i in range(8):
        t.base("p=a", f"a{i}", T(1), size=15 * KIB)
    for i in range(4):
        t.base("p=b", f"b{i}", T(1), size=10 * KIB)
    t.instant(T(1), "commit")
    t.base("p=a", "ca", T(2), size=110 * KIB)
    t.base("p=b", "cb", T(2), size=40 * KIB)
    t.instant(T(2), "replacecommit", meta=CommitMetadata(
        operation_type="CLUSTER", partition_to_replace_file_ids={"p=a": [f"a{i}" for i in range(8)],
                                                                  "p=b": [f"b{i}" for i in range(4)]}))
    return t.root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# --------------------------------------------------------------------------- --as-of on the listing
def test_as_of_listing_shows_the_table_before_the_clustering(clustered: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    before = run_json(capsys, "files", str(clustered), "--as-of", T(1), *LIMIT_FLAGS)
    after = run_json(capsys, "files", str(clustered), *LIMIT_FLAGS)
    assert before["as_of"] == T(1) and after["as_of"] is None
    assert before["totals"]["base_files"] == 12 and before["totals"]["bytes"] == (8 * 15 + 4 * 10) * KIB
    assert before["totals"]["small_files"] == 12 and before["totals"]["well_sized_pct"] == 0.0
    assert not any(g["replaced"] for p in before["partitions"] for g in p["file_groups"])
    assert after["totals"]["base_files"] == 2 and after["totals"]["small_files"] == 1
    assert after["totals"]["well_sized_pct"] == round(100 * 110 / 150, 1)
    # Before T2 the clustering's file groups did not exist yet; after it, the old ones are replaced.
    ids_before = {g["file_id"] for p in before["partitions"] for g in p["file_groups"]}
    assert "ca" not in ids_before and "a0" in ids_before
    code, out, _ = run(capsys, "files", str(clustered), "--as-of", T(1))
    assert code == 0 and f"as of {T(1)}" in out.splitlines()[0]


def test_limits_come_from_flags_options_properties_or_defaults(clustered: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "files", str(clustered))
    assert data["limit_sources"] == {"small_file_limit": "default", "max_file_size": "default"}
    assert data["small_file_limit"] == 104857600 and data["max_file_size"] == 125829120
    data = run_json(capsys, "files", str(clustered), "-o", f"hoodie.parquet.max.file.size={MAX}")
    assert data["max_file_size"] == MAX and data["limit_sources"]["max_file_size"] == \
        "-o hoodie.parquet.max.file.size"
    props = clustered / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"hoodie.parquet.small.file.limit={LIMIT}\n")
    data = run_json(capsys, "files", str(clustered), "--max-file-size", "120KB")
    assert data["small_file_limit"] == LIMIT and data["limit_sources"] == {
        "small_file_limit": "hoodie.properties", "max_file_size": "--max-file-size"}
    code, out, _ = run(capsys, "files", str(clustered))
    assert "small-file limit 100.0 KiB (hoodie.properties), max file size 120.0 MiB (default)" in out
    code, _, err = run(capsys, "files", str(clustered), "-o", "hoodie.parquet.max.file.size=0")
    assert code == 2 and "hoodie.parquet.max.file.size=0 must be greater than 0" in err


def test_mor_as_of_leaves_out_log_files_written_later(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = _table(tmp_path / "m", MOR)
    t.base("p=a", "g1", T(1), size=30 * KIB)
    t.instant(T(1), "deltacommit")
    log = t.log("p=a", "g1", T(1), size=7 * KIB)
    meta = CommitMetadata(operation_type="UPSERT")
    meta.add(WriteStat(file_id="g1", path=f"p=a/{log}", partition_path="p=a", prev_commit=T(1), log_version=1,
                       file_size_in_bytes=7 * KIB))
    t.instant(T(2), "deltacommit", meta=meta)
    assert run_json(capsys, "files", str(t.root), "--as-of", T(1))["totals"]["log_bytes"] == 0
    assert run_json(capsys, "files", str(t.root), "--as-of", T(2))["totals"]["log_bytes"] == 7 * KIB
    model = run_json(capsys, "files", str(t.root), "--as-of", f"{T(1)},latest", "--plot",
                     str(tmp_path / "m.html"), *LIMIT_FLAGS)
    assert [sum(b["log_bytes"] for b in p["bins"]) for p in model["panels"]] == [0, 7 * KIB]
    assert [sum(b["files"] for b in p["bins"]) for p in model["panels"]] == [1, 1]
    page = (tmp_path / "m.html").read_text()
    assert "log file bytes" in page and "7.0 KiB (7,168 B)" in page


# --------------------------------------------------------------------------- --plot
def test_png_has_one_panel_per_as_of(clustered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    out2, out1 = tmp_path / "two.png", tmp_path / "one.png"
    code, text, err = run(capsys, "files", str(clustered), "--plot", str(out2), "--as-of", T(1), "--as-of",
                          "latest", *LIMIT_FLAGS)
    assert code == 0, err
    assert text.splitlines()[0] == f"wrote {out2}: t, 2 panels"
    assert f"as of {T(1)}: 12 base files, 160.0 KiB; 0.0% of bytes well-sized" in text
    assert f"latest ({T(2)}): 2 base files, 150.0 KiB; 73.3% of bytes well-sized" in text
    assert run(capsys, "files", str(clustered), "--plot", str(out1), *LIMIT_FLAGS)[0] == 0
    for path, panels in ((out2, 2), (out1, 1)):
        data = path.read_bytes()
        assert data[:8] == PNG_SIGNATURE and len(data) > 10_000
        with Image.open(path) as img:
            assert img.format == "PNG" and img.size == (600 * panels, 480)
            colours = {c for _, c in img.convert("RGB").getcolors(1_000_000) or []}
        assert (0x4C, 0x72, 0xB0) in colours  # the base-file bars were drawn


def test_html_is_self_contained_with_numbers(clustered: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sizes.html"
    code, _, err = run(capsys, "files", str(clustered), "--plot", str(out), "--as-of", f"{T(1)},latest",
                       *LIMIT_FLAGS)
    assert code == 0, err
    page = out.read_text()
    panels = re.findall(r'<section class="panel" data-as-of="([^"]*)" data-instant="([^"]*)"', page)
    assert panels == [(T(1), T(1)), ("latest", T(2))]
    assert page.count("<svg") == 2 and "<script" not in page and "src=" not in page and "href=" not in page
    assert re.findall(r"https?://[^\"]+", page) == ["http://www.w3.org/2000/svg"] * 2  # namespace only
    row = re.search(r"<tr><td>base files</td><td>(\d+)</td><td>(\d+)</td></tr>", page)
    assert row and row.groups() == ("12", "2")
    assert "<td>% of bytes well-sized</td><td>0.0%</td><td>73.3%</td>" in page
    assert "100.0 KiB (102,400 B) [--small-file-limit]" in page and "120.0 KiB (122,880 B) [--max-file-size]" in page
    # Each bar's tooltip carries its numbers: the 110 KiB file sits in a bin between the limit and the max.
    tips = re.findall(r"<title>([^<]*)</title>", page)
    assert any(t.endswith("1 base file, 110.0 KiB") for t in tips)
    assert sum(int(n) for n in re.findall(r"text-anchor=\"middle\">(\d+)</text>", page)) >= 14


def test_plot_bins_the_files_instead_of_drawing_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A table with many files of very different sizes still gets at most MAX_BINS bars per panel, and every
    file is counted in exactly one of them."""
    t = _table(tmp_path / "many")
    sizes = [(i * 7919) % (3 * MAX) + 1 for i in range(400)] + [50 * MAX]
    for i, size in enumerate(sizes):
        (t.root / "p=a").mkdir(exist_ok=True)
        (t.root / "p=a" / ".hoodie_partition_metadata").touch()
        with open(t.root / "p=a" / f"f{i}_0-1-1_{T(1)}.parquet", "wb") as fh:
            fh.truncate(size)
    t.instant(T(1), "commit")
    model = run_json(capsys, "files", str(t.root), "--plot", str(tmp_path / "x.html"), *LIMIT_FLAGS)
    bins = model["panels"][0]["bins"]
    assert len(bins) <= files_plot.MAX_BINS
    assert sum(b["files"] for b in bins) == len(sizes) and sum(b["base_bytes"] for b in bins) == sum(sizes)
    assert bins[-1]["hi"] > max(sizes)
    assert all(len([b for b in bins if b["lo"] <= size < b["hi"]]) == 1 for size in sizes)
    assert (tmp_path / "x.html").read_text().count("<rect") <= files_plot.MAX_BINS + 1


def test_plot_errors(clustered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "files", str(clustered), "--plot", str(tmp_path / "x.jpg"))
    assert code == 2 and "cannot write .jpg" in err and ".png, .html" in err
    assert not (tmp_path / "x.jpg").exists()
    code, _, err = run(capsys, "files", str(clustered), "--plot", str(tmp_path / "noext"))
    assert code == 2 and "no extension" in err
    code, _, err = run(capsys, "files", str(clustered), "--plot", str(tmp_path / "x.png"), "--as-of", "20240101")
    assert code == 2 and "no completed write at or before 20240101000000000" in err and f"is {T(1)}" in err
    seven = ",".join([T(1)] * 7)
    code, _, err = run(capsys, "files", str(clustered), "--plot", str(tmp_path / "x.png"), "--as-of", seven)
    assert code == 2 and "7 --as-of instants" in err and "at most 6" in err
    code, _, err = run(capsys, "files", str(clustered), "--as-of", T(1), "--as-of", T(2))
    assert code == 2 and "--plot" in err
    code, _, err = run(capsys, "files", str(clustered), "--as-of", "yesterday", "--plot", str(tmp_path / "x.html"))
    assert code == 2 and "'yesterday' is not a valid instant time" in err
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.html").exists()


def test_as_of_a_cleaned_instant_fails_like_time_travel(clustered: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """After a clean deletes the replaced files, a plot as of T1 cannot be drawn truthfully."""
    from pyhudi.model import avro_models as am

    meta = CommitMetadata(operation_type="INSERT")
    for i in range(8):
        meta.add(WriteStat(file_id=f"a{i}", path=f"p=a/a{i}_0-1-1_{T(1)}.parquet", partition_path="p=a"))
    (clustered / ".hoodie" / f"{T(1)}.commit").write_bytes(meta.to_bytes())
    (clustered / "p=a" / f"a0_0-1-1_{T(1)}.parquet").unlink()
    clean = am.clean_metadata(start_clean_time=T(3), earliest_commit_to_retain=T(2), partition_metadata={})
    (clustered / ".hoodie" / f"{T(3)}.clean").write_bytes(am.write_instant_avro("HoodieCleanMetadata", clean))
    code, _, err = run(capsys, "files", str(clustered), "--plot", str(tmp_path / "x.png"), "--as-of", T(1))
    assert code == 2 and f"cannot read {clustered} as of {T(1)}" in err
    assert f"the earliest instant still readable is {T(2)}" in err


# --------------------------------------------------------------------------- pieces
def test_plot_format_and_as_of_parsing() -> None:
    assert files_plot.plot_format("a/b.PNG") == "png" and files_plot.plot_format("x.htm") == "html"
    assert files_plot.parse_as_of([f"{T(1)}, latest", "2025-01-01 00:00:00"]) == [T(1), None, "20250101000000000"]
    assert files_plot.parse_as_of([]) == []


def test_size_edges() -> None:
    edges = files_plot.size_edges(MAX, 10)
    assert edges[0] == 0 and edges[1] == MAX // 20 and edges[-1] >= MAX * 1.25
    assert all(b > a for a, b in zip(edges, edges[1:]))
    huge = files_plot.size_edges(MAX, 10**12)
    assert len(huge) - 1 <= files_plot.MAX_BINS and huge[-1] > 10**12
    assert files_plot.size_edges(MAX, 0, 10 * MAX)[-1] >= 10 * MAX  # a limit above max still shows
    assert files_plot.bin_rows([(None, 5), (0, 0), (MAX, 3)], edges)[0] == {
        "lo": 0, "hi": MAX // 20, "files": 1, "base_bytes": 0, "log_bytes": 5}


def test_nice_ticks() -> None:
    assert plot_html.nice_ticks(10) == [0, 2, 4, 6, 8, 10]
    assert plot_html.nice_ticks(0.33) == pytest.approx([0, 0.1, 0.2, 0.3, 0.4])
    assert plot_html.nice_ticks(0) == [0.0, 1.0]
