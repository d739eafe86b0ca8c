"""Clustering output sizes at randomized small targets (issue 19, item 4), in-process, no Spark.

The rule, for any target T, clustering small-file limit L < T and max.bytes.per.group, as long as a file's
fixed footer (bloom filter, schema) is at most half of T:

* every output file of a clustering is at most 1.1 x T (the writer rolls at T as measured from the encoded
  bytes, and re-encodes a file that came out over it);
* in each partition at most one output file is below L: the partition's tail, which exists only when the
  partition's clustered bytes cannot be cut into files inside [L, T]. Several groups of one partition (its
  small files above max.bytes.per.group) each leave their last file small; the executor writes those tails
  together once more, so one remains;
* a clustering right after it plans nothing (`pyhudi.cluster` returns no instant);
* the rows are the model's, read with hudi-rs and with pyhudi.

Hypothesis draws the target (128 KB - 1.25 MB), the limit (60-85 % of it), the group size (1.5-3 targets,
or Hudi's 2 GB), sort columns and layout, the key type (strings with unicode, decimals), partition values
with `/`, digits and unicode, and the batches (some empty).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyhudi
from tests.integration.test_clustering_churn import (
    KB,
    _batch,
    _check_output_sizes,
    _check_rows,
    _clusterings,
    _write,
)

cases = st.fixed_dictionaries({
    "target_kb": st.integers(128, 1280),
    "limit_pct": st.sampled_from([60, 75, 85]),
    "group": st.sampled_from([1.5, 2.0, 3.0, None]),
    "sort": st.sampled_from(["", "n,v", "s"]),
    "layout": st.sampled_from(["linear", "z-order", "hilbert"]),
    "key_type": st.sampled_from(["string", "decimal"]),
    # The first batch creates the table (an empty one has no column types); later ones may be empty.
    "batches": st.tuples(st.integers(1, 3000), st.lists(st.integers(0, 3000), min_size=2, max_size=8)).map(
        lambda t: [t[0], *t[1]]),
    "seed": st.integers(0, 2**16),
})


def _options(case: dict[str, Any]) -> tuple[dict[str, str], int, int]:
    target = case["target_kb"] * KB
    limit = target * case["limit_pct"] // 100
    # Hudi's default bloom filter (~431 KB) is more than half of a target below ~862 KB: sized to the data there.
    bloom = None if target >= 1024 * KB else 1000
    o = {"hoodie.table.name": "sizing", "hoodie.datasource.write.recordkey.field": "k",
         "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
         "hoodie.datasource.write.operation": "insert", "hoodie.parquet.small.file.limit": "0",
         "hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
         "hoodie.clustering.plan.strategy.small.file.limit": str(limit),
         "hoodie.clustering.plan.strategy.max.num.groups": "1000",
         "hoodie.clustering.plan.strategy.sort.columns": case["sort"],
         "hoodie.layout.optimize.strategy": case["layout"]}
    if bloom is not None:
        o["hoodie.index.bloom.num_entries"] = str(bloom)
    if case["group"] is not None:
        o["hoodie.clustering.plan.strategy.max.bytes.per.group"] = str(int(case["group"] * target))
    return o, target, limit


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases)
def test_outputs_are_well_sized_but_one_tail_per_partition_and_a_second_clustering_plans_nothing(case):
    opts, target, limit = _options(case)
    rng = random.Random(case["seed"])
    with tempfile.TemporaryDirectory() as root:
        path = str(Path(root) / "t")
        model: dict[Any, tuple[Any, ...]] = {}
        first_key = 0
        for b, n in enumerate(case["batches"]):
            _write(path, opts, _batch(rng, case["key_type"], first_key, n, b), model)
            first_key += n
        done = pyhudi.cluster(None, path, opts)
        for instant in done:
            _check_output_sizes(path, instant, target, limit)
        _check_rows(path, model)
        assert pyhudi.cluster(None, path, opts) == [], f"a second clustering planned again ({case})"
        assert _clusterings(path) == done
