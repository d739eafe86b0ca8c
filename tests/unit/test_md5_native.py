"""The compiled MD5 kernel (pyhudi/_native.c `md5_prefixes`) gives hashlib's digests, as the numpy kernel
(writer/key_md5.py) does.

The insert routing picks a new record's file from its key's MD5 (Hudi's
NumericUtils.getMessageDigestHash("MD5", key)); a digest computed differently would send records to other
files than Hudi's partitioner does. Every padding case is fed to both kernels: each length around the
55/56 and 63/64 byte boundaries where the bit length moves to a second block, empty keys, multi-byte UTF-8,
NUL bytes, raw binary keys, sliced and chunked columns, and groups of one key and of thousands.
"""

from __future__ import annotations

import hashlib
import random
import uuid

import numpy as np
import pyarrow as pa
import pytest

from pyhudi.native import load_native
from pyhudi.writer import key_md5

NATIVE = load_native()
needs_native = pytest.mark.skipif(NATIVE is None, reason="pyhudi._native is not built (no C compiler at install)")


def _hashlib(keys: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(hashlib.md5(k).digest()[:8] for k in keys), dtype="<i8")


def _keys(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    alphabet = "aZ09-_/:\u00e9\u00ff\u0080\u4e2d\U0001F600\x00\n\""
    boundary = [bytes([rng.randrange(256) for _ in range(n)]) for n in range(0, 200)]
    text = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90))).encode() for _ in range(2000)]
    uuids = [str(uuid.UUID(int=rng.getrandbits(128))).encode() for _ in range(3000)]
    return boundary + text + uuids


@needs_native
@pytest.mark.parametrize("seed", [1, 2])
def test_native_and_numpy_equal_hashlib(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = _keys(seed)
    want = _hashlib(keys)
    column = pa.array(keys, pa.binary())
    assert np.array_equal(key_md5.md5_prefixes(column), want)
    monkeypatch.setattr(key_md5, "_NATIVE", None)
    assert np.array_equal(key_md5.md5_prefixes(column), want)


@needs_native
def test_strings_sliced_chunked_and_one_key() -> None:
    keys = [k.decode() for k in _keys(3)[200:] if b"\x00" not in k]
    want = _hashlib([k.encode() for k in keys])
    forms = [pa.array(["pad", *keys]).slice(1), pa.chunked_array([keys[:10], keys[10:]]),
             pa.array(keys, pa.large_string())]
    for form in forms:
        assert np.array_equal(key_md5.md5_prefixes(form), want), type(form)
    assert np.array_equal(key_md5.md5_prefixes(pa.array(keys[:1])), want[:1])


@needs_native
def test_the_kernel_refuses_arguments_that_do_not_match() -> None:
    """The kernel reads raw memory: every mismatch is a ValueError, never a read past the data."""
    data = np.frombuffer(b"abcdefgh", np.uint8)
    out = np.empty(2, np.int64)
    NATIVE.md5_prefixes(data, np.array([0, 4], np.int64), 4, out)
    assert out.tolist() == _hashlib([b"abcd", b"efgh"]).tolist()
    bad = [
        (data, np.array([0, 5], np.int64), 4, out),  # the second key runs past the data
        (data, np.array([-1], np.int64), 4, out),  # a negative start
        (data, np.array([0, 4], np.int64), -1, out),  # a negative length
        (data, np.array([0, 4], np.int64), 4, np.empty(1, np.int64)),  # the output short
        (data, np.array([0, 4], np.int64).tobytes()[:12], 4, out),  # starts not whole int64s
    ]
    for args in bad:
        with pytest.raises(ValueError):
            NATIVE.md5_prefixes(*args)
