"""The upgrade of a version-4/5 table to version 6 (Hudi's ThreeToFour/FourToFive/FiveToSix handlers), and
its crash safety: interrupted after any step, the table stays readable and the next run finishes it."""

from __future__ import annotations

import os
import pathlib

import pytest

from pyhudi import faults
from pyhudi.errors import UnsupportedTableError
from pyhudi.model.properties import parse_properties
from pyhudi.model.table_config import load_table_config, table_checksum
from pyhudi.model.upgrade import UpgradeRefusedError, upgrade_if_needed
from pyhudi.services import compaction
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import CompactionConfig
from tests.helpers import extract_sample, plant_metadata_table
from tests.old_tables import copy_plans_to_aux, set_version

MOR = "mor_parquet__v6_simplekeygen_nonhivestyle.zip"
STEPS = ["upgrade.after_rollback", "upgrade.after_checksum", "upgrade.mid_aux_delete", "upgrade.after_aux",
         "metadata_table.after_properties", "upgrade.before_bump"]
FAILED = "20250121000600000"


def _props(root: pathlib.Path) -> dict[str, str]:
    return parse_properties((root / ".hoodie" / "hoodie.properties").read_text())


def _old_table(tmp_path: pathlib.Path, version: int = 5) -> tuple[pathlib.Path, str, dict[str, str]]:
    """A v5 MOR table as Hudi 0.12/0.13 leave it: no checksum (made observable), a pending compaction whose
    plan is also under .hoodie/.aux, a failed delta commit, and a metadata table."""
    root = extract_sample(MOR, tmp_path)
    storage = Storage(str(root))
    plan = compaction.schedule(storage, load_table_config(storage), CompactionConfig(), force=True)
    assert plan is not None
    assert copy_plans_to_aux(root) == [f"{plan}.compaction.requested"]
    (root / ".hoodie" / f"{FAILED}.deltacommit.requested").write_bytes(b"")
    (root / ".hoodie" / f"{FAILED}.deltacommit.inflight").write_bytes(b"")
    plant_metadata_table(root)
    before = set_version(root, version)
    assert "hoodie.table.checksum" not in before
    return root, plan, before


def _check_upgraded(root: pathlib.Path, plan: str, before: dict[str, str]) -> None:
    props = _props(root)
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.table.checksum"] == str(table_checksum(props["hoodie.database.name"],
                                                                props["hoodie.table.name"]))
    assert {k: v for k, v in props.items() if k not in ("hoodie.table.version", "hoodie.table.checksum")
            and not k.startswith("hoodie.table.metadata.")} == \
        {k: v for k, v in before.items() if k != "hoodie.table.version" and not k.startswith("hoodie.table.metadata.")}
    assert not (root / ".hoodie" / ".aux" / f"{plan}.compaction.requested").exists()
    assert (root / ".hoodie" / f"{plan}.compaction.requested").stat().st_size > 0  # the plan itself stays
    assert not (root / ".hoodie" / "metadata").exists()
    assert props["hoodie.table.metadata.partitions"] == ""
    timeline = ActiveTimeline.load(Storage(str(root)))
    assert FAILED not in {i.timestamp for i in timeline.pending()}, "the failed write is rolled back first"
    assert plan in compaction.pending_compactions(Storage(str(root)))
    assert load_table_config(Storage(str(root))).version == 6


@pytest.mark.parametrize("version", [4, 5])
def test_upgrade_to_six(tmp_path: pathlib.Path, version: int) -> None:
    root, plan, before = _old_table(tmp_path, version)
    assert upgrade_if_needed(Storage(str(root)), liveness=(60000, 2))
    _check_upgraded(root, plan, before)
    assert not upgrade_if_needed(Storage(str(root)))  # version 6: nothing to do


def test_version_six_and_new_tables_are_left_alone(tmp_path: pathlib.Path) -> None:
    root = extract_sample(MOR, tmp_path)
    text = (root / ".hoodie" / "hoodie.properties").read_bytes()
    assert not upgrade_if_needed(Storage(str(root)))
    assert (root / ".hoodie" / "hoodie.properties").read_bytes() == text
    assert not upgrade_if_needed(Storage(str(tmp_path / "missing")))


@pytest.mark.parametrize("step", STEPS)
def test_interrupted_upgrade_resumes(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    """A failure after any step leaves a version-5 table that still loads; the next run completes it."""
    root, plan, before = _old_table(tmp_path)
    monkeypatch.setenv(faults.RAISE_ENV, step)
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        upgrade_if_needed(Storage(str(root)), liveness=(60000, 2))
    assert _props(root)["hoodie.table.version"] == "5"
    assert load_table_config(Storage(str(root))).version == 5  # still readable as version 5
    monkeypatch.delenv(faults.RAISE_ENV)
    faults.reset()
    assert upgrade_if_needed(Storage(str(root)), liveness=(60000, 2))
    _check_upgraded(root, plan, before)


def test_auto_upgrade_false_refuses(tmp_path: pathlib.Path) -> None:
    root, plan, _ = _old_table(tmp_path)
    text = (root / ".hoodie" / "hoodie.properties").read_bytes()
    with pytest.raises(UpgradeRefusedError, match="version 5.*hoodie.write.auto.upgrade=false"):
        upgrade_if_needed(Storage(str(root)), auto_upgrade=False)
    assert (root / ".hoodie" / "hoodie.properties").read_bytes() == text
    assert (root / ".hoodie" / ".aux" / f"{plan}.compaction.requested").exists()


@pytest.mark.parametrize("hive", [False, True])
def test_deprecated_default_partition_blocks_upgrade_from_four(tmp_path: pathlib.Path, hive: bool) -> None:
    root, plan, before = _old_table(tmp_path, 4)
    name = "byteField=default" if hive else "default"
    if hive:
        props = _props(root)
        props["hoodie.datasource.write.hive_style_partitioning"] = "true"
        from pyhudi.model.properties import format_properties

        (root / ".hoodie" / "hoodie.properties").write_text(format_properties(props))
        before = props
    (root / name).mkdir()
    with pytest.raises(UpgradeRefusedError, match=f"'{name}'.*hoodie.skip.default.partition.validation=true"):
        upgrade_if_needed(Storage(str(root)))
    assert _props(root)["hoodie.table.version"] == "4"
    assert upgrade_if_needed(Storage(str(root)), skip_default_partition_check=True)
    _check_upgraded(root, plan, before)


def test_default_partition_is_not_checked_from_five(tmp_path: pathlib.Path) -> None:
    root, plan, before = _old_table(tmp_path, 5)
    (root / "default").mkdir()
    assert upgrade_if_needed(Storage(str(root)))
    _check_upgraded(root, plan, before)


def test_plan_only_in_aux_is_kept(tmp_path: pathlib.Path) -> None:
    """An empty timeline copy gets the .aux plan before that is deleted (never lose a pending plan)."""
    root, plan, before = _old_table(tmp_path)
    requested = root / ".hoodie" / f"{plan}.compaction.requested"
    content = requested.read_bytes()
    requested.write_bytes(b"")
    assert upgrade_if_needed(Storage(str(root)))
    assert requested.read_bytes() == content
    _check_upgraded(root, plan, before)


def test_version_three_is_refused(tmp_path: pathlib.Path) -> None:
    root = extract_sample(MOR, tmp_path)
    set_version(root, 3)
    with pytest.raises(UnsupportedTableError, match="version 3.*Hudi 0.14/0.15"):
        upgrade_if_needed(Storage(str(root)))
    assert os.path.exists(root / ".hoodie" / "hoodie.properties")
