"""`.hoodie_partition_metadata`: written once per partition, before its first data file.

Hudi's partition discovery looks for this file; readers like hudi-rs do not
need it, which is exactly why it is easy to forget.
"""

from __future__ import annotations

from pyhudi.model.file_names import PARTITION_METAFILE, join_path
from pyhudi.model.properties import java_date_comment
from pyhudi.storage import Storage
from pyhudi.view.partitions import partition_depth


def partition_metadata_text(instant: str, partition: str) -> str:
    return (f"#partition metadata\n#{java_date_comment()}\ncommitTime={instant}\n"
            f"partitionDepth={partition_depth(partition)}\n")


def ensure_partition_metadata(storage: Storage, partition: str, instant: str) -> None:
    rel = join_path(partition, PARTITION_METAFILE)
    if storage.exists(rel):
        return
    storage.write_atomic(rel, partition_metadata_text(instant, partition).encode("utf-8"))
