"""Storage: listing, atomic writes (never a partial file), exclusive create races, deletes, pickling."""

from __future__ import annotations

import os
import pickle
import threading
import time

import pyarrow.fs as pafs
import pytest

from pyhudi.storage import FileInfo, Storage
from pyhudi.storage.storage import TEMP_DIR


@pytest.fixture
def storage(tmp_path):
    return Storage(str(tmp_path))


def test_base_uri_normalisation(tmp_path, monkeypatch):
    assert Storage(str(tmp_path) + "/").base_uri == str(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert Storage("rel/table").base_uri == str(tmp_path / "rel" / "table")
    s = Storage("file:" + str(tmp_path))
    assert s.base_uri == "file://" + str(tmp_path)
    assert Storage("file://" + str(tmp_path) + "/").base_uri == "file://" + str(tmp_path)


def test_file_uri_storage_reads_and_writes(tmp_path):
    s = Storage("file://" + str(tmp_path))
    s.write_atomic("a/b.txt", b"hello")
    assert (tmp_path / "a" / "b.txt").read_bytes() == b"hello"
    assert s.read_bytes("a/b.txt") == b"hello"
    assert s.is_local


def test_uri_and_full_path(tmp_path, storage):
    assert storage.uri("") == "file://" + str(tmp_path)
    assert storage.uri("p=1/x.parquet") == "file://" + str(tmp_path) + "/p=1/x.parquet"
    assert storage.uri("/p=1/") == "file://" + str(tmp_path) + "/p=1"
    assert storage.full_path("") == str(tmp_path)
    assert storage.full_path("a/b") == str(tmp_path) + "/a/b"


def test_reads_and_listing(tmp_path, storage):
    (tmp_path / "p" / "q").mkdir(parents=True)
    (tmp_path / "p" / "f1").write_bytes(b"12345")
    (tmp_path / "p" / ".hidden").write_bytes(b"")
    (tmp_path / "top").write_bytes(b"x")

    assert storage.exists("p") and storage.is_dir("p") and not storage.is_dir("p/f1")
    assert storage.exists("p/f1") and not storage.exists("p/nope")
    assert storage.size("p/f1") == 5
    assert storage.read_bytes("p/f1") == b"12345"
    with storage.open_input_file("p/f1") as f:
        assert f.size() == 5

    listed = {i.name: i for i in storage.list_dir("p")}
    assert set(listed) == {"q", "f1", ".hidden"}
    assert listed["f1"] == FileInfo(path="p/f1", name="f1", size=5, is_dir=False, mtime_ns=listed["f1"].mtime_ns)
    assert listed["f1"].mtime_ns > 0
    assert listed["q"].is_dir and listed["q"].path == "p/q"
    assert listed[".hidden"].size == 0

    root = {i.path for i in storage.list_dir("")}
    assert root == {"p", "top"}
    assert storage.list_dir("missing/dir") == []
    assert storage.list_dir("p/q") == []


def test_read_missing_raises_file_not_found(storage):
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("nope")


def test_write_bytes_creates_parents(tmp_path, storage):
    storage.write_bytes("x/y/z.bin", b"abc")
    assert (tmp_path / "x" / "y" / "z.bin").read_bytes() == b"abc"
    with storage.open_output_stream("w/v.bin") as f:
        f.write(b"12")
    assert (tmp_path / "w" / "v.bin").read_bytes() == b"12"


def test_output_stream_makes_its_directory_only_when_missing_and_again_if_deleted(tmp_path, storage,
                                                                                  monkeypatch):
    """The stream opens into an existing directory without a mkdir; a missing one is made, and made again
    when deleted between its mkdir and the open (a rollback removing a directory it took for a dead
    write's), as _open_new does for markers."""
    made: list[str] = []
    real = storage.makedirs

    def racing(rel: str) -> None:
        real(rel)
        made.append(rel)
        if len(made) == 1:
            storage.delete_dir(rel)  # deleted right after it was made

    monkeypatch.setattr(storage, "makedirs", racing)
    with storage.open_output_stream("p/q/a.bin") as f:
        f.write(b"a")
    assert made == ["p/q", "p/q"] and (tmp_path / "p" / "q" / "a.bin").read_bytes() == b"a"
    with storage.open_output_stream("p/q/b.bin") as f:
        f.write(b"b")
    assert made == ["p/q", "p/q"], "an existing directory is not made again"
    assert (tmp_path / "p" / "q" / "b.bin").read_bytes() == b"b"


def test_write_atomic_creates_replaces_and_leaves_no_temp(tmp_path, storage):
    storage.write_atomic(".hoodie/1.commit", b"first")
    assert (tmp_path / ".hoodie" / "1.commit").read_bytes() == b"first"
    storage.write_atomic(".hoodie/1.commit", b"second, longer content")
    assert (tmp_path / ".hoodie" / "1.commit").read_bytes() == b"second, longer content"
    storage.write_atomic(".hoodie/empty", b"")
    assert (tmp_path / ".hoodie" / "empty").read_bytes() == b""
    tmp_dir = tmp_path / TEMP_DIR
    assert not tmp_dir.exists() or list(tmp_dir.iterdir()) == []
    # listing .hoodie never shows a temp file
    assert {i.name for i in storage.list_dir(".hoodie") if not i.is_dir} == {"1.commit", "empty"}


def test_write_atomic_goes_through_temp_file_and_rename(tmp_path, storage, monkeypatch):
    """The target appears only via rename(2) of a fully written temp file in the same file system."""
    real_replace = os.replace
    calls = []

    def spy(src, dst):
        src, dst = os.fspath(src), os.fspath(dst)
        calls.append((src, dst))
        assert not os.path.exists(dst), "target existed before the rename"
        with open(src, "rb") as f:
            assert f.read() == b"payload" * 1000, "temp file was not complete at rename time"
        assert os.path.dirname(os.path.dirname(src)).startswith(str(tmp_path))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    storage.write_atomic("p/t.bin", b"payload" * 1000)
    assert len(calls) == 1
    assert calls[0][1] == str(tmp_path / "p" / "t.bin")
    assert (tmp_path / "p" / "t.bin").read_bytes() == b"payload" * 1000


def _record_os_calls(monkeypatch: pytest.MonkeyPatch, **labels: str) -> list[str]:
    """Each call of the named `os` functions appends its label to the returned list, then runs."""
    events: list[str] = []
    for name, label in labels.items():
        real = getattr(os, name)

        def spy(*args: object, _real: object = real, _label: str = label) -> object:
            events.append(_label)
            return _real(*args)  # type: ignore[operator]
        monkeypatch.setattr(os, name, spy)
    return events


def test_write_atomic_fsyncs_before_the_rename_unless_told_the_file_may_be_lost(tmp_path, storage, monkeypatch):
    """Timeline and table-config files are synced before they take their name; the partition metafile
    (only ever looked for, re-derivable, written unsynced by Hudi too) is not, but stays atomic."""
    from pyhudi.writer.partition_meta import ensure_partition_metadata

    events = _record_os_calls(monkeypatch, fsync="fsync", replace="rename")
    storage.write_atomic(".hoodie/hoodie.properties", b"x=1\n")
    assert events == ["fsync", "rename"]
    events.clear()
    ensure_partition_metadata(storage, "2024/01/02", "20240102000000000")
    assert events == ["rename"]  # no fsync for the metafile
    text = (tmp_path / "2024" / "01" / "02" / ".hoodie_partition_metadata").read_text()
    assert "commitTime=20240102000000000" in text and "partitionDepth=3" in text
    assert not os.listdir(tmp_path / TEMP_DIR)  # the temp file was renamed, not copied


def test_create_exclusive_fsyncs_content_before_the_link_and_skips_empty_files(tmp_path, storage, monkeypatch):
    """A completed instant is synced before it takes its name (after a power loss it is whole or absent);
    an empty file (a commit's requested instant) has no content to lose, so it is linked without a sync."""
    events = _record_os_calls(monkeypatch, fsync="fsync", link="link")
    assert storage.create_exclusive(".hoodie/1.commit", b'{"a": 1}')
    assert events == ["fsync", "link"]
    events.clear()
    assert storage.create_exclusive(".hoodie/2.commit.requested", b"")
    assert events == ["link"]
    assert not storage.create_exclusive(".hoodie/2.commit.requested", b"")
    assert (tmp_path / ".hoodie" / "1.commit").read_bytes() == b'{"a": 1}'
    assert (tmp_path / ".hoodie" / "2.commit.requested").read_bytes() == b""


def test_write_atomic_failure_before_rename_leaves_target_untouched(tmp_path, storage, monkeypatch):
    storage.write_atomic("t.bin", b"old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        storage.write_atomic("t.bin", b"new content")
    assert (tmp_path / "t.bin").read_bytes() == b"old"


def test_concurrent_reader_never_sees_a_partial_file(tmp_path, storage):
    big_a = b"A" * 400_000
    big_b = b"B" * 800_000
    storage.write_atomic("f.bin", big_a)
    stop = threading.Event()
    bad: list[int] = []

    def reader():
        while not stop.is_set():
            data = (tmp_path / "f.bin").read_bytes()
            if data not in (big_a, big_b):
                bad.append(len(data))

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(60):
            storage.write_atomic("f.bin", big_b if i % 2 == 0 else big_a)
    finally:
        stop.set()
        t.join()
    assert bad == []


def test_create_exclusive_basic(tmp_path, storage):
    assert storage.create_exclusive(".hoodie/1.commit.requested", b"") is True
    assert (tmp_path / ".hoodie" / "1.commit.requested").read_bytes() == b""
    assert storage.create_exclusive(".hoodie/1.commit.requested", b"other") is False
    assert (tmp_path / ".hoodie" / "1.commit.requested").read_bytes() == b""
    assert storage.create_exclusive("deep/new/dir/x", b"data") is True
    assert (tmp_path / "deep" / "new" / "dir" / "x").read_bytes() == b"data"


def _race(tmp_path, rel: str, n: int) -> list[tuple[int, bool]]:
    barrier = threading.Barrier(n)
    results: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        s = Storage(str(tmp_path))  # separate instances, like separate writers
        barrier.wait()
        ok = s.create_exclusive(rel, f"writer-{i}".encode())
        with lock:
            results.append((i, ok))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.parametrize("round_", range(5))
def test_create_exclusive_race_exactly_one_wins(tmp_path, round_):
    n = 32
    rel = f".hoodie/2025010100000000{round_}.commit.requested"
    results = _race(tmp_path, rel, n)
    winners = [i for i, ok in results if ok]
    assert len(results) == n
    assert len(winners) == 1, winners
    assert (tmp_path / rel).read_bytes() == f"writer-{winners[0]}".encode()


def test_delete_is_idempotent(tmp_path, storage):
    storage.write_bytes("d/f", b"x")
    assert storage.delete("d/f") is True
    assert not (tmp_path / "d" / "f").exists()
    assert storage.delete("d/f") is False
    assert storage.delete("never/existed") is False


def test_delete_dir_and_makedirs(tmp_path, storage):
    storage.makedirs("a/b/c")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    storage.makedirs("a/b/c")  # idempotent
    storage.write_bytes("a/b/c/f", b"1")
    storage.delete_dir("a")
    assert not (tmp_path / "a").exists()
    storage.delete_dir("a")  # missing is fine


def test_rename(tmp_path, storage):
    storage.write_bytes("src", b"1")
    storage.rename("src", "dst")
    assert not (tmp_path / "src").exists()
    assert (tmp_path / "dst").read_bytes() == b"1"


def test_pickle_round_trip(tmp_path, storage):
    storage.write_bytes("f", b"data")
    clone = pickle.loads(pickle.dumps(storage))
    assert clone.base_uri == storage.base_uri
    assert clone.read_bytes("f") == b"data"
    assert set(clone.__getstate__()) == {"base_uri"}


def test_explicit_filesystem(tmp_path):
    s = Storage(str(tmp_path), pafs.LocalFileSystem())
    s.write_atomic("x/y", b"1")
    assert (tmp_path / "x" / "y").read_bytes() == b"1"
    assert s.create_exclusive("x/z", b"2") and not s.create_exclusive("x/z", b"3")


def test_non_local_filesystem_uses_plain_writes(tmp_path):
    """Object-store-like file systems: single PUT for atomic writes, check-then-put for exclusive create."""
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    s = Storage("mem://bucket/table", sub)
    assert not s.is_local
    s.write_atomic(".hoodie/1.commit", b"meta")
    assert (tmp_path / "bucket" / "table" / ".hoodie" / "1.commit").read_bytes() == b"meta"
    assert s.create_exclusive(".hoodie/2.commit.requested", b"") is True
    assert s.create_exclusive(".hoodie/2.commit.requested", b"") is False
    assert {i.name for i in s.list_dir(".hoodie")} == {"1.commit", "2.commit.requested"}
    assert s.uri("x") == "mem://bucket/table/x"
    assert Storage("s3://bkt/t", sub).uri("a") == "s3a://bkt/t/a"


def test_purge_temp_files_deletes_only_old_leftovers(tmp_path, storage):
    """A process killed inside write_atomic leaves its temp file; the cleaner's purge removes it once old."""
    tmp_dir = tmp_path / TEMP_DIR
    tmp_dir.mkdir(parents=True)
    old, young = tmp_dir / "old", tmp_dir / "young"
    old.write_bytes(b"torn")
    young.write_bytes(b"in use")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    assert storage.purge_temp_files() == 1
    assert not old.exists() and young.exists()
    assert storage.purge_temp_files(older_than_s=0) == 1 and not young.exists()
