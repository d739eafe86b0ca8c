"""Where a create handle rolls over (handles.rollover_chunks): files below the max, and no small file of a
few records beside full ones when the remainder fits in them within SPREAD_MAX."""

from __future__ import annotations

from pyhudi.io.base_file import ParquetSettings
from pyhudi.writer.handles import SPREAD_MAX, file_overhead, rollover_chunks

MB = 1024 * 1024
SMALL = MB * 100 // 120


def _size(rows: int, per_row: float, settings: ParquetSettings) -> float:
    return rows * per_row + file_overhead(rows, settings)


def test_a_bucket_just_past_the_budget_is_one_file() -> None:
    """6,465 rows of 150 B: the 0.97 x max budget holds ~6,350, so rolling over left ~115 records (17 KB)
    in a file of their own; within 5% of the max they stay in one file."""
    settings = ParquetSettings()
    chunks = rollover_chunks(6465, 150.0, MB, settings, SMALL)
    assert chunks == [6465]
    assert _size(6465, 150.0, settings) <= MB * SPREAD_MAX


def test_a_remainder_spreads_over_several_full_files() -> None:
    settings = ParquetSettings()
    chunks = rollover_chunks(19_300, 150.0, MB, settings, SMALL)
    assert sum(chunks) == 19_300 and len(chunks) == 3
    assert all(_size(n, 150.0, settings) <= MB * SPREAD_MAX for n in chunks)
    assert min(chunks) * 150.0 >= SMALL * 0.9


def test_a_remainder_too_large_to_spread_rolls_over() -> None:
    """Past 5% over the max the remainder is a file of its own (a small one only when the records are)."""
    settings = ParquetSettings()
    chunks = rollover_chunks(7200, 150.0, MB, settings, SMALL)
    assert len(chunks) == 2 and sum(chunks) == 7200
    assert all(_size(n, 150.0, settings) <= MB for n in chunks)
    assert rollover_chunks(6465, 150.0, MB, settings) == rollover_chunks(6465, 150.0, MB, settings, 0)
    assert len(rollover_chunks(6465, 150.0, MB, settings, 0)) == 2  # no small-file limit: Hudi's roll-over
