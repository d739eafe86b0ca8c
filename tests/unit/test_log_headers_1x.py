"""Log block header keys of Hudi 1.x (table versions 8/9): `HeaderMetadataType` ordinals 0-8.

Blocks are built with pyhudi's own block writers plus the extra header entries Hudi 1.x writes:
`RECORD_POSITIONS` / `BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS` and `BLOCK_IDENTIFIER` are hints a
key-based merge ignores (same rows with and without them), `COMPACTED_BLOCK_TIMES` is parsed,
`IS_PARTIAL=true` (a block of partial updates) is refused when decoded, and a key ordinal Hudi 1.x does
not define is refused instead of the block being skipped as corrupt.
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.errors import UnsupportedTableError
from pyhudi.io import schema as S
from pyhudi.io.log_blocks import (
    avro_block_to_arrow,
    decode_delete_block,
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
    encode_rollback_block,
    parquet_block_to_arrow,
)
from pyhudi.io.log_format import (
    BlockType,
    CorruptBlock,
    HeaderKey,
    LogBlock,
    build_log_file,
    encode_block,
    encode_metadata,
    read_blocks,
)
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice
from pyhudi.storage import Storage

AVRO = S.to_json(S.with_meta_fields({
    "type": "record", "name": "t_record", "namespace": "hoodie.t",
    "fields": [{"name": "id", "type": ["null", "string"], "default": None},
               {"name": "name", "type": ["null", "string"], "default": None},
               {"name": "ts", "type": ["null", "long"], "default": None}]}))
ARROW = S.avro_to_arrow(S.from_json(AVRO))
PARTIAL_AVRO = S.to_json(S.with_meta_fields({
    "type": "record", "name": "t_record", "namespace": "hoodie.t",
    "fields": [{"name": "id", "type": ["null", "string"], "default": None},
               {"name": "ts", "type": ["null", "long"], "default": None}]}))
FID = "0b4c3d2e-1111-2222-3333-444455556666-0"
BASE = f"{FID}_0-1-1_20250101000000001.parquet"
LOG = f".{FID}_20250101000000001.log.1_0-2-2"
WHERE = f"part/{LOG}"


def rows(instant: str, values: list[tuple[str, str, int]]) -> pa.Table:
    """Records with meta fields, as a writer stores them."""
    return pa.Table.from_pylist([
        {"_hoodie_commit_time": instant, "_hoodie_commit_seqno": f"{instant}_0_{i}", "_hoodie_record_key": k,
         "_hoodie_partition_path": "", "_hoodie_file_name": BASE, "id": k, "name": n, "ts": t}
        for i, (k, n, t) in enumerate(values)], schema=ARROW)


def roaring64_portable(positions: list[int]) -> str:
    """`LogReaderUtils.encodePositions` of small positions: a portable Roaring64 bitmap (one high bucket
    holding one array container), base64 encoded. Only its shape matters here: readers ignore it."""
    values = sorted(positions)
    bitmap32 = struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, len(values) - 1) + struct.pack("<I", 16)
    bitmap32 += struct.pack(f"<{len(values)}H", *values)
    return base64.b64encode(struct.pack("<QI", 1, 0) + bitmap32).decode()


HINTS = {
    HeaderKey.RECORD_POSITIONS: roaring64_portable([0, 2]),
    HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: "20250101000000001",
    HeaderKey.BLOCK_IDENTIFIER: "0,0",
}


def only_block(data: bytes, where: str = WHERE) -> LogBlock:
    (block,) = read_blocks(data, where=where)
    assert isinstance(block, LogBlock), block
    return block


# ----------------------------------------------------------------------------- every known key parses

@pytest.mark.parametrize("key", list(HeaderKey), ids=lambda k: k.name)
def test_every_1x_key_parses_and_keeps_its_value(key: HeaderKey) -> None:
    values = {**HINTS, HeaderKey.COMPACTED_BLOCK_TIMES: "20250101000000002,20250101000000003",
              HeaderKey.IS_PARTIAL: "false", HeaderKey.TARGET_INSTANT_TIME: "20250101000000000",
              HeaderKey.COMMAND_BLOCK_TYPE: "0", HeaderKey.INSTANT_TIME: "20250101000000009", HeaderKey.SCHEMA: AVRO}
    data = encode_avro_data_block(rows("20250101000000009", [("k1", "a", 1)]), AVRO, "20250101000000009",
                                  extra_header={key: values[key]})
    block = only_block(data)
    assert block.header[key] == values[key] and block.source == WHERE
    assert avro_block_to_arrow(block).column("id").to_pylist() == ["k1"]


def test_compacted_block_times_and_partial_flag_accessors() -> None:
    header = {HeaderKey.INSTANT_TIME: "20250101000000005", HeaderKey.COMPACTED_BLOCK_TIMES: "001, 002,,003"}
    block = only_block(encode_block(BlockType.AVRO_DATA_BLOCK, header, b""))
    assert block.compacted_instants == ("001", "002", "003") and not block.is_partial
    for value, partial in (("true", True), ("TRUE", True), ("false", False), ("yes", False), ("", False)):
        flagged = only_block(encode_block(BlockType.AVRO_DATA_BLOCK, {HeaderKey.IS_PARTIAL: value}, b""))
        assert flagged.is_partial is partial, value  # Java's Boolean.parseBoolean


def test_delete_block_with_hints_decodes() -> None:
    data = encode_delete_block([("k1", "", 5)], "20250101000000003", AVRO, extra_header=HINTS)
    block = only_block(data)
    assert block.header[HeaderKey.RECORD_POSITIONS] == HINTS[HeaderKey.RECORD_POSITIONS]
    assert decode_delete_block(block) == [("k1", "", 5)]


# ----------------------------------------------------------------------------- hints leave the merge as it was

def write_slice(root: Path, log_blocks: list[bytes]) -> Storage:
    (root / "part").mkdir(parents=True, exist_ok=True)
    pq.write_table(rows("20250101000000001", [("k1", "a", 1), ("k2", "b", 1), ("k3", "c", 1)]), root / "part" / BASE)
    (root / "part" / LOG).write_bytes(build_log_file(log_blocks))
    return Storage(str(root))


def merged(storage: Storage) -> list[dict]:
    spec = MergeSpec(committed=frozenset({"20250101000000001", "20250101000000002", "20250101000000003"}),
                     as_of=None, event_time_field=None, target_schema=ARROW)
    table, _ = merge_file_slice(storage, FID, f"part/{BASE}", [WHERE], spec)
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def test_position_and_identifier_hints_do_not_change_the_merge(tmp_path: Path) -> None:
    """Hudi merges by position only as an optimisation (J:LogReaderUtils, the file group reader's
    position-based buffer falls back to keys): merging by key must give the same rows with or without the
    hints, on Avro, parquet and delete blocks alike."""
    update = rows("20250101000000002", [("k2", "b2", 2), ("k4", "d", 2)])

    def blocks(extra: dict[HeaderKey, str]) -> list[bytes]:
        return [encode_avro_data_block(update, AVRO, "20250101000000002", extra_header=extra),
                encode_parquet_data_block(rows("20250101000000002", [("k3", "c2", 2)]), AVRO, "20250101000000002",
                                          extra_header=extra),
                encode_delete_block([("k1", "", None)], "20250101000000003", AVRO, extra_header=extra)]

    plain = merged(write_slice(tmp_path / "plain", blocks({})))
    hinted = merged(write_slice(tmp_path / "hinted", blocks(HINTS)))
    assert hinted == plain
    assert [(r["id"], r["name"]) for r in plain] == [("k2", "b2"), ("k3", "c2"), ("k4", "d")]


# ----------------------------------------------------------------------------- IS_PARTIAL is refused

def partial_blocks(flag: str = "true") -> list[bytes]:
    update = pa.Table.from_pylist([{"_hoodie_commit_time": "20250101000000002", "_hoodie_commit_seqno": "x",
                                    "_hoodie_record_key": "k1", "_hoodie_partition_path": "",
                                    "_hoodie_file_name": BASE, "id": "k1", "ts": 9}])
    header = {HeaderKey.IS_PARTIAL: flag}
    return [encode_avro_data_block(update, PARTIAL_AVRO, "20250101000000002", extra_header=header),
            encode_parquet_data_block(update, PARTIAL_AVRO, "20250101000000002", extra_header=header)]


@pytest.mark.parametrize("index", [0, 1], ids=["avro", "parquet"])
def test_partial_block_is_refused_naming_file_header_and_fix(index: int) -> None:
    block = only_block(partial_blocks()[index])
    decode = avro_block_to_arrow if block.block_type == BlockType.AVRO_DATA_BLOCK else parquet_block_to_arrow
    with pytest.raises(UnsupportedTableError) as err:
        decode(block)
    text = str(err.value)
    assert WHERE in text and "IS_PARTIAL=true" in text and "['id', 'ts']" in text
    assert "20250101000000002" in text and "hoodie.spark.sql.merge.into.partial.updates=false" in text
    assert "Compact the file group with Apache Hudi" in text


def test_partial_false_reads_as_a_full_block() -> None:
    avro, parquet = (only_block(b) for b in partial_blocks("false"))
    assert avro_block_to_arrow(avro).column("ts").to_pylist() == [9]
    assert parquet_block_to_arrow(parquet).column("ts").to_pylist() == [9]


def test_merge_refuses_a_visible_partial_block_only(tmp_path: Path) -> None:
    """The merge decodes every visible data block, so a partial one stops it; a rolled-back partial block
    is never decoded and the slice still reads."""
    with pytest.raises(UnsupportedTableError, match="IS_PARTIAL=true"):
        merged(write_slice(tmp_path / "visible", partial_blocks()[:1]))
    rolled_back = [*partial_blocks()[:1], encode_rollback_block("20250101000000003", "20250101000000002")]
    assert [r["name"] for r in merged(write_slice(tmp_path / "rolled_back", rolled_back))] == ["a", "b", "c"]


# ----------------------------------------------------------------------------- unknown key ordinals

def block_with_raw_key(ordinal: int, in_footer: bool = False) -> bytes:
    """A well-framed block whose header (or footer) has one entry of key `ordinal`."""
    entries = {ordinal: "x"}  # encode_metadata writes int(key)
    plain = {HeaderKey.INSTANT_TIME: "20250101000000002"}
    if in_footer:
        return encode_block(BlockType.AVRO_DATA_BLOCK, plain, b"", footer=entries)  # type: ignore[arg-type]
    return encode_block(BlockType.AVRO_DATA_BLOCK, entries, b"")  # type: ignore[arg-type]


@pytest.mark.parametrize("in_footer", [False, True], ids=["header", "footer"])
def test_unknown_key_is_refused_not_skipped(in_footer: bool) -> None:
    data = build_log_file([encode_rollback_block("20250101000000001", "20250101000000000"),
                           block_with_raw_key(9, in_footer)])
    with pytest.raises(UnsupportedTableError) as err:
        read_blocks(data, where=WHERE)
    text = str(err.value)
    assert WHERE in text and "header key 9" in text and "8 BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS" in text
    assert "offset" in text and "Apache Hudi" in text


def test_negative_key_ordinal_is_damage() -> None:
    """No writer produces a negative ordinal: the block is corrupt (skipped, as Hudi skips corrupt
    blocks), the blocks around it still read."""
    good = encode_rollback_block("20250101000000001", "20250101000000000")
    data = build_log_file([good, block_with_raw_key(-1), good])
    assert [type(b) for b in read_blocks(data, where=WHERE)] == [LogBlock, CorruptBlock, LogBlock]


def test_encode_metadata_layout_for_new_keys() -> None:
    """Header maps are int32 count, then int32 ordinal, int32 length, UTF-8 value per entry."""
    raw = encode_metadata({HeaderKey.IS_PARTIAL: "true"})
    assert raw == struct.pack(">iii", 1, 7, 4) + b"true"


def test_delete_block_with_an_unknown_ordering_type_is_refused_not_skipped() -> None:
    """Hudi 1.1 adds ArrayWrapper ordering values (several ordering fields) to HoodieDeleteRecord's union; a
    block using a union branch pyhudi does not know must stop the read: skipped, its deletes would be lost."""
    from pyhudi.model.avro_models import _zigzag_long as zigzag

    def text(s: str) -> bytes:
        return zigzag(len(s.encode())) + s.encode()

    record = zigzag(1) + text("k1") + zigzag(1) + text("") + zigzag(40) + zigzag(7)  # branch 40: unknown
    payload = zigzag(1) + record + zigzag(0)  # an array of one record
    content = struct.pack(">ii", 3, len(payload)) + payload
    block = only_block(encode_block(BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: "20250101000000003"}, content))
    with pytest.raises(UnsupportedTableError, match="delete block cannot be decoded.*ArrayWrapper"):
        decode_delete_block(block)
