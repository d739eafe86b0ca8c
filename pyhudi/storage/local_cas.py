"""Compare-and-swap on local files, the local counterpart of object stores' ETag preconditions.

The ETag of a local file is `<inode>-<mtime_ns>-<size>-<content hash>`: every replacement goes through
a fresh temp file renamed into place, so a new version has a new inode while the old one exists; the
content hash keeps a later version that reuses a freed inode number within the clock's granularity
from passing for an old one. The check and the swap run under an exclusive `flock` on a lock file per
path (in `.hoodie/.aux/.pyhudi-cas/`), so pyhudi processes on one host see them as one step, as a
conditional PUT is on a store.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator

LOCK_DIR = ".hoodie/.aux/.pyhudi-cas"


def _read(path: str) -> tuple[bytes, str]:
    with open(path, "rb") as fh:
        data = fh.read()
        st = os.fstat(fh.fileno())
    digest = hashlib.sha1(data).hexdigest()[:16]
    return data, f"{st.st_ino}-{st.st_mtime_ns}-{st.st_size}-{digest}"


def etag_of(path: str) -> str | None:
    try:
        return _read(path)[1]
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def locked(root: str, rel: str) -> Iterator[None]:
    """Hold the per-path lock for a check-and-swap."""
    lock_dir = os.path.join(root, LOCK_DIR)
    os.makedirs(lock_dir, exist_ok=True)
    name = hashlib.sha1(rel.strip("/").encode()).hexdigest()
    fd = os.open(os.path.join(lock_dir, name), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def read_with_etag(path: str) -> tuple[bytes, str]:
    """Content and ETag of one version (one open file: a concurrent replacement cannot mix them)."""
    return _read(path)
