"""Vectorized Spark UDFs over Arrow arrays (the Spark path's routing and bucket ids)."""

from __future__ import annotations

from pyspark.sql import functions as F


def arrow_udf(fn, return_type: str):  # type: ignore[no-untyped-def]
    """A vectorized UDF over Arrow arrays (PySpark 4.1+), falling back to a pandas UDF on 4.0."""
    native = getattr(F, "arrow_udf", None)
    if native is not None:
        return native(fn, return_type)
    import pandas as pd
    import pyarrow as pa

    def via_pandas(*cols: pd.Series) -> pd.Series:
        return fn(*[pa.array(c.where(c.notna(), None)) for c in cols]).to_pandas()

    return F.pandas_udf(via_pandas, return_type)  # type: ignore[call-overload]
