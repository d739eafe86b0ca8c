"""Merge-on-read snapshot support (issue 3 builds the log merge; until then, refuse honestly)."""

from __future__ import annotations

from pyhudi.errors import UnsupportedTableError
from pyhudi.view.file_system_view import FileSystemView


def ensure_mor_supported(view: FileSystemView, as_of: str | None) -> None:
    """A MOR snapshot equals its base files only while no slice has log files."""
    for sl in view.all_latest_file_slices(as_of):
        if sl.log_files:
            raise UnsupportedTableError(
                f"snapshot reads of merge-on-read slices with log files are not supported yet (file group "
                f"{sl.file_id} in {sl.partition!r} has {len(sl.log_files)} log file(s)); read with "
                "hoodie.datasource.query.type=read_optimized for base files only")
