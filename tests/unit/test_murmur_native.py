"""The compiled murmur kernel (pyhudi/_native.c) gives the numpy kernel's bits, which are Hadoop's.

The bloom filters of every file pyhudi writes come from the compiled kernel when the install built it;
a bit set differently would make Hudi's index miss a key (a duplicate on the next upsert). So every
input the numpy kernel takes is fed to both, and the filters they fill are compared byte for byte.
tests/unit/test_bloom_filter.py runs its Hadoop and sample-table checks with each kernel too.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import sysconfig
import uuid

import numpy as np
import pyarrow as pa
import pytest

import pyhudi.index.murmur as murmur
from pyhudi.index.bloom_filter import DYNAMIC_V0, SIMPLE, BloomFilter, filter_shape
from pyhudi.native import load_native

NATIVE = load_native()
needs_native = pytest.mark.skipif(NATIVE is None, reason="pyhudi._native is not built (no C compiler at install)")

# Every tail length, the signed tail bytes Java sign-extends (0x80-0xff), multi-byte UTF-8, a NUL, long keys.
ADVERSARIAL = ["a", "ab", "abc", "abcd", "é", "\u00ff", "\u00ff\u00ff", "\u0080" * 3, "日本語キー", "🙂", "a\u0000b",
               "x" * 55, "y" * 56, "z" * 63, "w" * 64, "t" * 300, "-0E-18", "city=São Paulo/2024", "\u00ff" * 21]


def _keys(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abcXYZ019:-,_/\u00e9\u00ff\u0080\u4e2d\U0001F600"
    return (ADVERSARIAL + [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(n)]
            + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 70))) for _ in range(n)])


def _hadoop(key: str, nb_hash: int, vector_size: int) -> list[int]:
    """The plain-Python rounds (murmur.py's scalar form, itself checked against Hadoop in test_bloom_filter)."""
    return murmur._murmur_rounds(key.encode("utf-8"), nb_hash, vector_size)


def test_the_install_built_the_kernel_where_a_compiler_is() -> None:
    """A broken build must not pass unnoticed as 'the numpy fallback ran'."""
    if os.environ.get("PYHUDI_NATIVE") == "0":
        pytest.skip("PYHUDI_NATIVE=0 selects the numpy kernel")
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) here: the install skips the optional kernel")
    assert NATIVE is not None, ("a C compiler is here but pyhudi._native does not import or is stale: "
                                "run `pip install -e .` again")


@needs_native
@pytest.mark.parametrize("entries", [1, 1000, 60000, 10**7])
def test_positions_equal_numpy_and_hadoop(entries: int, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = _keys(entries, 1500)
    vector_size, nb_hash = filter_shape(entries, 1e-9)
    compiled = murmur.key_positions(pa.array(keys), nb_hash, vector_size)
    monkeypatch.setattr(murmur, "_NATIVE", None)
    assert np.array_equal(compiled, murmur.key_positions(pa.array(keys), nb_hash, vector_size))
    for col in range(0, len(keys), 7):
        assert compiled[:, col].tolist() == _hadoop(keys[col], nb_hash, vector_size), keys[col]


@needs_native
@pytest.mark.parametrize("type_code", [SIMPLE, DYNAMIC_V0])
def test_filters_filled_by_either_kernel_are_byte_identical(type_code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamic filters too: rows added as keys arrive, then the round robin once max entries is reached, so
    keys land in different rows (each key's bits offset by its row)."""
    keys = _keys(7, 1200)
    batches = [keys[:5], keys[5:900], keys[900:]]

    def filled() -> BloomFilter:
        bf = BloomFilter.create(num_entries=400, fpp=1e-6, max_entries=1000, type_code=type_code)
        for batch in batches:
            bf.add_keys(pa.array(batch))
        return bf

    compiled = filled()
    monkeypatch.setattr(murmur, "_NATIVE", None)
    reference = filled()
    assert compiled.serialized() == reference.serialized()
    assert compiled.num_rows == reference.num_rows == (1 if type_code == SIMPLE else 3)
    assert compiled.might_contain_many(pa.array(keys)).all()


@needs_native
def test_sliced_chunked_large_and_binary_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = _keys(3, 300)
    vector_size, nb_hash = filter_shape(5000, 1e-9)
    want = np.array([_hadoop(k, nb_hash, vector_size) for k in keys]).T
    forms = [pa.array(["pad", *keys]).slice(1), pa.chunked_array([keys[:10], keys[10:]]),
             pa.array(keys, pa.large_string()), pa.array([k.encode() for k in keys], pa.binary()), keys]
    for form in forms:
        assert np.array_equal(murmur.key_positions(form, nb_hash, vector_size), want), type(form)
    bits = np.zeros(2 * vector_size, bool)[::2]  # not contiguous: the numpy kernel sets them
    data, offsets = murmur.utf8_columns(keys)
    murmur.set_bits(data, offsets, nb_hash, vector_size, bits)
    assert np.array_equal(np.flatnonzero(bits), np.unique(want))


@needs_native
def test_the_kernel_refuses_arguments_that_do_not_match() -> None:
    """The kernel reads and writes raw memory: every mismatch is a ValueError, never a stray write."""
    data = np.frombuffer(b"abcdefgh", np.uint8)
    starts, lengths = np.array([0, 4], np.int64), np.array([4, 4], np.int64)
    vector_size, nb_hash = 1000, 3
    magic, shift = (int(x) for x in murmur._division_magic(vector_size))
    out = np.empty((nb_hash, 2), np.int64)
    bits = np.zeros(vector_size, bool)
    NATIVE.murmur_positions(data, starts, lengths, 1, nb_hash, vector_size, magic, shift, b"", out)
    bad_positions = [
        (data, np.array([0, 5], np.int64), lengths, 1, nb_hash, vector_size, magic, shift, b"", out),  # past the data
        (data, starts, np.array([4, 8], np.int64), 1, nb_hash, vector_size, magic, shift, b"", out),  # another block count
        (data, starts, lengths[:1], 1, nb_hash, vector_size, magic, shift, b"", out),  # lengths short
        (data, starts, lengths, 1, nb_hash, vector_size, magic, shift, b"", np.empty((nb_hash, 1), np.int64)),
        (data, starts, lengths, 1, nb_hash, 0, magic, shift, b"", out),
        (data, starts, lengths, 1, nb_hash, 1 << 31, magic, shift, b"", out),
    ]
    for args in bad_positions:
        with pytest.raises(ValueError):
            NATIVE.murmur_positions(*args)
    NATIVE.murmur_set_bits(data, starts, lengths, 1, nb_hash, vector_size, magic, shift, b"", bits)
    assert bits.sum() > 0
    for rows, target in [(np.array([0], np.int64), bits),  # one row start for two keys
                         (np.array([0, 1], np.int64), bits),  # the second row runs past the bits
                         (b"", np.zeros(vector_size - 1, bool))]:
        with pytest.raises(ValueError):
            NATIVE.murmur_set_bits(data, starts, lengths, 1, nb_hash, vector_size, magic, shift, rows, target)
    with pytest.raises(ValueError):  # row starts are for murmur_set_bits only
        NATIVE.murmur_positions(data, starts, lengths, 1, nb_hash, vector_size, magic, shift, starts, out)
