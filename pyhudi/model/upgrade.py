"""Upgrade a table before pyhudi writes to it: 4 (Hudi 0.11) or 5 (Hudi 0.12/0.13) to 6 here, and 6 to 8 or
9 and 8 to 9 when the write asks for it with `hoodie.write.table.version` (model/upgrade_1x.py;
`upgrade_for_write` runs both).

Hudi 0.14/0.15 upgrade a table on every write whose table version is older than theirs
(`BaseHoodieWriteClient.tryUpgrade` -> `UpgradeDowngrade.run`): roll back failed writes, run the handlers
from the table's version to 6, then store the new properties and the version in one update of
`hoodie.properties`. pyhudi runs the same steps before its first write, compaction, clustering or clean:

1. roll back pending writes of crashed writers (pyhudi's liveness rule: a live heartbeat is never
   rolled back, see transaction/heartbeat.py);
2. `ThreeToFourUpgradeHandler`: `hoodie.table.checksum`, written if missing or wrong (a v4/v5 table made
   by Hudi has it; this repairs a hand-made one);
3. `FourToFiveUpgradeHandler` (from version 4 only): refuse a table with the deprecated `default`
   partition (`<field>=default` when hive-style) unless `hoodie.skip.default.partition.validation=true`;
4. `FiveToSixUpgradeHandler`: delete `.hoodie/.aux/<ts>.compaction.requested` of each requested
   compaction (HUDI-6040: Hudi 0.14 reads plans from `.hoodie` only). Deliberate addition: when the
   `.hoodie` copy of a plan is empty, the `.aux` one is copied there first, so the plan is never lost;
5. pyhudi's addition: remove Hudi's metadata table (Hudi would upgrade it; pyhudi does not maintain it
   and removes it before any commit anyway, see model/metadata_table.py), so no version-5 metadata table
   is left beside a version-6 table;
6. the version bump: `hoodie.table.version=6`, by one atomic rewrite of `hoodie.properties`.

Every step is idempotent and the bump comes last, so a crash anywhere leaves a version-4/5 table that
readers still read and the next write upgrades again from where it stopped. Hudi 1.x's
`hoodie.write.auto.upgrade=false` makes pyhudi refuse to write instead.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyhudi.errors import UnsupportedTableError
from pyhudi.faults import fault_point
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.model.table_config import PROPERTIES_FILE, table_checksum
from pyhudi.storage import Storage

if TYPE_CHECKING:
    from pyhudi.transaction.lock_types import LockSettings
    from pyhudi.writer.config import WriteConfig

log = logging.getLogger(__name__)

CURRENT_VERSION = 6
AUX_DIR = ".hoodie/.aux"
DEPRECATED_DEFAULT_PARTITION = "default"


class UpgradeRefusedError(UnsupportedTableError):
    """The table needs an upgrade to version 6 that pyhudi may not (or cannot safely) make."""


def read_properties(storage: Storage) -> dict[str, str]:
    return parse_properties(storage.read_bytes(PROPERTIES_FILE).decode("utf-8"))


def table_version(props: dict[str, str]) -> int:
    try:
        return int(props.get("hoodie.table.version", "0"))
    except ValueError:
        return 0


def upgrade_if_needed(storage: Storage, *, auto_upgrade: bool = True, skip_default_partition_check: bool = False,
                      liveness: tuple[int, int] | None = None, loaded: dict[str, str] | None = None,
                      lock: LockSettings | None = None) -> bool:
    """Upgrade the table at `storage` to version 6 if it is older; True when an upgrade ran.

    Called at the start of every write and table service. `loaded`: the properties this operation has
    just read; when they say version 6 nothing is read again (a table's version only ever goes up while
    pyhudi writes it: only a downgrade tool lowers it). Otherwise a missing table (first write) or a
    version-6 table costs one small read, and an older version is always confirmed by a fresh read
    (another writer may have upgraded it meanwhile)."""
    if loaded is not None and table_version(loaded) >= CURRENT_VERSION:
        return False
    try:
        props = read_properties(storage)
    except FileNotFoundError:
        return False
    version = table_version(props)
    if version >= CURRENT_VERSION:
        return False
    if version < 4:
        raise UnsupportedTableError(
            f"{storage.base_uri} is a Hudi table of version {version}; pyhudi upgrades versions 4 and 5 only: "
            "upgrade it to version 6 by one write with Hudi 0.14/0.15 first")
    if not auto_upgrade:
        raise UpgradeRefusedError(
            f"{storage.base_uri} is a Hudi table of version {version} and writing needs version 6, but "
            "hoodie.write.auto.upgrade=false forbids the upgrade; drop that option (or set it to true) to let "
            "pyhudi upgrade the table as Hudi 0.14/0.15 do, or keep writing it with Hudi 0.12/0.13")
    log.info("upgrading %s from table version %d to %d", storage.base_uri, version, CURRENT_VERSION)
    _rollback_failed_writes(storage, liveness, lock)
    fault_point("upgrade.after_rollback")
    _ensure_checksum(storage)
    if version < 5 and not skip_default_partition_check:
        _check_default_partition(storage, props)
    _remove_aux_compaction_plans(storage)
    fault_point("upgrade.after_aux")
    from pyhudi.model.metadata_table import drop_metadata_table

    drop_metadata_table(storage)
    fault_point("upgrade.before_bump")
    _bump_version(storage)
    log.info("upgraded %s to table version %d", storage.base_uri, CURRENT_VERSION)
    return True


def upgrade_for_write(storage: Storage, cfg: WriteConfig) -> WriteConfig:
    """The one call at the start of a write or table service: options and liveness from its config, and
    the properties its table config was loaded from (`TableConfig.raw`; empty for a version-6 table this
    write creates, which is then looked up). Returns the config the operation goes on with: `cfg`, or
    after an upgrade to 8 or 9 the config of the upgraded table (`_rebound`), so the caller writes what it
    upgraded to.

    It also finishes an interrupted 6 -> 8 upgrade's cleanup and notes whether this operation may delete
    metadata indexes pyhudi cannot rebuild (model/metadata_table.py).
    """
    from pyhudi.config import keys as K
    from pyhudi.model.metadata_table import allow_index_drop
    from pyhudi.model.table_features import write_version
    from pyhudi.model.upgrade_1x import finish_cleanup, upgrade_to

    allow_index_drop(storage, bool(cfg.options.get(K.DROP_UNREBUILDABLE_INDEXES)))
    if cfg.table.raw:
        finish_cleanup(storage, cfg.table.raw)
    upgrade_if_needed(storage, auto_upgrade=bool(cfg.options.get(K.AUTO_UPGRADE)),
                                 skip_default_partition_check=bool(cfg.options.get(K.SKIP_DEFAULT_PARTITION_VALIDATION)),
                                 liveness=(cfg.heartbeat_interval_ms, cfg.heartbeat_tolerable_misses),
                                 loaded=cfg.table.raw or None, lock=cfg.lock)
    target = write_version(cfg.table, cfg.options, storage.base_uri)
    if target <= max(cfg.table.version, CURRENT_VERSION):
        return cfg
    upgrade_to(storage, cfg, target)
    return _rebound(storage, cfg)


def _rebound(storage: Storage, cfg: WriteConfig) -> WriteConfig:
    """`cfg` pointed at the upgraded table: the fields that come from the table (the table config itself:
    version, timeline layout, ordering fields; and the payload class its merge mode writes with) are those
    of a write config built, and so checked, for the table as it now is. Every other field stays as the
    caller set it (e.g. an overwrite's combine_before_write, a streaming write's compaction)."""
    from dataclasses import replace

    from pyhudi.model.table_config import load_table_config
    from pyhudi.writer.config import build_write_config

    fresh = build_write_config(cfg.options, load_table_config(storage), cfg.operation)
    return replace(cfg, table=fresh.table, payload_class=fresh.payload_class)


def _rollback_failed_writes(storage: Storage, liveness: tuple[int, int] | None, lock: LockSettings | None) -> None:
    """Hudi rolls back failed writes (EAGER) before any upgrade step, so no half-written instant of the
    old version survives into the new one."""
    from pyhudi.services.rollback import rollback_failed_writes
    from pyhudi.timeline.timeline import ActiveTimeline

    rollback_failed_writes(storage, ActiveTimeline.load(storage), liveness, lock)


def _write_properties(storage: Storage, props: dict[str, str], why: str) -> None:
    text = format_properties(props, comments=[f"Updated by pyhudi: {why}"])
    storage.write_atomic(PROPERTIES_FILE, text.encode("utf-8"))


def _ensure_checksum(storage: Storage) -> None:
    """`ThreeToFourUpgradeHandler`: the checksum over `<database>.<table>`; kept when already right."""
    props = read_properties(storage)
    want = str(table_checksum(props.get("hoodie.database.name", ""), props.get("hoodie.table.name", "")))
    if props.get("hoodie.table.checksum") == want:
        return
    _write_properties(storage, {**props, "hoodie.table.checksum": want}, "table checksum (upgrade to version 6)")
    fault_point("upgrade.after_checksum")


def _check_default_partition(storage: Storage, props: dict[str, str]) -> None:
    """`FourToFiveUpgradeHandler`: Hudi 0.12 renamed the partition of null values from `default` to
    `__HIVE_DEFAULT_PARTITION__`; a table still holding `default` must be migrated first."""
    fields = [f.strip() for f in props.get("hoodie.table.partition.fields", "").split(",") if f.strip()]
    if not fields or props.get("hoodie.table.keygenerator.class", "").endswith("NonpartitionedKeyGenerator"):
        return
    hive = props.get("hoodie.datasource.write.hive_style_partitioning", "false").strip().lower() == "true"
    name = f"{fields[0].split(':')[0]}={DEPRECATED_DEFAULT_PARTITION}" if hive else DEPRECATED_DEFAULT_PARTITION
    if storage.is_dir(name):
        raise UpgradeRefusedError(
            f"{storage.base_uri} (table version 4) has the deprecated partition {name!r}: since Hudi 0.12 "
            "null partition values go to __HIVE_DEFAULT_PARTITION__. Rewrite its records into that partition "
            f"and delete them from {name!r} (as Hudi's upgrade message describes), or set "
            "hoodie.skip.default.partition.validation=true to upgrade anyway")


def _remove_aux_compaction_plans(storage: Storage) -> None:
    """`FiveToSixUpgradeHandler`: delete the `.aux` copy of each requested compaction's plan."""
    from pyhudi.timeline.instant import Action, State
    from pyhudi.timeline.timeline import ActiveTimeline

    timeline = ActiveTimeline.load(storage)
    for inst in timeline.actions(Action.COMPACTION).pending():
        if inst.state is not State.REQUESTED:
            continue
        name = f"{inst.timestamp}.{Action.COMPACTION.value}.requested"
        aux = f"{AUX_DIR}/{name}"
        if not storage.exists(aux):
            continue
        _keep_plan_in_timeline(storage, name, aux)
        storage.delete(aux)
        fault_point("upgrade.mid_aux_delete")


def _keep_plan_in_timeline(storage: Storage, name: str, aux: str) -> None:
    """Older writers kept the plan in both places; if the timeline copy is empty, it gets the `.aux` one
    before that is deleted (Hudi 0.14 would then find no plan)."""
    meta = f".hoodie/{name}"
    if storage.exists(meta) and storage.size(meta) > 0:
        return
    plan = storage.read_bytes(aux)
    if plan:
        storage.write_atomic(meta, plan)


def _bump_version(storage: Storage) -> None:
    props = read_properties(storage)
    props["hoodie.table.version"] = str(CURRENT_VERSION)
    props.setdefault("hoodie.timeline.layout.version", "1")
    _write_properties(storage, props, f"upgraded to table version {CURRENT_VERSION}")
