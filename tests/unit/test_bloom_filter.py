"""Bloom filter compatibility with Hudi's footer filters.

Three independent sources of truth:
* the real Hudi sample tables (footers written by Hudi's Spark writer);
* known answers produced by Hadoop 3.5's own ``org.apache.hadoop.util.bloom``
  classes (MurmurHash, HashFunction, BloomFilter, DynamicBloomFilter), run once
  on a JVM; they cover multi-byte UTF-8 keys, which the samples lack;
* a slow scalar transcription of Hudi's Java in this file, to check the
  vectorised code and the bounded row-growth state machine key by key.
"""

from __future__ import annotations

import base64
import hashlib
import random
import struct
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi.index.murmur as murmur
from pyhudi.errors import CorruptFileError, InvalidConfigError, InvalidRecordError
from pyhudi.index.bloom_filter import (
    FOOTER_KEY,
    OLD_FOOTER_KEY,
    TYPE_CODE_KEY,
    BloomFilter,
    read_footer_filter,
)
from pyhudi.index.murmur import _division_magic
from pyhudi.index.murmur import hash_positions as _positions
from pyhudi.index.murmur import utf8_columns as _utf8_columns
from tests.helpers import samples_root, spy_create_filled


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every check here runs with each murmur kernel (test_murmur_native.py compares the two directly)."""
    if request.param == "numpy":
        monkeypatch.setattr(murmur, "_NATIVE", None)
    elif murmur._NATIVE is None:
        pytest.skip("pyhudi._native is not built (no C compiler at install)")
    return str(request.param)


# These tests pin Hudi's own filter shapes (every file sized for num_entries), whose bytes Hudi's writers
# produce; pyhudi's records-sized filters have tests of their own (test_bloom_sizing.py).
ANY_COUNT = 1  # the new file's record count: with Hudi's sizing it does not change the shape


def _hudi_sized(**kw: Any) -> Any:
    from pyhudi.io.base_file import ParquetSettings

    return ParquetSettings(bloom_size_to_records=False, **kw)

SAMPLES = samples_root() / "tables"
ZIPS = sorted(SAMPLES.glob("*.zip")) if SAMPLES.is_dir() else []

# --------------------------------------------------------------------------- samples


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Base parquet files of every sample table, extracted from the zips."""
    if not ZIPS:
        pytest.skip(f"sample tables not found under {SAMPLES}")
    out: dict[str, list[Path]] = {}
    for zp in ZIPS:
        dest = tmp_path_factory.mktemp(zp.stem)
        with zipfile.ZipFile(zp) as z:
            keep = [m for m in z.namelist() if not m.startswith("__MACOSX/")]
            z.extractall(dest, keep)
        out[zp.stem] = sorted(p for p in dest.rglob("*.parquet") if "gold_" not in str(p.relative_to(dest)))
    return out


def _with_filter(files: list[Path]) -> list[tuple[Path, dict[bytes, bytes]]]:
    pairs = [(p, pq.read_metadata(p).metadata or {}) for p in files]
    return [(p, md) for p, md in pairs if FOOTER_KEY.encode() in md]


def _keys(path: Path) -> pa.ChunkedArray:
    return pq.read_table(path, columns=["_hoodie_record_key"]).column(0)


def test_samples_present(sample_files: dict[str, list[Path]]) -> None:
    with_filter = {name for name, files in sample_files.items() if _with_filter(files)}
    assert len(with_filter) >= 9  # every COW/MOR table except empty and no_metafields
    for name, files in sample_files.items():
        if "no_metafields" in name:  # Hudi writes no filter without meta fields
            assert files and all(read_footer_filter(pq.read_metadata(p).metadata) is None for p in files)


