"""Checks of a table on disk shared by the fault tests: the model through pyhudi and hudi-rs, the
timeline's file names, base files against the commits that name them, byte-for-byte fingerprints."""

from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import pathlib
from typing import Any

import fastavro

import pyhudi
from tests.helpers import hudi_rs, rows_by_key

COLS = ["name", "city", "ts"]


def opts(name: str, **extra: Any) -> dict[str, str]:
    base = {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts"}
    base.update({k.replace("__", "."): str(v) for k, v in extra.items()})
    return base


def uri_to_rel(uri: str, base: str) -> str:
    local = uri[len("file://"):] if uri.startswith("file://") else uri[len("file:"):] if uri.startswith("file:") else uri
    return os.path.relpath(local, base)


def assert_table(spark, path: str | os.PathLike[str], model: dict[int, tuple], as_of: str | None = None) -> None:
    """pyhudi and hudi-rs both return exactly the model's rows (and no key twice)."""
    options = {"as.of.instant": as_of} if as_of else None
    expected = {k: tuple(v) for k, v in model.items()}
    ours = rows_by_key(pyhudi.read(spark, str(path), options).toArrow(), "id", COLS)
    assert ours == expected, f"pyhudi read differs from the model ({len(ours)} vs {len(expected)} keys)"
    theirs = rows_by_key(hudi_rs(path, as_of=as_of), "id", COLS)
    assert theirs == expected, f"hudi-rs read differs from the model ({len(theirs)} vs {len(expected)} keys)"


def hoodie_names(path: str | os.PathLike[str]) -> list[str]:
    return sorted(n for n in os.listdir(os.path.join(path, ".hoodie"))
                  if os.path.isfile(os.path.join(path, ".hoodie", n)))


def completed_commits(path: str | os.PathLike[str]) -> list[str]:
    return sorted(n.split(".")[0] for n in hoodie_names(path)
                  if n.count(".") == 1 and n.split(".")[1] in ("commit", "deltacommit", "replacecommit"))


def all_data_files(path: str | os.PathLike[str]) -> list[str]:
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        out += [os.path.relpath(os.path.join(root, f), path) for f in files if f.endswith(".parquet")]
    return sorted(out)


def split_name(rel: str) -> tuple[str, str, str]:
    """(fileId, writeToken, instant) of a base file path."""
    stem = os.path.basename(rel)[: -len(".parquet")]
    fid, token, instant = stem.split("_")
    return fid, token, instant


def assert_files_match_commits(path: str | os.PathLike[str]) -> None:
    """Every base file on disk belongs to a completed commit that names it, one per (fileId, instant)."""
    files = all_data_files(path)
    per_group = collections.Counter((split_name(f)[0], split_name(f)[2]) for f in files)
    dupes = {k: n for k, n in per_group.items() if n > 1}
    assert not dupes, f"more than one base file for the same file group and instant: {dupes}"
    done = completed_commits(path)
    for f in files:
        assert split_name(f)[2] in done, f"{f} belongs to no completed commit"
    for ts in done:
        meta = json.loads(pathlib.Path(path, ".hoodie", f"{ts}.commit").read_text())
        named = sorted(s["path"] for stats in meta["partitionToWriteStats"].values() for s in stats if s["path"])
        on_disk = sorted(f for f in files if split_name(f)[2] == ts)
        assert named == on_disk, f"commit {ts}: write stats name {named}, disk has {on_disk}"


def read_avro(path: pathlib.Path) -> dict[str, Any]:
    (record,) = list(fastavro.reader(io.BytesIO(path.read_bytes())))
    assert isinstance(record, dict)
    return record


def tree_snapshot(root: str | os.PathLike[str]) -> dict[str, tuple]:
    """Every file and directory under root with size, mtime and content hash: a byte-for-byte fingerprint."""
    out: dict[str, tuple] = {}
    if not os.path.exists(root):
        return out
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            st = os.stat(os.path.join(dirpath, d))
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = ("dir", st.st_mtime_ns)
        for f in files:
            full = os.path.join(dirpath, f)
            st = os.stat(full)
            digest = hashlib.sha256(pathlib.Path(full).read_bytes()).hexdigest()
            out[os.path.relpath(full, root)] = (st.st_size, st.st_mtime_ns, digest)
    return out
