"""How direct parquet input spreads files over tasks: Spark's split rule, big files split, a cap."""

from __future__ import annotations

import pyarrow as pa

from pyhudi.engine.spark.keygen import KeyGenerator
from pyhudi.writer.binpack import pack_balanced
from pyhudi.writer.direct_input import DirectInput, InputUnit

MB = 1 << 20


def _direct(sizes: list[int], max_split: int = 128 * MB, open_cost: int = 4 * MB) -> DirectInput:
    return DirectInput(units=tuple(InputUnit(f"file:///in/f{i}", s) for i, s in enumerate(sizes)),
                       read_types=(), target=pa.schema([]), keygen=KeyGenerator(("id",), (), "", False, False),
                       schema=pa.schema([]), delete_all=False, max_split_bytes=max_split, open_cost_bytes=open_cost)


def _covered(groups: list[list[InputUnit]]) -> dict[str, set[tuple[int, int]]]:
    out: dict[str, set[tuple[int, int]]] = {}
    for g in groups:
        for u in g:
            assert (u.part, u.parts) not in out.setdefault(u.uri, set()), "a slice read twice"
            out[u.uri].add((u.part, u.parts))
    return out


def test_small_files_pack_into_splits_with_the_open_cost():
    groups = _direct([10 * MB] * 8, max_split=50 * MB).task_units()
    assert [len(g) for g in groups] == [3, 3, 2], "10 MB + 4 MB open cost each: three fit in 50 MB"
    assert all(slices == {(0, 1)} for slices in _covered(groups).values())


def test_a_big_file_is_split_into_row_group_slices():
    groups = _direct([300 * MB, 20 * MB], max_split=128 * MB).task_units()
    covered = _covered(groups)
    assert covered["file:///in/f0"] == {(0, 3), (1, 3), (2, 3)}, "ceil(300 / 128) slices"
    assert covered["file:///in/f1"] == {(0, 1)}
    assert len(groups) == 3 and max(sum(u.size for u in g) for g in groups) <= 128 * MB


def test_parallelism_caps_the_tasks_and_balances_them():
    groups = _direct([10 * MB] * 8 + [30 * MB], max_split=32 * MB).task_units(tasks=3)
    assert len(groups) == 3
    loads = sorted(sum(u.size for u in g) for g in groups)
    assert loads == [30 * MB, 40 * MB, 40 * MB]
    assert len(_covered(groups)) == 9
    assert len(_direct([10 * MB] * 2).task_units(tasks=8)) == 1, "a cap never adds tasks"


def test_pack_balanced_puts_largest_first_into_the_least_loaded_bin():
    assert pack_balanced([5, 1, 4, 2, 3], lambda x: x, 2) == [[5, 2, 1], [4, 3]]
    assert pack_balanced([7], lambda x: x, 3) == [[7]], "empty bins are dropped"