@pytest.mark.parametrize("zip_name", [z.stem for z in ZIPS])
def test_sample_filters_decode_contain_and_reserialize(sample_files: dict[str, list[Path]],
                                                        zip_name: str) -> None:
    for path, md in _with_filter(sample_files[zip_name]):
        text = md[FOOTER_KEY.encode()].decode()
        assert md[TYPE_CODE_KEY.encode()] == b"DYNAMIC_V0"
        bf = read_footer_filter(md)
        assert bf is not None and bf.type_code == "DYNAMIC_V0"
        assert (bf.vector_size, bf.num_hashes, bf.num_rows) == (2587966, 30, 1)
        keys = _keys(path)
        assert bf.might_contain_many(keys).all(), path
        assert all(bf.might_contain(k) for k in keys.to_pylist())
        assert bf.serialize() == text  # decode/encode is lossless
        assert BloomFilter.deserialize(text.encode()).serialize() == text


@pytest.mark.parametrize("zip_name", [z.stem for z in ZIPS])
def test_fresh_filter_equals_hudi_footer(sample_files: dict[str, list[Path]], zip_name: str) -> None:
    """Building from the file's keys reproduces Hudi's footer byte for byte.

    Hudi's write handles add each written record's key once, so the stored
    ``currentNbRecord`` equals the file's row count, and with one row the bits
    do not depend on key order.
    """
    for path, md in _with_filter(sample_files[zip_name]):
        keys = _keys(path)
        fresh = BloomFilter.create()  # Hudi defaults: 60000, 1e-9, 100000, DYNAMIC_V0
        fresh.add_keys(keys)
        assert fresh.current_count == len(keys)
        assert fresh.serialize() == md[FOOTER_KEY.encode()].decode(), path
        assert fresh.footer_metadata() == {FOOTER_KEY: fresh.serialize(), TYPE_CODE_KEY: "DYNAMIC_V0"}


# ------------------------------------------------------------- Hadoop known answers

MULTIBYTE = ["a", "ab", "abc", "abcd", "abcde", "\u00e9", "\u00e9\u00e9", "x\u00ff\u00fe",
             "\u4e2d\u6587\u952e", "\U0001F600key", "id:1,name:Alice", "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04",
             "k\u0080", "\u00ff\u00ff\u00ff\u00ff\u00ff"]

