"""The optional compiled kernels (`pyhudi/_native.c`, built by setup.py where the install finds a C
compiler): the bloom filter's murmur rounds (`index/murmur.py`), the insert routing's MD5
(`writer/key_md5.py`) and a batched merge's footer key ranges (`index/key_order.py`). Each has a numpy or
Arrow twin giving the same answers, used when the module is not built,
is stale, or `PYHUDI_NATIVE=0` is in the environment."""

from __future__ import annotations

import importlib
import os
from typing import Any

KERNEL_VERSION = 3  # the pyhudi/_native.c this package was written against


def load_native() -> Any:
    """The compiled kernels, or None: not built, disabled (PYHUDI_NATIVE=0), or built from another
    version of pyhudi/_native.c than this package expects (an editable install's stale build)."""
    if os.environ.get("PYHUDI_NATIVE", "1") == "0":
        return None
    try:
        native = importlib.import_module("pyhudi._native")
    except ImportError:
        return None
    return native if getattr(native, "KERNEL_VERSION", None) == KERNEL_VERSION else None
