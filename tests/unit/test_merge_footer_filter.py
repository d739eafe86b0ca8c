"""The merge handle's bloom filter patched in its footer text (bloom_filter.FooterFilter), the scalar
murmur path for a few keys, and the per-file shortcuts of a spread write (key cache total, small-file
reads, conform skipped), against the full decode/encode path and, end to end, against a model and
hudi-rs."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
import pyhudi.index.bloom_filter as bf
import pyhudi.index.murmur as mm
from pyhudi.errors import HudiError, InvalidRecordError
from pyhudi.index import key_cache
from pyhudi.index.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, BloomFilter, FooterFilter
from pyhudi.io.base_file import ParquetSettings, extended_bloom, footer_metadata, parallel_read, read_parquet
from pyhudi.storage import Storage
from tests.helpers import hudi_rs

# These tests pin Hudi's own filter shapes (every file sized for num_entries), whose bytes Hudi's writers
# produce; pyhudi's records-sized filters have tests of their own (test_bloom_sizing.py).
ANY_COUNT = 1  # the new file's record count: with Hudi's sizing it does not change the shape


def _hudi_sized(**kw: Any) -> Any:
    from pyhudi.io.base_file import ParquetSettings

    return ParquetSettings(bloom_size_to_records=False, **kw)


ODD = ["a", "é", "日本語", "🙂", "1.50", "1E-18", "-0.000", "/", "p=1/2", "0", "\x7f", "ÿ", " ", "x" * 300]


def _odd_keys(rng: random.Random, n: int, salt: str) -> list[str]:
    """Distinct adversarial keys: unicode (2-4 byte UTF-8, bytes >= 0x80 sign-extend in Java's tail),
    decimal-looking, slashes, very long, every tail length."""
    return [salt + "".join(rng.choice(ODD) for _ in range(rng.randint(0, 4))) + str(i) for i in range(n)]


def _footer(keys: list[str], settings: ParquetSettings) -> dict[bytes, bytes]:
    meta = footer_metadata(pa.table({"_hoodie_record_key": pa.array(keys, pa.string())}), "{}", settings)
    return {k.encode(): v.encode() for k, v in meta.items()}


def _decoded_extend(footer: dict[bytes, bytes], new: list[str], settings: ParquetSettings) -> str:
    """What extended_bloom produced before the text patch: decode, add, encode."""
    old = BloomFilter.deserialize(footer[FOOTER_KEY.encode()], footer.get(TYPE_CODE_KEY.encode()))
    old.set_max_entries(settings.bloom_max_entries)
    if new:
        old.add_keys(new)
    return old.serialize()


# --------------------------------------------------------------------------- FooterFilter
@pytest.mark.parametrize("seed", range(6))
def test_patched_text_is_byte_identical_to_decode_and_encode(seed: int) -> None:
    """Random shapes (tiny filters, whose base64 ends padded in the patched group, up to Hudi's 431 KB
    default), both types, adversarial keys: the patched footer equals the decoded-extended-encoded one
    byte for byte, and holds every key."""
    rng = random.Random(seed)
    patched = 0
    for _ in range(40):
        settings = _hudi_sized(bloom_num_entries=rng.choice([1, 2, 3, 5, 9, 64, 1000, 60000]),
                                   bloom_fpp=rng.choice([0.5, 0.1, 1e-4, 1e-9]),
                                   bloom_type=rng.choice(["DYNAMIC_V0", "SIMPLE", "dynamic_v0"]), bloom_max_entries=200)
        old = _odd_keys(rng, rng.choice([1, 2, 7, 33]), "o")
        new = _odd_keys(rng, rng.choice([0, 1, 3, 8, 9, 40]), "n")
        footer = _footer(old, settings)
        want = _decoded_extend(footer, new, settings)
        got = extended_bloom(footer, pa.array(new, pa.string()), settings, num_records=ANY_COUNT)  # whichever path pays
        assert got is not None
        assert got.serialize() == want
        back = BloomFilter.deserialize(got.serialize(), got.footer_metadata().get(TYPE_CODE_KEY))
        assert (back.type_code, back.vector_size, back.num_hashes) == (got.type_code, got.vector_size, got.num_hashes)
        assert back.might_contain_many(old + new).all()
        direct = FooterFilter.parse(footer[FOOTER_KEY.encode()], footer.get(TYPE_CODE_KEY.encode()))
        assert direct is not None
        if direct.fits(len(new)):  # the patch itself, also where it does not pay
            direct.add_keys(new)
            assert direct.serialize() == want
            patched += 1
    assert patched >= 20, "most of these merges fit the last row"


def test_filters_hudi_wrote_are_patched_like_decoded_ones() -> None:
    """The footers of the sample tables Hudi's Java writer produced: laid out as the patch expects (so
    merges into Hudi's files take it), canonical (copied verbatim = decoded and encoded again), and
    patched with unicode keys exactly as decoding, adding and encoding gives."""
    import glob
    import io
    import zipfile

    checked = 0
    for archive in sorted(glob.glob("tests/fixtures/samples/tables/*.zip")):
        with zipfile.ZipFile(archive) as zf:
            for name in (n for n in zf.namelist() if n.endswith(".parquet")):
                try:
                    meta = pq.ParquetFile(io.BytesIO(zf.read(name))).metadata.metadata or {}
                except pa.ArrowInvalid:
                    continue  # not a parquet file (a sample of a torn write)
                found = bf.footer_filter_text(meta)
                if found is None:
                    continue
                patched, full = FooterFilter.parse(*found), BloomFilter.deserialize(*found)
                assert patched is not None, name
                assert patched.serialize().encode() == found[0] == full.serialize().encode()
                assert patched.fits(2)
                patched.add_keys(["new-1", "ключ-🙂"])
                full.add_keys(["new-1", "ключ-🙂"])
                assert patched.serialize() == full.serialize()
                checked += 1
    assert checked >= 10


def test_no_new_key_copies_the_old_text_verbatim() -> None:
    """An update-only merge: the old footer value is the new one, unchanged (no decode, no encode)."""
    settings = _hudi_sized()
    footer = _footer([f"k{i}" for i in range(33)], settings)
    got = extended_bloom(footer, pa.array([], pa.string()), settings, num_records=ANY_COUNT)
    assert isinstance(got, FooterFilter)
    assert got.serialize().encode() == footer[FOOTER_KEY.encode()]
    assert got.footer_metadata() == {FOOTER_KEY: footer[FOOTER_KEY.encode()].decode(), TYPE_CODE_KEY: "DYNAMIC_V0"}


def test_keys_that_start_a_row_take_the_full_path() -> None:
    """A dynamic filter whose last row would overflow (Hudi starts a row) is decoded and extended:
    same rows as Hudi's, not a patch."""
    settings = _hudi_sized(bloom_num_entries=10, bloom_fpp=1e-3, bloom_max_entries=100)
    old = [f"k{i}" for i in range(8)]
    footer = _footer(old, settings)
    parsed = FooterFilter.parse(footer[FOOTER_KEY.encode()], footer[TYPE_CODE_KEY.encode()])
    assert parsed is not None and parsed.fits(2) and not parsed.fits(3)
    got = extended_bloom(footer, pa.array(["n1", "n2", "n3"]), settings, num_records=ANY_COUNT)
    assert isinstance(got, BloomFilter) and got.num_rows == 2
    assert got.serialize() == _decoded_extend(footer, ["n1", "n2", "n3"], settings)
    fitting = FooterFilter.parse(footer[FOOTER_KEY.encode()], footer[TYPE_CODE_KEY.encode()])
    assert fitting is not None
    fitting.add_keys(["n1", "n2"])
    assert (fitting.num_rows, fitting.current_count) == (1, 10)
    assert fitting.serialize() == _decoded_extend(footer, ["n1", "n2"], settings)
    with pytest.raises(HudiError, match=r"3 keys do not fit .*\(10 of 10 entries used\)"):
        fitting.add_keys(["n3", "n4", "n5"])


def test_patch_is_taken_only_where_it_pays() -> None:
    """Hudi's default shape: a top-up of a few keys is patched, a thousand-key top-up (where decoding
    is cheaper) is not; both give the same text. A fresh filter of a few keys comes from the patched
    empty text, of many from the whole-filter path, with the same text as BloomFilter builds."""
    from pyhudi.io.base_file import fresh_bloom

    settings = _hudi_sized()
    footer = _footer([f"k{i}" for i in range(33)], settings)
    for n, patched in ((3, True), (200, True), (3000, False)):
        new = [f"n{i}" for i in range(n)]
        got = extended_bloom(footer, pa.array(new), settings, num_records=ANY_COUNT)
        assert isinstance(got, FooterFilter) is patched, n
        assert got is not None and got.serialize() == _decoded_extend(footer, new, settings)
    for n, patched in ((5, True), (2000, False)):
        keys = pa.array(_odd_keys(random.Random(n), n, "f"))
        fresh = fresh_bloom(settings, keys)
        assert isinstance(fresh, FooterFilter) is patched, n
        built = BloomFilter.create()
        built.add_keys(keys)
        assert fresh.serialize() == built.serialize()


def test_damaged_or_foreign_texts_are_not_patched() -> None:
    """Texts not laid out as Hudi writes them are left to the full decode, which rebuilds (None) or
    reads them; the patch never guesses."""
    settings = _hudi_sized(bloom_num_entries=50, bloom_fpp=1e-3)
    footer = _footer(["a", "b"], settings)
    text = footer[FOOTER_KEY.encode()]
    code = footer[TYPE_CODE_KEY.encode()]
    raw = bytearray(BloomFilter.deserialize(text, code).serialize().encode())
    import base64
    decoded = bytearray(base64.b64decode(text))
    bad_row = bytearray(decoded)
    bad_row[25 + 4] ^= 1  # the row header's hash count differs from the filter's
    for damaged in (text[:-4], text[:-1], text.rstrip(b"="), b"!!not base64" + text[12:],
                    base64.b64encode(bytes(bad_row)), base64.b64encode(bytes(decoded) + b"\0")):
        assert FooterFilter.parse(damaged, code) is None, damaged[:40]
    assert FooterFilter.parse(text, "BLOOMY") is None
    assert FooterFilter.parse(text, None) is None  # read as SIMPLE: the layout does not match
    assert FooterFilter.parse(bytes(raw), code) is not None
    assert extended_bloom({FOOTER_KEY.encode(): b"!!not base64"}, pa.array(["c"]), settings, num_records=ANY_COUNT) is None
    changed = _hudi_sized(bloom_num_entries=50, bloom_fpp=1e-4)
    assert extended_bloom(footer, pa.array(["c"]), changed, num_records=ANY_COUNT) is None  # a changed config is rebuilt


@pytest.mark.parametrize("seed", range(3))
def test_probe_on_the_text_answers_as_the_decoded_filter(seed: int) -> None:
    """The BLOOM index's probe of a few keys (groups decoded on demand) and of many (decoded once) says
    exactly what the decoded filter says, for stored and absent keys, multi-row and SIMPLE filters."""
    rng = random.Random(seed)
    for _ in range(20):
        entries = rng.choice([1, 2, 3, 10, 100, 60000])
        built = BloomFilter.create(entries, rng.choice([0.5, 1e-3, 1e-9]), entries * 4,
                                   rng.choice(["DYNAMIC_V0", "SIMPLE"]))
        stored = _odd_keys(rng, rng.choice([1, 5, 30, 200]), "s")
        built.add_keys(stored)
        text = FooterFilter.parse(built.serialize(), built.type_code)
        assert text is not None and text.num_rows == built.num_rows
        for probe in (stored[:3] + _odd_keys(rng, 5, "a"), stored + _odd_keys(rng, 1200, "b")):
            assert (text.might_contain_many(probe) == built.might_contain_many(probe)).all()
    meta = {k.encode(): v.encode() for k, v in built.footer_metadata().items()}
    assert isinstance(bf.footer_probe(meta), FooterFilter)
    assert bf.footer_probe({}) is None
    with pytest.raises(HudiError):
        bf.footer_probe({FOOTER_KEY.encode(): b"!!not base64", TYPE_CODE_KEY.encode(): b"DYNAMIC_V0"})


def test_damaged_group_is_reported_not_misread() -> None:
    """A character outside base64 inside the groups a probe or patch reads: CorruptFileError (probe), and
    the merge falls back to rebuilding the filter (None) instead of copying the damage on."""
    settings = _hudi_sized()
    footer = _footer(["a", "b"], settings)
    text = bytearray(footer[FOOTER_KEY.encode()])
    key = "k-1"
    parsed = FooterFilter.parse(bytes(text), "DYNAMIC_V0")
    assert parsed is not None
    data, offsets = mm.utf8_columns([key])
    pos = mm._scalar_positions(data, offsets, parsed.num_hashes, parsed.vector_size)[0, 0]
    char = 4 * ((parsed._rows_at[-1] * 8 + int(pos)) // 24)
    text[char] = ord("!")
    damaged = FooterFilter.parse(bytes(text), "DYNAMIC_V0")
    assert damaged is not None  # the layout is intact; the damage is inside
    with pytest.raises(HudiError, match="not valid base64"):
        damaged.might_contain_many([key])
    assert extended_bloom({FOOTER_KEY.encode(): bytes(text), TYPE_CODE_KEY.encode(): b"DYNAMIC_V0"},
                          pa.array([key]), settings, num_records=ANY_COUNT) is None


def test_empty_and_null_keys_are_rejected_as_hudi_does() -> None:
    settings = _hudi_sized()
    footer = _footer(["a"], settings)
    with pytest.raises(InvalidRecordError):
        extended_bloom(footer, pa.array([""]), settings, num_records=ANY_COUNT)
    with pytest.raises(InvalidRecordError):
        extended_bloom(footer, pa.array(["b", None], pa.string()), settings, num_records=ANY_COUNT)
    assert issubclass(InvalidRecordError, HudiError)


# --------------------------------------------------------------------------- scalar murmur
@pytest.mark.parametrize("seed", range(4))
def test_scalar_hash_equals_vectorised(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain-Python rounds used for a few keys give the numpy path's bit positions (tails of 0-3
    signed bytes, keys of many lengths, tiny and huge vectors)."""
    rng = random.Random(seed)
    for _ in range(60):
        keys = _odd_keys(rng, rng.randint(1, mm._SCALAR_MAX_KEYS), "")
        data, offsets = mm.utf8_columns(keys)
        nh, vs = rng.choice([1, 2, 30]), rng.choice([1, 7, 4096, 3_450_000, 2**31 - 1])
        scalar = mm._scalar_positions(data, offsets, nh, vs)
        monkeypatch.setattr(mm, "_SCALAR_MAX_KEYS", 0)
        vec = np.empty_like(scalar)
        for idx, pos in mm.hash_positions(data, offsets, nh, vs):
            vec[:, idx] = pos
        monkeypatch.setattr(mm, "_SCALAR_MAX_KEYS", 8)
        assert (scalar == vec).all(), keys


def test_few_and_many_keys_build_the_same_filter() -> None:
    """A filter built key by key in small batches (scalar path) equals one built in one batch."""
    keys = _odd_keys(random.Random(9), 50, "k")
    one, many = BloomFilter.create(100, 1e-6), BloomFilter.create(100, 1e-6)
    one.add_keys(keys)
    for i in range(0, 50, 3):
        many.add_keys(keys[i:i + 3])
    assert one.serialize() == many.serialize()
    assert one.might_contain_many(keys[:2]).all() and one.might_contain_many(keys).all()


# --------------------------------------------------------------------------- key cache, reads
def test_key_cache_keeps_a_running_total(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = key_cache.KeyCache()
    arrays = [pa.array([f"k{i}-{j}" for j in range(i + 1)]) for i in range(20)]
    for i, a in enumerate(arrays):
        cache.put(f"f{i % 7}", a)  # re-puts replace: the total must not count the old column
        assert cache.nbytes == sum(v.nbytes for v in cache.values())
    budget = cache.nbytes // 2
    cache.evict_to(budget)
    assert cache.nbytes == sum(v.nbytes for v in cache.values()) <= budget or len(cache) == 1
    cache.evict_to(0)
    assert len(cache) == 1 and cache.nbytes == next(iter(cache.values())).nbytes
    cache.clear()
    assert cache.nbytes == 0 and not cache


def test_small_local_files_are_read_without_thread_pools(tmp_path) -> None:
    table = pa.table({"_hoodie_record_key": ["b", "a"], "v": [1, 2]})
    pq.write_table(table, tmp_path / "f.parquet")
    storage = Storage(str(tmp_path))
    with storage.open_input_file("f.parquet") as f:
        assert parallel_read(storage, f) is False
    assert read_parquet(storage, "f.parquet").equals(table)
    assert read_parquet(storage, "f.parquet", columns=["v"]).column(0).to_pylist() == [1, 2]


def test_local_files_from_two_megabytes_are_read_with_thread_pools(tmp_path) -> None:
    """A merge's old base file of a few MB reads ~1.5-1.8x faster with Arrow's pools on an idle core."""
    rng = np.random.default_rng(7)
    table = pa.table({"_hoodie_record_key": [f"k{i:07d}" for i in range(300_000)], "v": rng.random(300_000)})
    pq.write_table(table, tmp_path / "big.parquet", compression="none")
    storage = Storage(str(tmp_path))
    with storage.open_input_file("big.parquet") as f:
        assert f.size() > 2 * 1024 * 1024
        assert parallel_read(storage, f) is True
        assert not parallel_read(storage, pa.PythonFile(f))  # never a Python file object (object stores)
    assert read_parquet(storage, "big.parquet").equals(table)


# --------------------------------------------------------------------------- end to end
def _opts(entries: int, fpp: float, sized: bool) -> dict[str, str]:
    return {"hoodie.pyhudi.index.bloom.size.to.records": str(sized).lower(), "hoodie.table.name": "ff", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": "COPY_ON_WRITE", "hoodie.index.type": "BLOOM",
            "hoodie.index.bloom.num_entries": str(entries), "hoodie.index.bloom.fpp": str(fpp)}


SCHEMA = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()), ("v", pa.float64())])


def _batch(rows: list[tuple[str, str, int, float | None]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)


def _check_footers(path: str, model: dict[str, tuple[str, int, float | None]], entries: int, fpp: float,
                   sized: bool) -> None:
    """Every latest base file's filter (read back from its footer) holds every key the file holds and
    has the configured shape (num_entries, or sized to the file's records); the table as hudi-rs reads it
    is the model."""
    table = hudi_rs(path)
    got = {} if table is None else {r["id"]: (r["part"], r["ts"], r["v"]) for r in
                                     table.select(["id", "part", "ts", "v"]).to_pylist()}
    assert got == model
    settings = ParquetSettings(bloom_num_entries=entries, bloom_fpp=fpp, bloom_size_to_records=sized)
    files = {} if table is None else dict.fromkeys(table.column("_hoodie_file_name").to_pylist())
    parts = {} if table is None else dict(zip(table.column("_hoodie_file_name").to_pylist(),
                                              table.column("_hoodie_partition_path").to_pylist()))
    assert files
    for name in files:
        pf = pq.ParquetFile(f"{path}/{parts[name]}/{name}")
        filt = bf.read_footer_filter(pf.metadata.metadata)
        shape = bf.filter_shape(settings.bloom_entries(pf.metadata.num_rows), fpp)
        assert filt is not None and (filt.type_code, filt.vector_size, filt.num_hashes) == ("DYNAMIC_V0", *shape)
        keys = pf.read(columns=["_hoodie_record_key"]).column(0)
        assert filt.might_contain_many(keys).all(), name


@pytest.mark.parametrize("entries,fpp,sized", [(60000, 1e-9, False), (60000, 1e-9, True), (40, 0.001, True)])
def test_spread_upserts_keep_every_key_in_the_footer_filters(tmp_path, entries: int, fpp: float, sized: bool
                                                             ) -> None:
    """Update-only merges (verbatim footer), top-ups (patched at Hudi's default shape, decoded for a
    small filter), a top-up that starts a row (40 entries), deletes, nulls, unicode / decimal-looking keys
    and partition values with '/' and digits; an empty batch changes nothing. Read back with hudi-rs
    against a model, footers checked file by file."""
    path = str(tmp_path / "t")
    rng = random.Random(4)
    parts = ["2024/01", "7", "é/ü", "p 1"]
    model: dict[str, tuple[str, int, float | None]] = {}

    def write(rows: list[tuple[str, str, int, float | None]], op: str = "upsert") -> None:
        pyhudi.write(_batch(rows), path, {**_opts(entries, fpp, sized), "hoodie.datasource.write.operation": op})
        for key, part, ts, v in rows:
            if op == "delete":
                model.pop(key, None)
            elif key not in model or model[key][1] <= ts:
                model[key] = (part, ts, v)

    first = [(k, parts[i % 4], 1, float(i) if i % 5 else None) for i, k in enumerate(_odd_keys(rng, 40, "k"))]
    write(first, "insert")
    _check_footers(path, model, entries, fpp, sized)
    write([(k, p, 2, 2.5) for k, p, _, _ in first[::3]])  # update-only
    _check_footers(path, model, entries, fpp, sized)
    write([(k, p, 3, None) for k, p, _, _ in first[1::4]] + [(f"{Decimal('1.50') + i}", parts[i % 4], 3, 3.0)
                                                                for i in range(6)])  # updates + inserts
    _check_footers(path, model, entries, fpp, sized)
    write([(f"grow-{i}", parts[0], 4, 4.0) for i in range(30)])  # overflows a 40-entry row: a new row
    _check_footers(path, model, entries, fpp, sized)
    write([(k, p, 5, None) for k, p, _, _ in first[2::5]], "delete")
    _check_footers(path, model, entries, fpp, sized)
    write([])  # an empty batch
    _check_footers(path, model, entries, fpp, sized)


def test_patched_text_is_copied_only_when_a_key_is_added() -> None:
    """A merge that inserts no key hands the old footer's bytes to the writer as they were read (no copy of
    the ~431 KB text); the first key added patches a copy, never the parsed bytes (the cached empty filter
    every fresh file starts from is parsed the same way)."""
    settings = _hudi_sized()
    footer = _footer(["a", "b"], settings)
    text = footer[FOOTER_KEY.encode()]
    same = extended_bloom(footer, pa.array([], pa.string()), settings, num_records=ANY_COUNT)
    assert isinstance(same, FooterFilter)
    assert same.footer_raw()[FOOTER_KEY.encode()] is text
    grown = extended_bloom(footer, pa.array(["c"], pa.string()), settings, num_records=ANY_COUNT)
    assert isinstance(grown, FooterFilter)
    assert footer[FOOTER_KEY.encode()] == text and bytes(grown.footer_raw()[FOOTER_KEY.encode()]) != text
    assert grown.might_contain_many(["a", "c"]).all()
    assert not FooterFilter.parse(text, "DYNAMIC_V0").might_contain_many(["c"]).any()  # type: ignore[union-attr]
    assert grown.serialize() == _decoded_extend(footer, ["c"], settings)