# Hadoop HashFunction(2587966, 30, MURMUR).hash(key): positions 0-4 and 29.
HADOOP_POSITIONS = {
    "a": ([1197742, 96836, 620118, 143505, 376103], 115268),
    "abcd": ([1990355, 1895795, 51212, 2131065, 578428], 2486383),
    "abcde": ([281518, 1749164, 1535168, 628497, 2267628], 479717),
    "\u00e9": ([1021365, 1225260, 586514, 1189253, 2525069], 2057616),
    "\u00e9\u00e9": ([209191, 1817905, 586194, 1155543, 554209], 380908),
    "x\u00ff\u00fe": ([583433, 1974430, 571626, 1745411, 992117], 1449071),
    "\u4e2d\u6587\u952e": ([2317669, 1909261, 236202, 1889831, 817095], 901594),
    "\U0001F600key": ([1994204, 229647, 722055, 1343333, 965780], 1384989),
    "k\u0080": ([976455, 1601776, 378150, 820617, 2201901], 1572614),
    "\u00ff\u00ff\u00ff\u00ff\u00ff": ([2334959, 1802714, 38133, 970454, 838117], 691827),
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_hash_positions_match_hadoop_including_signed_tail_bytes() -> None:
    names = list(HADOOP_POSITIONS)
    data, offsets = _utf8_columns(names)
    seen = 0
    for idx, pos in _positions(data, offsets, 30, 2587966):
        for col, i in enumerate(idx):
            first, last = HADOOP_POSITIONS[names[i]]
            assert pos[:5, col].tolist() == first and pos[29, col] == last, names[i]
            seen += 1
    assert seen == len(names)


def test_simple_filter_matches_hadoop_bloomfilter() -> None:
    # Hadoop BloomFilter(143776, 10, MURMUR) <- "k0".."k999" then MULTIBYTE, written with Filter.write.
    bf = BloomFilter.create(10000, 1e-3, type_code="simple")
    assert (bf.vector_size, bf.num_hashes, bf.type_code) == (143776, 10, "SIMPLE")
    bf.add_keys([f"k{i}" for i in range(1000)])
    bf.add_keys(MULTIBYTE)
    assert _sha(bf.serialize()) == "71ff28ee1db9145533bc440a735bd52c70f0c6ba483ccf7dd58dd281ee9ba2e1"


def test_unbounded_growth_matches_hadoop_dynamic_bloomfilter() -> None:
    # Hadoop DynamicBloomFilter(1438, 10, MURMUR, nr=100) <- 350 keys: 4 rows, 50 in the last.
    # Hudi's bounded filter behaves identically while rows * nr < max_entries.
    bf = BloomFilter.create(100, 1e-3, max_entries=10**9)
    bf.add_keys(f"key-{i}-\u00e9" for i in range(350))
    assert (bf.num_rows, bf.current_count) == (4, 50)
    text = bf.serialize()
    assert len(text) == 1064
    assert _sha(text) == "9f29ce3e788c7f3fb74d67f635ae34afab0377517878e1227778102178d23dc2"


# ------------------------------------------------------ scalar Java transcription


def _murmur(data: bytes, seed: int) -> int:
    """Hadoop MurmurHash.hash(data, seed) as a signed Java int, one byte at a time."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (seed ^ len(data)) & mask
    n4 = len(data) // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    left = len(data) - 4 * n4
    if left:
        for back in range(left, 0, -1):
            b = data[len(data) - back]
            h ^= ((b - 256 if b > 127 else b) << (8 * (back - 1))) & mask
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


class _JavaDynamic:
    """InternalDynamicBloomFilter.add/getActiveStandardBF, one key at a time."""

    def __init__(self, size: int, nb_hash: int, nr: int, max_nr: int) -> None:
        self.size, self.nb_hash, self.nr, self.max_nr = size, nb_hash, nr, max_nr
        self.rows: list[set[int]] = [set()]
        self.count, self.reached_max, self.cur = 0, False, 0

    def _active(self) -> set[int] | None:
        if self.reached_max:
            row = self.rows[self.cur % len(self.rows)]
            self.cur += 1
            return row
        if self.count >= self.nr and len(self.rows) * self.nr < self.max_nr:
            return None
        if self.count >= self.nr:
            self.reached_max = True
            return self.rows[0]
        return self.rows[-1]

    def add(self, key: str) -> None:
        row = self._active()
        if row is None:
            self.rows.append(set())
            row = self.rows[-1]
            self.count = 0
        seed, raw = 0, key.encode()
        for _ in range(self.nb_hash):
            seed = _murmur(raw, seed)
            row.add(abs(seed) % self.size)  # abs(seed % size) with Java's truncating %
        self.count += 1

    def serialize(self) -> str:
        head = struct.pack(">iibi", -1, self.nb_hash, 1, self.size)
        out = head + struct.pack(">iii", self.nr, self.count, len(self.rows))
        for bits in self.rows:
            vec = bytearray((self.size + 7) // 8)
            for b in bits:
                vec[b // 8] |= 1 << (b % 8)
            out += head + bytes(vec)
        return base64.b64encode(out).decode()


def _random_keys(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcXYZ019:-,_/\u00e9\u00ff\u0080\u4e2d\U0001F600"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 23))) for _ in range(n)]


@pytest.mark.parametrize("max_entries", [10**6, 30, 25, 10, 0])
def test_bounded_growth_matches_java_state_machine(max_entries: int) -> None:
    """Random key lengths/bytes and random batch sizes vs the key-by-key Java logic."""
    rng = random.Random(max_entries)
    keys = _random_keys(rng, 75)
    ref = _JavaDynamic(288, 20, 10, max_entries)  # what create(10, 1e-6, ...) derives
    bf = BloomFilter.create(10, 1e-6, max_entries=max_entries)
    assert (bf.vector_size, bf.num_hashes) == (288, 20)
    i = 0
    while i < len(keys):
        step = rng.choice([1, 1, 2, 3, 7, 13])
        batch = keys[i:i + step]
        bf.add_keys(batch)
        for k in batch:
            ref.add(k)
        i += step
        assert (bf.num_rows, bf.current_count) == (len(ref.rows), ref.count)
        assert bf.serialize() == ref.serialize()
    assert bf.might_contain_many(keys).all()


def test_growth_rule_explicit() -> None:
    """nr=10, max=30: rows are added while rows*nr < max, then keys go round-robin from row 0."""
    bf = BloomFilter.create(10, 1e-2, max_entries=30)
    steps = [(10, 1, 10), (1, 2, 1), (9, 2, 10), (1, 3, 1), (9, 3, 10), (5, 3, 15)]
    for n, rows, count in steps:
        bf.add_keys([f"g{bf.num_rows}-{bf.current_count}-{j}" for j in range(n)])
        assert (bf.num_rows, bf.current_count) == (rows, count)
    # Defaults cap the footer at two rows (2 * 60000 >= 100000).
    big = BloomFilter.create()
    big.add_keys(pa.array([f"r{i}" for i in range(130_000)]))
    assert (big.num_rows, big.current_count) == (2, 70_000)
    assert len(big.serialize()) == 4 * ((13 + 12 + 2 * (13 + 323496) + 2) // 3)


def _bits(text: str, offset: int, size: int) -> np.ndarray:
    packed = np.frombuffer(base64.b64decode(text)[offset:offset + (size + 7) // 8], np.uint8)
    return np.unpackbits(packed, bitorder="little")[:size].astype(bool)


def test_round_robin_order_after_bound() -> None:
    """Past the bound the first key AND the next go to row 0, then rows 1, 0, 1, ..."""
    bf = BloomFilter.create(2, 1e-3, max_entries=4)  # two rows of 2 keys
    placement = {"a1": 0, "a2": 0, "b1": 1, "b2": 1, "c0": 0, "c1": 0, "c2": 1, "c3": 0, "c4": 1}
    bf.add_keys(list(placement))
    size = bf.vector_size
    text = bf.serialize()
    row_len = 13 + (size + 7) // 8
    rows = [_bits(text, 25 + r * row_len + 13, size) for r in range(2)]
    for r in range(2):
        expect = np.zeros(size, dtype=bool)
        for key, row in placement.items():
            if row == r:
                single = BloomFilter.create(2, 1e-3, type_code="SIMPLE")
                single.add_keys([key])
                expect |= _bits(single.serialize(), 13, size)
        assert (rows[r] == expect).all(), r


def test_deserialized_dynamic_filter_does_not_grow() -> None:
    # Hudi does not serialize max entries: a read-back full row goes round-robin.
    bf = BloomFilter.create(5, 1e-2, max_entries=100)
    bf.add_keys([f"d{i}" for i in range(5)])
    back = BloomFilter.deserialize(bf.serialize())
    back.add_keys(["d5", "d6"])
    assert (back.num_rows, back.current_count) == (1, 7)
    bf.add_keys(["d5"])
    assert bf.num_rows == 2


def test_vectorised_matches_scalar_on_random_keys() -> None:
    rng = random.Random(7)
    keys = _random_keys(rng, 3000) + [f"{i:0{rng.randint(1, 40)}d}" for i in range(3000)]
    data, offsets = _utf8_columns(keys)
    checked = 0
    for idx, pos in _positions(data, offsets, 30, 2587966):
        for col in range(0, len(idx), 17):
            seed, raw = 0, keys[idx[col]].encode()
            for i in range(30):
                seed = _murmur(raw, seed)
                assert pos[i, col] == abs(seed) % 2587966
            checked += 1
    assert checked > 300


# ------------------------------------------------------------ behaviour and inputs


def test_false_positive_rate_is_tiny() -> None:
    bf = BloomFilter.create()
    bf.add_keys([f"member-{i}" for i in range(60_000)])
    rng = np.random.default_rng(1)
    probes = [f"other-{x}" for x in rng.integers(0, 2**62, 100_000)]
    fp = int(bf.might_contain_many(probes).sum())
    assert fp <= 2  # expected ~1e-4 false positives at fpp 1e-9
    assert bf.might_contain_many([f"member-{i}" for i in range(0, 60_000, 7)]).all()


def test_simple_round_trip_and_footer() -> None:
    bf = BloomFilter.create(1000, 1e-4, type_code="SIMPLE")
    keys = [f"s{i}" for i in range(1000)]
    bf.add_keys(keys)
    meta = bf.footer_metadata()
    assert set(meta) == {FOOTER_KEY}  # Hudi writes the type code only for DYNAMIC filters
    back = read_footer_filter({k.encode(): v.encode() for k, v in meta.items()})
    assert back is not None and back.type_code == "SIMPLE"
    assert back.serialize() == meta[FOOTER_KEY]
    assert BloomFilter.deserialize(meta[FOOTER_KEY], None).might_contain_many(keys).all()
    old = read_footer_filter({OLD_FOOTER_KEY: meta[FOOTER_KEY]})
    assert old is not None and old.serialize() == meta[FOOTER_KEY]


def test_input_forms_agree() -> None:
    keys = [f"key-{i}-\u00e9" * (i % 4 + 1) for i in range(500)]
    big = pa.array(["pad"] + keys + ["pad"], pa.string())
    forms = [keys, tuple(keys), iter(keys), pa.array(keys), pa.array(keys, pa.large_string()),
             pa.chunked_array([keys[:123], keys[123:]]), big.slice(1, len(keys)),
             pa.array(keys).dictionary_encode(), pa.array([k.encode() for k in keys], pa.binary())]
    texts = set()
    for form in forms:
        bf = BloomFilter.create(1000, 1e-6)
        bf.add_keys(form)
        texts.add(bf.serialize())
    assert len(texts) == 1
    assert bf.might_contain_many(pa.chunked_array([], pa.string())).shape == (0,)
    assert bf.might_contain_many([]).shape == (0,)


def test_bad_keys_and_config() -> None:
    bf = BloomFilter.create()
    with pytest.raises(InvalidRecordError, match="empty"):
        bf.add_keys(["ok", ""])
    with pytest.raises(InvalidRecordError, match="null"):
        bf.add_keys(pa.array(["ok", None]))
    with pytest.raises(TypeError):
        bf.add_keys("one-key")
    with pytest.raises(TypeError):
        bf.add_keys(pa.array([1, 2]))
    assert bf.current_count == 0  # rejected batches leave the filter untouched
    for kwargs in ({"num_entries": 0}, {"fpp": 0.0}, {"fpp": 1.0}, {"type_code": "BOGUS"}):
        with pytest.raises(InvalidConfigError):
            BloomFilter.create(**kwargs)  # type: ignore[arg-type]


def test_corrupt_input_errors() -> None:
    good = BloomFilter.create(100, 1e-3)
    good.add_keys(["x"])
    raw = base64.b64decode(good.serialize())

    def enc(b: bytes) -> str:
        return base64.b64encode(b).decode()

    cases = {
        "not valid base64": "@@not base64@@",
        "truncated": enc(raw[:-5]),
        "version": enc(struct.pack(">i", -2) + raw[4:]),
        "hash type": enc(raw[:8] + b"\x00" + raw[9:]),
        "rows": enc(raw[:21] + struct.pack(">i", 0) + raw[25:]),
    }
    for what, text in cases.items():
        with pytest.raises(CorruptFileError, match=what):
            BloomFilter.deserialize(text)
    with pytest.raises(CorruptFileError, match="type code"):
        BloomFilter.deserialize(good.serialize(), "DYNAMIC_V9")
    with pytest.raises(CorruptFileError, match="truncated"):
        BloomFilter.deserialize(enc(raw[:10]))
    # Java's decoder accepts missing padding, so do we.
    assert BloomFilter.deserialize(good.serialize().rstrip("=")).serialize() == good.serialize()


def test_hashing_speed_is_not_pathological() -> None:
    rng = np.random.default_rng(3)
    keys = pa.array([f"{a:016x}-{b}" for a, b in zip(rng.integers(0, 2**62, 200_000), range(200_000), strict=True)])
    bf = BloomFilter.create()
    start = time.perf_counter()
    bf.add_keys(keys)
    added = time.perf_counter() - start
    start = time.perf_counter()
    hits = bf.might_contain_many(keys)
    probed = time.perf_counter() - start
    print(f"\nbloom: add 200k keys {added:.2f}s, probe 200k keys {probed:.2f}s")
    assert hits.all()
    assert (bf.num_rows, bf.current_count) == (2, 140_000)


# --------------------------------------------------------------------------- extending a file's filter

def _footer_of(keys: list[str], settings: object) -> dict[bytes, bytes]:
    from pyhudi.io.base_file import footer_metadata

    table = pa.table({"_hoodie_record_key": keys})
    meta = footer_metadata(table, "{}", settings)  # type: ignore[arg-type]
    return {k.encode(): v.encode() for k, v in meta.items()}


@pytest.mark.parametrize("n_old,n_new", [(1000, 500), (59_000, 3_000), (130_000, 10)])
def test_extended_filter_holds_old_and_new_keys(n_old: int, n_new: int) -> None:
    """A merge reuses the old file's filter: every old and new key must test positive, and the
    filter must keep Hudi's shape (rows grow at num_entries, capped by max entries)."""
    from pyhudi.io.base_file import extended_bloom

    settings = _hudi_sized()
    old = [f"old-{i}" for i in range(n_old)]
    new = [f"new-{i}" for i in range(n_new)]
    bloom = extended_bloom(_footer_of(old, settings), pa.array(new), settings, num_records=ANY_COUNT)
    assert bloom is not None
    assert bloom.might_contain_many(old + new).all()
    fresh = BloomFilter.create()
    fresh.add_keys(old + new)
    assert bloom.num_rows == fresh.num_rows
    absent = [f"absent-{i}" for i in range(2000)]
    assert bloom.might_contain_many(absent).sum() <= 2


def test_extended_filter_not_reused_when_config_changed() -> None:
    """A rewrite after the user changed the bloom settings builds a new filter (None = rebuild)."""
    from pyhudi.io.base_file import extended_bloom

    footer = _footer_of(["a", "b"], _hudi_sized())
    assert extended_bloom(footer, pa.array(["c"]), _hudi_sized(bloom_fpp=1e-6), num_records=ANY_COUNT) is None
    assert extended_bloom(footer, pa.array(["c"]), _hudi_sized(bloom_type="SIMPLE"), num_records=ANY_COUNT) is None
    assert extended_bloom(None, pa.array(["c"]), _hudi_sized(), num_records=ANY_COUNT) is None
    assert extended_bloom({b"org.apache.hudi.bloomfilter": b"!!not base64"}, pa.array(["c"]),
                          _hudi_sized(), num_records=ANY_COUNT) is None


@pytest.mark.parametrize("divisor", [1, 2, 3, 7, 1000, 2587966, 431_328, 2**20, 2**20 + 1, 2**31 - 1])
def test_division_magic_is_exact_over_every_bit_index(divisor: int) -> None:
    """The multiply-shift remainder equals `%` at the edges (0, multiples of the divisor and their
    neighbours, 2^31 = |Integer.MIN_VALUE|) and on random values of the whole |h| range."""
    magic, shift = _division_magic(divisor)
    rng = np.random.default_rng(divisor)
    edges = [0, 1, divisor - 1, divisor, divisor + 1, 2**31 - 1, 2**31, (2**31 // divisor) * divisor,
             (2**31 // divisor) * divisor - 1]
    x = np.concatenate([np.array([e for e in edges if 0 <= e <= 2**31], np.uint64),
                        rng.integers(0, 2**31 + 1, 200_000, dtype=np.uint64)])
    quotient = (x * magic) >> shift
    assert np.array_equal(x - quotient * np.uint64(divisor), x % np.uint64(divisor))


def test_string_keys_hash_from_their_own_buffers_sliced_or_chunked() -> None:
    """32-bit-offset strings are hashed from Arrow's buffers (offsets widened, no copy of the bytes):
    a slice (non-zero offset), a chunked column and large_string give the bits of the plain list."""
    keys = [f"key-{i:05d}-é" if i % 3 else f"k{i}" for i in range(40)]
    want = BloomFilter.create(1000, 1e-6, 1000, "SIMPLE")
    want.add_keys(keys[5:])
    for given in (pa.array(keys).slice(5), pa.chunked_array([pa.array(keys[5:20]), pa.array(keys[20:])]),
                  pa.array(keys[5:], pa.large_string())):
        got = BloomFilter.create(1000, 1e-6, 1000, "SIMPLE")
        got.add_keys(given)
        assert got.serialized() == want.serialized()


@pytest.mark.parametrize("type_code,max_entries", [("DYNAMIC_V0", 10**6), ("DYNAMIC_V0", 30), ("SIMPLE", 0)])
def test_prehashed_keys_set_the_same_bits_as_keys(type_code: str, max_entries: int) -> None:
    """A batched merge hashes its files' new keys once (`key_positions`) and hands each decoded filter
    its share: the filter must come out byte for byte as if it had hashed the keys itself, through row
    growth and past the bound's round robin."""
    from pyhudi.index.murmur import key_positions

    rng = random.Random(7)
    by_keys = BloomFilter.create(10, 1e-6, max_entries=max_entries, type_code=type_code)
    by_hash = BloomFilter.create(10, 1e-6, max_entries=max_entries, type_code=type_code)
    keys = _random_keys(rng, 90)
    i = 0
    while i < len(keys):
        batch = keys[i:i + rng.choice([1, 4, 9, 23])]
        by_keys.add_keys(batch)
        by_hash.add_hashed(key_positions(batch, by_hash.num_hashes, by_hash.vector_size))
        assert (by_hash.num_rows, by_hash.current_count) == (by_keys.num_rows, by_keys.current_count)
        assert by_hash.serialize() == by_keys.serialize()
        i += len(batch)
    with pytest.raises(ValueError):
        by_hash.add_hashed(np.zeros((by_hash.num_hashes + 1, 2), np.int64))


def test_extended_filter_takes_prehashed_keys_on_the_decode_path() -> None:
    """Too many new keys to patch in place: the decoded old filter takes the batch's hashes, and the
    result equals extending it with the keys."""
    from pyhudi.index.bloom_filter import FooterFilter, filter_shape
    from pyhudi.index.murmur import key_positions
    from pyhudi.io.base_file import ParquetSettings, extended_bloom

    settings = ParquetSettings()  # filters sized to the file's records
    old = [f"old-{i}" for i in range(2100)]
    new = pa.array([f"new-{i}" for i in range(1500)])
    footer = _footer_of(old, settings)
    bits, rounds = filter_shape(settings.bloom_entries(3600), settings.bloom_fpp)
    hashed = key_positions(new, rounds, bits)
    by_hash = extended_bloom(footer, new, settings, num_records=3600, hashed=hashed)
    by_keys = extended_bloom(footer, new, settings, num_records=3600)
    assert isinstance(by_hash, BloomFilter)  # the decode path, not a patch of the old text
    assert not isinstance(by_hash, FooterFilter)
    assert by_keys is not None and by_hash.serialize() == by_keys.serialize()
    assert by_hash.might_contain_many(old + new.to_pylist()).all()


@pytest.mark.parametrize("type_code", ["DYNAMIC_V0", "SIMPLE"])
def test_filters_filled_together_equal_filters_filled_one_at_a_time(type_code: str) -> None:
    """`create_filled` sets every file's bits in one pass into rows laid end to end; each filter must be
    the one `create` + `add_keys` make of its own run of keys (mixed lengths, multi-byte UTF-8, an empty
    run), and must go on growing alike (Hudi's row counter included) when more keys come."""
    rng = random.Random(11)
    counts = [1, 37, 0, 500, 1024, 3]
    keys = [f"{rng.choice(['k', 'é', '键', 'key-long-'])}{rng.getrandbits(40):x}" for _ in range(sum(counts))]
    made = BloomFilter.create_filled([1024] * len(counts), 1e-7, 5000, type_code, pa.array(keys), counts)
    lo = 0
    for got, n in zip(made, counts):
        want = BloomFilter.create(1024, 1e-7, 5000, type_code)
        want.add_keys(keys[lo:lo + n])
        lo += n
        assert (got.num_rows, got.current_count) == (want.num_rows, want.current_count)
        assert got.serialize() == want.serialize()
        more = [f"more-{i}" for i in range(1100)]  # past num_entries: a dynamic filter starts a row
        got.add_keys(more)
        want.add_keys(more)
        assert (got.num_rows, got.current_count) == (want.num_rows, want.current_count)
        assert got.serialize() == want.serialize()


def test_filters_filled_together_refuse_what_one_pass_cannot_build() -> None:
    with pytest.raises(ValueError, match="shapes"):
        BloomFilter.create_filled([128, 4096], 1e-9, 100000, "DYNAMIC_V0", pa.array(["a", "b"]), [1, 1])
    with pytest.raises(ValueError, match="first row"):  # 200 keys do not fit a 128-entry row
        BloomFilter.create_filled([128], 1e-9, 100000, "DYNAMIC_V0", pa.array([f"k{i}" for i in range(200)]),
                                  [200])
    with pytest.raises(ValueError, match="runs of"):
        BloomFilter.create_filled([128], 1e-9, 100000, "DYNAMIC_V0", pa.array(["a", "b"]), [1])


@pytest.mark.parametrize("sized", [True, False])
def test_fresh_filters_of_a_batch_equal_each_files_own(sized: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fresh_blooms` builds the files of one shape together: each footer equals `fresh_bloom` of that
    file's keys alone. Records-sized filters (two files sharing a shape, one alone, one empty); Hudi's
    fixed 60,000-entry filter, where a file of a few keys is patched into the empty filter's text."""
    from pyhudi.index.bloom_filter import FooterFilter
    from pyhudi.io.base_file import ParquetSettings, fresh_bloom, fresh_blooms

    settings = ParquetSettings(bloom_size_to_records=sized)
    counts = [131, 0, 132, 305, 3, 290]
    keys = pa.chunked_array([pa.array([f"f{f}-{i}" for f, n in enumerate(counts) for i in range(n)][:400]),
                             pa.array([f"f{f}-{i}" for f, n in enumerate(counts) for i in range(n)][400:])])
    at = np.concatenate([[0], np.cumsum(counts)])
    filled = spy_create_filled(monkeypatch)
    got = fresh_blooms(settings, keys, at, range(len(counts)))
    assert sorted(got) == [0, 2, 3, 4, 5]
    for i in got:
        assert got[i].footer_raw() == fresh_bloom(settings, keys.slice(at[i], counts[i])).footer_raw(), i
    if sized:
        assert sorted(filled) == [[3], [131, 132], [305, 290]]
    else:  # one shape; files of up to ~270 keys are patched into the empty filter's text instead
        assert filled == [[305, 290]]
        assert isinstance(got[0], FooterFilter) and isinstance(got[4], FooterFilter)
