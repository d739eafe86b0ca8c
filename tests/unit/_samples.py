"""Shared helpers for the unit tests: the Spark-written v6 sample tables.

The zips in tests/fixtures/samples/tables (the project's copy of shared/samples) are extracted (without `__MACOSX/`) into
a pytest temp dir, one folder per zip, and the table root is returned.
`.DS_Store` files are kept on purpose: listings must skip non-Hudi files.
"""

from __future__ import annotations

import json
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import samples_root

SAMPLES = samples_root()
MANIFEST_PATH = SAMPLES / "manifest.json"


@cache
def manifest() -> dict[str, dict[str, Any]]:
    if not MANIFEST_PATH.exists():
        pytest.skip(f"sample tables not found at {SAMPLES}")
    data = json.loads(MANIFEST_PATH.read_text())
    return {t["name"]: t for t in data["tables"]}


def sample_names() -> list[str]:
    if not MANIFEST_PATH.exists():
        return []
    return sorted(t["name"] for t in json.loads(MANIFEST_PATH.read_text())["tables"])


def extract_sample(name: str, dest: Path) -> Path:
    """Unzip one sample into `dest` (skipping `__MACOSX/`) and return its table root."""
    zip_path = SAMPLES / "tables" / f"{name}.zip"
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as z:
        keep = [m for m in z.namelist() if not m.startswith("__MACOSX/")]
        z.extractall(dest, keep)
    return dest / manifest()[name]["zip_table_root"].rstrip("/")


class SampleTables:
    """Lazily extracts samples into one temp folder per zip."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._roots: dict[str, Path] = {}

    def root(self, name: str) -> Path:
        if name not in self._roots:
            self._roots[name] = extract_sample(name, self.base / name)
        return self._roots[name]

    def hoodie(self, name: str) -> Path:
        return self.root(name) / ".hoodie"

    def gold_snapshot(self, name: str) -> Path:
        return SAMPLES / manifest()[name]["gold"]["snapshot"]
