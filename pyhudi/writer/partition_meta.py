"""`.hoodie_partition_metadata`: written once per partition, before its first data file.

Hudi's partition discovery looks for this file; readers like hudi-rs do not
need it, which is exactly why it is easy to forget.
"""

from __future__ import annotations

from pyhudi.errors import InvalidRecordError
from pyhudi.model.file_names import PARTITION_METAFILE, join_path
from pyhudi.model.properties import java_date_comment
from pyhudi.storage import Storage
from pyhudi.view.partitions import partition_depth


def partition_metadata_text(instant: str, partition: str) -> str:
    return (f"#partition metadata\n#{java_date_comment()}\ncommitTime={instant}\n"
            f"partitionDepth={partition_depth(partition)}\n")


def check_partition_path(partition: str) -> None:
    """A partition path with an empty, `.` or `..` level (a value that starts or ends with `/`, holds `//`,
    or is `.`/`..`, written without URL-encoding) is not a directory name the file system keeps: `x/` and
    `x` would share one folder, and `..` would leave the table. Readers would map the folder back to the
    wrong value, so such a write is refused; Hudi 0.14 writes it anyway (1.x validates partition paths)."""
    bad = [seg for seg in partition.split("/") if seg in ("", ".", "..")] if partition else []
    if bad:
        raise InvalidRecordError(
            f"partition path {partition!r} has an empty, '.' or '..' directory level (a partition value that "
            "starts or ends with '/', holds '//', or is '.' or '..'), which the file system cannot keep apart "
            "from another partition; set hoodie.datasource.write.partitionpath.urlencode=true to escape the '/' "
            "of such values (a whole value '.' or '..' needs hoodie.datasource.write.hive_style_partitioning="
            "true), or clean them before writing. The write was rolled back")


def ensure_partition_metadata(storage: Storage, partition: str, instant: str) -> None:
    """Written atomically (a crashed process leaves it whole or absent) but not fsynced. The
    partition's data files are not fsynced either, in pyhudi as in Hudi, so a power loss threatens
    those first. The file is only ever looked for (partition discovery needs it to exist, and Hudi
    itself writes it without a sync), and its content is re-derivable. The fsync was the costliest
    step of a first write into new partitions: ~0.6 ms each on a disk busy with the write's data files
    (the journal commit flushes them too), ~0.2 s of a ~3 s five-batch stream over 300 partitions
    (bench/stream_grid.py)."""
    check_partition_path(partition)
    rel = join_path(partition, PARTITION_METAFILE)
    if storage.known_size(rel) is not None or storage.exists(rel):  # listed with the partition: no HEAD
        return
    storage.write_atomic(rel, partition_metadata_text(instant, partition).encode("utf-8"), durable=False)
