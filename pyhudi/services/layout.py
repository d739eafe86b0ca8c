"""Record orderings for clustering: linear, z-order and Hilbert (`hoodie.layout.optimize.strategy`).

Z-order and Hilbert map each sort column to its dense rank scaled to a common
bit width, then combine the coordinates into one integer key: bit
interleaving for z-order, Skilling's transpose algorithm for the Hilbert
curve. Ranks (not raw values) make any orderable type usable and keep skewed
columns from dominating the key. Everything is vectorized with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import InvalidConfigError


def _check(table: pa.Table, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise InvalidConfigError(
            f"hoodie.clustering.plan.strategy.sort.columns names {', '.join(missing)}, which the table does not "
            f"have (columns: {', '.join(table.column_names)})")


def _scaled_ranks(table: pa.Table, columns: Sequence[str], bits: int) -> list[np.ndarray]:
    top = (1 << bits) - 1
    out = []
    for name in columns:
        ranks = pc.rank(table.column(name), sort_keys="ascending",
                        tiebreaker="dense").to_numpy().astype(np.uint64) - np.uint64(1)
        hi = int(ranks.max()) if len(ranks) else 0
        scaled = ranks if hi <= top else (ranks * np.uint64(top) // np.uint64(max(hi, 1)))
        out.append(scaled.astype(np.uint64))
    return out


def z_order_keys(coords: list[np.ndarray], bits: int) -> np.ndarray:
    n = len(coords)
    key = np.zeros(len(coords[0]), dtype=np.uint64)
    for bit in range(bits):
        for d, x in enumerate(coords):
            key |= ((x >> np.uint64(bit)) & np.uint64(1)) << np.uint64(bit * n + (n - 1 - d))
    return key


def hilbert_keys(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert index of each point (Skilling, "Programming the Hilbert curve", 2004)."""
    x = [c.copy() for c in coords]
    n = len(x)
    m = np.uint64(1 << (bits - 1))
    q = m
    while q > 1:  # inverse undo
        p = q - np.uint64(1)
        for i in range(n):
            has = (x[i] & q) != 0
            x[0] = np.where(has, x[0] ^ p, x[0])
            t = np.where(has, np.uint64(0), (x[0] ^ x[i]) & p)
            x[0] ^= t
            x[i] ^= t
        q >>= np.uint64(1)
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = m
    while q > 1:
        t = np.where((x[n - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q >>= np.uint64(1)
    for i in range(n):
        x[i] ^= t
    key = np.zeros_like(x[0])
    for bit in range(bits - 1, -1, -1):
        for i in range(n):
            key = (key << np.uint64(1)) | ((x[i] >> np.uint64(bit)) & np.uint64(1))
    return key


def order(table: pa.Table, columns: Sequence[str], strategy: str = "linear") -> pa.Table:
    """`table` reordered by the sort columns under the given layout strategy (stable)."""
    if not columns:
        return table
    _check(table, columns)
    if table.num_rows <= 1:
        return table
    if strategy == "linear" or len(columns) == 1:
        return table.sort_by([(c, "ascending") for c in columns])
    bits = min(32, 64 // len(columns))
    coords = _scaled_ranks(table, columns, bits)
    keys = z_order_keys(coords, bits) if strategy == "z-order" else hilbert_keys(coords, bits)
    return table.take(pa.array(np.argsort(keys, kind="stable")))
