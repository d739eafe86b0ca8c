"""Hadoop's MurmurHash as Hudi's bloom filters use it, vectorised over Arrow key columns.

A key is hashed as its UTF-8 bytes with Hadoop's MurmurHash (the MurmurHash2 variant, hash type 1);
round ``i`` is seeded with the signed result of round ``i - 1`` (the first with 0), and its bit index
is ``abs(h % vector_size)`` with Java's truncating ``%`` (Hadoop's ``HashFunction``). The rounds depend
only on the key and the previous round, never on the filter, so keys hashed once (`key_positions`) serve
every filter of one shape. The filters themselves are `bloom_filter.py`.

The rounds run in the compiled `pyhudi._native` when the install built it (a C compiler was there),
else in numpy (`_hash_rounds`); both give the same bits (tests/unit/test_murmur_native.py). The compiled
kernel is 5-7 times faster and releases the GIL, so a write's threads hash their files in parallel.
`PYHUDI_NATIVE=0` in the environment selects numpy.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from pyhudi.errors import InvalidRecordError
from pyhudi.io.write_pool import WRITE_POOL as _POOL
from pyhudi.native import load_native

Keys: TypeAlias = Iterable[str] | pa.Array | pa.ChunkedArray

_M = np.uint32(0x5BD1E995)
_CHUNK = 1 << 16  # keys hashed together; bounds the (nbHash, chunk) position matrix
_SCALAR_MAX_KEYS = 8  # up to this many keys, plain Python hashes faster than numpy (_scalar_positions)
_NATIVE_CHUNK = 1 << 13  # keys per compiled call: a (30, 8192) int64 position matrix is 2 MB


_NATIVE = load_native()


def utf8_columns(keys: Keys) -> tuple[np.ndarray, np.ndarray]:
    """Return (utf8 bytes, int64 offsets) of ``keys`` without a per-key Python loop.

    Arrow does the UTF-8 encoding for Python strings and hands us its buffers,
    so Arrow columns read from parquet are hashed without any copy per key.
    """
    if isinstance(keys, (str, bytes)):
        raise TypeError("add_keys/might_contain_many take a collection of keys, not one key")
    if isinstance(keys, pa.ChunkedArray):
        arr = keys.combine_chunks(memory_pool=_POOL) if keys.num_chunks else pa.array([], pa.large_string())
    elif isinstance(keys, pa.Array):
        arr = keys
    else:
        seq = keys if isinstance(keys, (list, tuple)) else list(keys)
        arr = pa.array(seq, type=pa.large_string())
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
            or pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise TypeError(f"record keys must be strings, got an Arrow array of {arr.type}")
    if arr.null_count:
        raise InvalidRecordError(f"{arr.null_count} record key(s) are null; Hudi cannot index a null key")
    data, offsets = string_buffers(arr)
    if len(arr) and np.any(offsets[1:] == offsets[:-1]):
        raise InvalidRecordError("a record key is empty; Hudi's hash function rejects empty keys")
    return data, offsets


def string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, int64 offsets) of a string or binary array, its slice offset applied, without copying the
    bytes: 32-bit offsets are widened in numpy (a cast to large_binary would copy the bytes too)."""
    bufs = arr.buffers()
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        offsets = np.frombuffer(bufs[1], dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    else:
        offsets = np.frombuffer(bufs[1], dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4).astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets


def hash_positions(data: np.ndarray, offsets: np.ndarray, nb_hash: int,
                   vector_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (key indices, bit positions of shape (nb_hash, len(indices))).

    Vectorised Hadoop MurmurHash. Keys are grouped by their number of whole
    4-byte blocks so each group is a dense (n, blocks) uint32 matrix; the
    per-key length and the 0-3 tail bytes vary inside a group and are applied
    element-wise. The mixed blocks do not depend on the seed, so they are
    computed once and reused by all ``nb_hash`` chained rounds.
    """
    if _NATIVE is not None and len(offsets) > 1:
        yield from _native_groups(data, offsets, nb_hash, vector_size)
        return
    for idx, rounds in round_groups(data, offsets, nb_hash, vector_size):
        out = np.empty((nb_hash, len(idx)), np.int64)
        for i, pos in enumerate(rounds):
            out[i] = pos
        yield idx, out


def round_groups(data: np.ndarray, offsets: np.ndarray, nb_hash: int,
                 vector_size: int) -> Iterator[tuple[np.ndarray, Iterator[np.ndarray]]]:
    """`hash_positions` one round at a time: (key indices, an iterator of each round's bit positions, one
    int64 array per round that the next round overwrites). A filter that only sets bits scatters each
    round while it is in cache, instead of writing and reading back an (nb_hash, keys) matrix (15.7 MB
    per 64k keys at Hudi's 30 rounds)."""
    if len(offsets) < 2:
        return
    if len(offsets) - 1 <= _SCALAR_MAX_KEYS:
        yield np.arange(len(offsets) - 1), iter(_scalar_positions(data, offsets, nb_hash, vector_size))
        return
    starts, lengths, nblocks = _spans(offsets)
    for group in _block_groups(nblocks):
        for lo in range(0, len(group), _CHUNK):
            idx = group[lo:lo + _CHUNK]
            yield idx, _hash_rounds(data, starts[idx], lengths[idx], nb_hash, vector_size)


def _spans(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each key's start, length and number of whole 4-byte blocks."""
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    return starts, lengths, lengths >> 2


def _block_groups(nblocks: np.ndarray) -> list[np.ndarray]:
    """Key indices grouped by their number of whole 4-byte blocks (one group when all keys have the same
    length, as uuids do: no sort then)."""
    if len(nblocks) and nblocks[0] == nblocks[-1] and bool(np.all(nblocks == nblocks[0])):
        return [np.arange(len(nblocks))]
    order = np.argsort(nblocks, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(nblocks[order])) + 1)


def _native_groups(data: np.ndarray, offsets: np.ndarray, nb_hash: int, vector_size: int,
                   chunk: int | None = _NATIVE_CHUNK) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(key indices, their (nb_hash, keys) positions) from the compiled kernel, a fresh matrix per call of
    at most `chunk` keys (None: a whole block group at once)."""
    starts, lengths, nblocks = _spans(offsets)
    magic, shift = _division_magic(vector_size)
    for group in _block_groups(nblocks):
        nb = int(nblocks[group[0]])
        step = chunk or len(group)
        for lo in range(0, len(group), step):
            idx = group[lo:lo + step]
            out = np.empty((nb_hash, len(idx)), np.int64)
            _NATIVE.murmur_positions(data, np.ascontiguousarray(starts[idx], np.int64),
                                     np.ascontiguousarray(lengths[idx], np.int64), nb, nb_hash, vector_size,
                                     int(magic), int(shift), b"", out)
            yield idx, out


def set_bits(data: np.ndarray, offsets: np.ndarray, nb_hash: int, vector_size: int, bits: np.ndarray,
             row_starts: np.ndarray | None = None) -> None:
    """bits[row_starts[key] + position] = True for each key's `nb_hash` positions (`bits`: a flat, contiguous
    bool array; no `row_starts`: one row). The compiled kernel sets them as it hashes, so the (nb_hash, keys)
    position matrix is never built."""
    if len(offsets) < 2:
        return
    if _NATIVE is None or not bits.flags.c_contiguous or bits.dtype != np.bool_:
        for idx, rounds in round_groups(data, offsets, nb_hash, vector_size):
            shift_by = None if row_starts is None else row_starts[idx]
            for pos in rounds:
                if shift_by is not None:
                    pos += shift_by
                bits[pos] = True
        return
    starts, lengths, nblocks = _spans(offsets)
    magic, shift = _division_magic(vector_size)
    for group in _block_groups(nblocks):
        rows = b"" if row_starts is None else np.ascontiguousarray(row_starts[group], np.int64)
        _NATIVE.murmur_set_bits(data, np.ascontiguousarray(starts[group], np.int64),
                                np.ascontiguousarray(lengths[group], np.int64), int(nblocks[group[0]]), nb_hash,
                                vector_size, int(magic), int(shift), rows, bits)


def key_positions(keys: Keys, nb_hash: int, vector_size: int) -> np.ndarray:
    """The bits each key sets, shape (nb_hash, keys): hashed once for many filters of one shape (a batched
    merge extends hundreds of files' filters by a few keys each; hashing them together is one vectorised
    pass instead of a Python murmur loop per key)."""
    data, offsets = utf8_columns(keys)
    n = len(offsets) - 1
    if _NATIVE is not None and n:
        groups = list(_native_groups(data, offsets, nb_hash, vector_size, chunk=None))
        if len(groups) == 1:
            return groups[0][1]  # one block count: its group is every key, in order
    else:
        groups = list(hash_positions(data, offsets, nb_hash, vector_size))
    out = np.empty((nb_hash, n), np.int64)
    for idx, pos in groups:
        out[:, idx] = pos
    return out


def _scalar_positions(data: np.ndarray, offsets: np.ndarray, nb_hash: int, vector_size: int) -> np.ndarray:
    """The same positions as `_hash_rounds`, one key at a time in plain Python: the vectorised rounds cost
    ~16 numpy calls each (0.4-0.5 ms for Hudi's 30 rounds however few the keys), while a merge that tops
    a file up adds one to a few keys (measured: this form wins up to about 8 keys of 13-36 bytes)."""
    out = np.empty((nb_hash, len(offsets) - 1), np.int64)
    for col, (lo, hi) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        out[:, col] = _murmur_rounds(data[lo:hi].tobytes(), nb_hash, vector_size)
    return out


def _murmur_rounds(key: bytes, nb_hash: int, vector_size: int) -> list[int]:
    """Hadoop's HashFunction: `nb_hash` chained MurmurHash rounds (seed = the previous signed hash),
    each reduced to Math.abs(h % vector_size)."""
    m, mask, length = 0x5BD1E995, 0xFFFFFFFF, len(key)
    nb = length >> 2
    mixed = []
    for (k,) in struct.iter_unpack("<I", key[:4 * nb]):
        k = (k * m) & mask
        k ^= k >> 24
        mixed.append((k * m) & mask)
    tail = 0
    for back in range(length - 4 * nb, 0, -1):  # signed bytes: Java sign-extends `data[i] << s`
        byte = key[length - back]
        tail ^= ((byte - 256 if byte > 127 else byte) << (8 * (back - 1))) & mask
    out, h = [], 0
    for _ in range(nb_hash):
        h ^= length
        for k in mixed:
            h = ((h * m) & mask) ^ k
        if length > 4 * nb:
            h = ((h ^ tail) * m) & mask
        h ^= h >> 13
        h = (h * m) & mask
        h ^= h >> 15
        out.append(abs(h - (1 << 32) if h >> 31 else h) % vector_size)
    return out


def _blocks(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, nb: int) -> np.ndarray:
    """The keys' whole 4-byte blocks as an (n, nb) uint32 matrix (a copy: it is mixed in place).

    Keys of one length stored back to back (a UUID column) are a strided view of the data buffer,
    which saves building an index matrix as large as the keys themselves."""
    n, width = len(starts), int(lengths[0])
    if n > 1 and lengths[-1] == width and starts[-1] - starts[0] == (n - 1) * width \
            and bool(np.all(lengths == width)) and bool(np.all(np.diff(starts) == width)):
        raw = data[starts[0]:starts[0] + n * width].reshape(n, width)[:, :4 * nb]
    else:
        raw = data[starts[:, None] + np.arange(4 * nb)]
    return np.ascontiguousarray(raw).view("<u4").astype(np.uint32)


def _hash_rounds(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, nb_hash: int,
                 vector_size: int) -> Iterator[np.ndarray]:
    """Each round's bit positions for keys that all have the same number of 4-byte blocks, in one int64
    buffer that every round overwrites (consume a round before asking for the next)."""
    n = len(starts)
    nb = int(lengths[0] >> 2)
    # Blocks are little-endian uint32 (Java's sign extension of the top byte shifts out).
    if nb:
        k = _blocks(data, starts, lengths, nb)
        k *= _M
        k ^= k >> np.uint32(24)
        k *= _M
        mixed = np.ascontiguousarray(k.T)
    else:
        mixed = np.zeros((0, n), np.uint32)
    # Tail bytes are SIGNED in Java (`(int) data[i] << s`): bytes >= 0x80 sign-extend.
    # Java reads the first tail byte into bits 16.., the last into bits 0.., so with
    # `left` tail bytes, the byte `back` from the end is shifted by 8 * (back - 1).
    ends = starts + lengths
    left = lengths - 4 * nb
    tail = np.zeros(n, np.uint32)
    for back in (3, 2, 1):
        sel = left >= back
        if sel.any():
            signed = data[ends[sel] - back].view(np.int8).astype(np.int32) << (8 * (back - 1))
            tail[sel] ^= signed.view(np.uint32)
    has_tail = left > 0
    all_tail, no_tail = bool(has_tail.all()), not has_tail.any()
    length32 = lengths.astype(np.uint32)
    out = np.empty(n, np.int64)
    magic, shift = _division_magic(vector_size)
    modulus, quotient = np.uint64(vector_size), np.empty(n, np.uint64)
    h = np.zeros(n, np.uint32)  # round i's seed is round i - 1's hash: updated in place
    tmp = np.empty(n, np.uint32)
    for _ in range(nb_hash):
        h ^= length32
        for j in range(nb):
            h *= _M
            h ^= mixed[j]
        if all_tail:  # every key has tail bytes: no per-key select (none has: nothing to do)
            h ^= tail
            h *= _M
        elif not no_tail:
            h = np.where(has_tail, (h ^ tail) * _M, h)
        np.right_shift(h, np.uint32(13), out=tmp)
        h ^= tmp
        h *= _M
        np.right_shift(h, np.uint32(15), out=tmp)
        h ^= tmp
        # Java: Math.abs(h % v) with truncating %, which equals |h| mod v. |h| fits uint32 (the int32
        # abs of -2^31 wraps to -2^31, whose uint32 view is 2^31); |h| - (|h| * magic >> shift) * v is
        # that remainder without a division (see _division_magic).
        np.abs(h.view(np.int32), out=tmp.view(np.int32))
        np.multiply(tmp, magic, out=quotient)
        np.right_shift(quotient, shift, out=quotient)
        quotient *= modulus
        np.subtract(tmp, quotient, out=out.view(np.uint64))
        yield out


def _division_magic(divisor: int) -> tuple[np.uint64, np.uint64]:
    """(m, s) with floor(x * m / 2^s) = floor(x / divisor) for every 0 <= x < 2^32 (Granlund and
    Montgomery's round-up method): s = 32 + ceil(log2 divisor), m = ceil(2^s / divisor). Writing
    m = (2^s + e) / divisor with 0 <= e < divisor, x * m / 2^s exceeds x / divisor by less than
    2^32 * divisor / (divisor * 2^s) = 2^-l <= 1 / divisor, which never reaches the next integer. Bit
    indexes are |h| <= 2^31 and divisor < 2^31 gives m < 2^33, so x * m < 2^64 fits uint64. numpy's
    uint32 `%` costs about 1.9 ns a value, 20 times a multiply; this form about two thirds of it."""
    shift = 32 + max(0, (divisor - 1).bit_length())
    return np.uint64(-(-(1 << shift) // divisor)), np.uint64(shift)
