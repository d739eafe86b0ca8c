"""Hudi log file framing (log format version 1: table version 6, and 8/9 of Hudi 1.x alike).

A log file is a plain concatenation of blocks. Each block is::

    "#HUDI#" | int64 block length | int32 format version | int32 block type
    | header map | int64 content length | content | footer map | int64 total size

All integers are big-endian. The block length counts the bytes after its own
field up to and including the trailing total size; the trailing total size
counts everything from the magic through the footer (so it equals
``block length + 6``). Maps are ``int32 count`` then, per entry, ``int32 key
ordinal, int32 value length, UTF-8 value``. See ``hudi-v6-format.md`` §9.

This module only knows the framing. Block *contents* (Avro records, parquet
files, delete records) are in :mod:`pyhudi.io.log_blocks`; the codec names are
also reachable from here for convenience.

The reader follows Hudi's ``HoodieLogFileReader`` rules so that pyhudi sees
exactly the blocks Hudi sees:

* a block is valid only when its length field stays inside the file and the
  trailing size field agrees with it (``trailer - 6 == length``); pyhudi also
  requires the inner fields to end exactly at the trailer;
* anything else becomes a :class:`CorruptBlock` spanning from its magic to the
  next ``#HUDI#`` (or EOF), and reading resumes there.

One deliberate, optional difference: Hudi also rejects a block when the 6
bytes after it are neither a magic nor EOF. A crashed writer cannot produce
that (a torn block starts with a magic or a prefix of one), only foreign
damage can, and the block itself has been fully verified; so by default pyhudi
keeps such a block and reports the junk after it as a corrupt range. Pass
``require_following_magic=True`` to reproduce Hudi's verdict exactly.

So a writer that crashed mid-block leaves a torn tail that reads as one
corrupt block; every complete block before it is still returned. Nothing here
raises on bad bytes.

What is refused instead of skipped: a block whose framing is intact (length
and trailer agree) but whose format version or block type pyhudi does not know
(a newer writer's block). Skipping it as corrupt would silently drop records,
so ``UnsupportedTableError`` names the file (``where``), offset and value. Hudi
0.14 also fails on an unknown type (``tryReadBlockType``'s check); it reads an
unknown higher version as version 1, where pyhudi refuses (deliberately). A
header or footer key ordinal beyond the nine Hudi 1.x defines is refused the
same way (Hudi 1.x fails on it too); what each known key means to pyhudi is in
:class:`HeaderKey`.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, BinaryIO, Protocol

from pyhudi.errors import UnsupportedTableError
from pyhudi.model.file_names import LogFileName as _LogFileName

MAGIC = b"#HUDI#"
"""Sync marker at the start of every block; the reader resynchronises on it."""

LOG_FORMAT_VERSION = 1
"""Format version written by Hudi 0.14/0.15 (``HoodieLogFormat.CURRENT_VERSION``)."""

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

# Fixed bytes of a v1 block besides header/content/footer:
# version + type + content length + trailer.
_V1_FIXED = 4 + 4 + 8 + 8
# Smallest possible v1 block length: fixed part plus two empty maps.
_V1_MIN_LENGTH = _V1_FIXED + 4 + 4
_SCAN_CHUNK = 1 << 20


class BlockType(IntEnum):
    """``HoodieLogBlockType``: the zero-based ordinal is what goes on disk."""

    COMMAND_BLOCK = 0
    DELETE_BLOCK = 1
    CORRUPT_BLOCK = 2
    AVRO_DATA_BLOCK = 3
    HFILE_DATA_BLOCK = 4
    PARQUET_DATA_BLOCK = 5
    CDC_DATA_BLOCK = 6


class HeaderKey(IntEnum):
    """``HeaderMetadataType``: key ordinals of the header and footer maps.

    Hudi 1.0-1.2 know exactly these nine (J:HoodieLogBlock.HeaderMetadataType, each tagged with the
    earliest table version that writes it; hudi-rs ``BlockMetadataKey``). What pyhudi does with each:

    * 0-3 ``INSTANT_TIME``, ``TARGET_INSTANT_TIME``, ``SCHEMA``, ``COMMAND_BLOCK_TYPE``: read by the merge.
    * 4 ``COMPACTED_BLOCK_TIMES`` (log compaction's block: the instants it merged): exposed as
      ``LogBlock.compacted_instants``; Hudi's default scan (``scanInternalV1``, used unless
      ``hoodie.optimized.log.blocks.scan.enable``) does not read it either, only ``scanInternalV2`` does.
    * 5 ``RECORD_POSITIONS`` (base64 portable Roaring64 bitmap of base-file row positions) and
      8 ``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS`` (the base file they index): a hint for
      position-based merging, which Hudi uses only when the base instant matches and falls back to
      merging by record key otherwise (J:LogReaderUtils.decodeRecordPositionsHeader, the file group
      reader's position-based record buffer). Merging by key gives the same rows, so they are ignored.
    * 6 ``BLOCK_IDENTIFIER`` (``<task attempt>,<block seq>``): lets the unmerged reader drop blocks a
      retried task appended twice; the merged readers ignore it, and a duplicate block merges to the
      same rows by key.
    * 7 ``IS_PARTIAL``: ``"true"`` means ``SCHEMA`` lists only the updated columns (Spark SQL MERGE INTO
      on a MOR table of version 8+); the missing columns must be taken from the older record, which
      pyhudi's merge does not do, so decoding such a block raises (``log_blocks.check_full_records``).

    Any other ordinal in a well-framed block is a newer writer's key: refused (UnsupportedTableError
    naming the file), as Hudi 1.x fails on it too (``HeaderMetadataType.values()[ordinal]``).
    """

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


ROLLBACK_COMMAND = "0"
"""``COMMAND_BLOCK_TYPE`` value of a rollback (``HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK``)."""


@dataclass
class LogBlock:
    """One well-formed block as read from a log file.

    ``offset`` is where its magic starts and ``size`` the number of bytes it
    occupies (magic through trailer), so blocks and corrupt ranges tile the file.
    ``content`` is empty when the block was read with ``load_content=False``;
    ``content_offset``/``content_length`` still locate it in the file.
    """

    block_type: BlockType
    header: dict[HeaderKey, str]
    footer: dict[HeaderKey, str]
    content: bytes
    offset: int = 0
    size: int = 0
    format_version: int = LOG_FORMAT_VERSION
    content_offset: int = 0
    content_length: int = 0
    source: str = ""
    """The log file the block came from, when the reader knows it (for error messages)."""

    @property
    def instant_time(self) -> str | None:
        """Instant that wrote the block; readers drop blocks of uncommitted instants."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """For a rollback command block, the instant whose blocks are void."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """Writer Avro schema JSON of a data or delete block."""
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_partial(self) -> bool:
        """``IS_PARTIAL``: the block's records hold only the columns its SCHEMA lists (an update of some
        columns); Hudi parses the value with ``Boolean.parseBoolean``, so only "true" (any case) counts."""
        return (self.header.get(HeaderKey.IS_PARTIAL) or "").strip().lower() == "true"

    @property
    def compacted_instants(self) -> tuple[str, ...]:
        """``COMPACTED_BLOCK_TIMES``: the instants whose blocks a log compaction merged into this one."""
        raw = self.header.get(HeaderKey.COMPACTED_BLOCK_TIMES) or ""
        return tuple(t.strip() for t in raw.split(",") if t.strip())

    @property
    def is_rollback(self) -> bool:
        """True for a command block that rolls back ``target_instant_time``."""
        return (
            self.block_type == BlockType.COMMAND_BLOCK
            and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
        )


@dataclass
class CorruptBlock:
    """A byte range the reader skipped (torn tail, bad length, missing magic).

    Hudi turns the same ranges into ``HoodieCorruptBlock`` and ignores them, so
    callers normally just skip these; ``reason`` is for logs and tests.
    """

    offset: int
    size: int
    reason: str
    block_type: BlockType = field(default=BlockType.CORRUPT_BLOCK, init=False)


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------


def encode_metadata(entries: Mapping[HeaderKey, str]) -> bytes:
    """Serialise a header/footer map, keeping the mapping's iteration order.

    Java writes a ``HashMap`` whose order is arbitrary (the samples show 0,2
    and 2,0 and 0,3,1); readers build a map, so any order is valid. Callers
    that want to reproduce a specific file byte-for-byte pass an ordered dict.
    """
    parts = [_I32.pack(len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        parts.append(_I32.pack(int(key)) + _I32.pack(len(raw)) + raw)
    return b"".join(parts)


def encode_block(
    block_type: BlockType,
    header: Mapping[HeaderKey, str],
    content: bytes,
    footer: Mapping[HeaderKey, str] | None = None,
) -> bytes:
    """Frame ``content`` as one complete v1 block, exactly as ``HoodieLogFormatWriter`` does."""
    head = encode_metadata(header)
    foot = encode_metadata(footer or {})
    body = b"".join(
        (
            _I32.pack(LOG_FORMAT_VERSION),
            _I32.pack(int(block_type)),
            head,
            _I64.pack(len(content)),
            content,
            foot,
        )
    )
    block_length = len(body) + 8  # everything after the length field, trailer included
    total_size = len(MAGIC) + 8 + len(body)  # everything before the trailer
    return MAGIC + _I64.pack(block_length) + body + _I64.pack(total_size)


def build_log_file(blocks: list[bytes]) -> bytes:
    """A log file is nothing but its blocks back to back."""
    return b"".join(blocks)


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------


class _Source(Protocol):
    """Random access to the log bytes, so bytes and open files share one parser."""

    size: int

    def read_at(self, offset: int, length: int) -> bytes: ...

    def find_magic(self, start: int) -> int: ...


class _BytesSource:
    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self._data = bytes(data)
        self.size = len(self._data)

    def read_at(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]

    def find_magic(self, start: int) -> int:
        pos = self._data.find(MAGIC, start)
        return self.size if pos < 0 else pos


class _FileSource:
    """Seekable binary file (``open(..., 'rb')``, ``io.BytesIO``, pyarrow ``NativeFile``)."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh
        fh.seek(0, io.SEEK_END)
        self.size = int(fh.tell())

    def read_at(self, offset: int, length: int) -> bytes:
        self._fh.seek(offset)
        return bytes(self._fh.read(max(0, min(length, self.size - offset))))

    def find_magic(self, start: int) -> int:
        pos = start
        while pos < self.size:
            chunk = self.read_at(pos, _SCAN_CHUNK)
            hit = chunk.find(MAGIC)
            if hit >= 0:
                return pos + hit
            if pos + len(chunk) >= self.size:
                break
            pos += len(chunk) - (len(MAGIC) - 1)  # overlap so a split magic is not missed
        return self.size


class _BadBlock(Exception):
    """Internal: the block at hand is not well formed; carries the reason."""


class _UnknownKey(Exception):
    """Internal: a header or footer entry has a key ordinal ``HeaderKey`` does not know."""

    def __init__(self, ordinal: int) -> None:
        super().__init__(ordinal)
        self.ordinal = ordinal


def _as_source(data: bytes | bytearray | memoryview | BinaryIO | Any) -> _Source:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return _BytesSource(data)
    return _FileSource(data)


def iter_blocks(
    data: bytes | bytearray | memoryview | BinaryIO | Any,
    *,
    load_content: bool = True,
    require_following_magic: bool = False,
    where: str = "",
) -> Iterator[LogBlock | CorruptBlock]:
    """Yield every block and every skipped range of a log file, in file order.

    ``data`` is the file's bytes or any seekable binary file object (including
    a pyarrow ``NativeFile``). With ``load_content=False`` block contents are
    not read, only located, which keeps memory flat for large parquet blocks.
    ``require_following_magic`` applies Hudi's extra "next 6 bytes must be a
    magic or EOF" rule (see the module docstring). ``where`` names the file in
    the error raised for a well-framed block of an unknown version or type.
    """
    src = _as_source(data)
    pos = 0
    while pos < src.size:
        magic = src.read_at(pos, len(MAGIC))
        if len(magic) < len(MAGIC):
            # Fewer than 6 bytes left: Hudi sees EOF here. Report the fragment.
            yield CorruptBlock(pos, src.size - pos, "truncated magic at end of file")
            return
        if magic != MAGIC:
            # Junk at the start of the file or right after a verified block; a
            # corrupt block always ends at the next magic, so not after one of those.
            nxt = src.find_magic(pos + 1)
            yield CorruptBlock(pos, nxt - pos, "no magic at block start")
            pos = nxt
            continue
        try:
            block = _read_block(src, pos, load_content, require_following_magic, where or "log file")
        except _BadBlock as exc:
            nxt = src.find_magic(pos + len(MAGIC))
            yield CorruptBlock(pos, nxt - pos, str(exc))
            pos = nxt
            continue
        if where:
            block.source = where  # so the content decoders can name the file in their errors
        yield block
        pos = block.offset + block.size


def read_blocks(
    data: bytes | bytearray | memoryview | BinaryIO | Any,
    *,
    load_content: bool = True,
    require_following_magic: bool = False,
    where: str = "",
) -> list[LogBlock | CorruptBlock]:
    """All blocks and corrupt ranges of a log file; see :func:`iter_blocks`."""
    return list(iter_blocks(data, load_content=load_content, require_following_magic=require_following_magic,
                            where=where))


def read_valid_blocks(data: bytes | bytearray | memoryview | BinaryIO | Any) -> list[LogBlock]:
    """Only the well-formed blocks, which is what a merging reader consumes."""
    return [b for b in iter_blocks(data) if isinstance(b, LogBlock)]


def read_block_content(data: bytes | bytearray | memoryview | BinaryIO | Any, block: LogBlock) -> bytes:
    """Load the content of a block that was located with ``load_content=False``."""
    if block.content or block.content_length == 0:
        return block.content
    return _as_source(data).read_at(block.content_offset, block.content_length)


def _read_block(src: _Source, start: int, load_content: bool, require_following_magic: bool,
                where: str = "log file") -> LogBlock:
    """Validate the framing of the block whose magic is at ``start`` and parse it."""
    after_magic = start + len(MAGIC)
    raw_len = src.read_at(after_magic, 8)
    if len(raw_len) < 8:
        raise _BadBlock("truncated block length")
    block_length = _I64.unpack(raw_len)[0]
    body_start = after_magic + 8
    end = body_start + block_length
    if block_length < 4 or end > src.size:
        raise _BadBlock(f"block length {block_length} runs past end of file ({src.size} bytes)")
    version = _I32.unpack(src.read_at(body_start, 4))[0]
    if require_following_magic:
        _check_followed_by_magic(src, end)
    if version == 0:
        return _read_legacy_block(src, start, body_start, end, load_content)
    trailer = _I64.unpack(src.read_at(end - 8, 8))[0] if block_length >= 12 else -1
    framed = trailer - len(MAGIC) == block_length
    if version != LOG_FORMAT_VERSION:
        if framed and version > LOG_FORMAT_VERSION:
            raise _unsupported(where, start, f"log format version {version}", f"pyhudi reads versions 0 and "
                               f"{LOG_FORMAT_VERSION}")
        raise _BadBlock(f"unsupported log format version {version}")
    if block_length < _V1_MIN_LENGTH:
        raise _BadBlock(f"block length {block_length} too small for a v1 block")
    if not framed:
        raise _BadBlock(f"trailing size {trailer} does not match block length {block_length}")
    return _parse_v1_body(src, start, body_start, end, load_content, where)


def _unsupported(where: str, start: int, what: str, known: str) -> UnsupportedTableError:
    return UnsupportedTableError(
        f"{where}: the log block at offset {start} has {what}, which pyhudi does not know ({known}); it was "
        "written by a newer Hudi or holds a feature pyhudi does not implement, so the file is refused rather "
        "than skipped (its records would be lost); read the table with Apache Hudi")


def _check_followed_by_magic(src: _Source, end: int) -> None:
    """Hudi only trusts a block when the next 6 bytes are a magic or past EOF."""
    following = src.read_at(end, len(MAGIC))
    if len(following) == len(MAGIC) and following != MAGIC:
        raise _BadBlock("block is not followed by a magic or end of file")


def _parse_v1_body(src: _Source, start: int, body_start: int, end: int, load_content: bool,
                   where: str = "log file") -> LogBlock:
    """Parse type, header, content and footer; every field must end exactly at ``end``."""
    cursor = _Cursor(src, body_start + 4, end - 8)
    type_ordinal = cursor.i32()
    try:
        block_type = BlockType(type_ordinal)
    except ValueError:
        known = ", ".join(f"{t.value} {t.name}" for t in BlockType)
        raise _unsupported(where, start, f"block type {type_ordinal}", f"types {known}") from None
    try:
        header = cursor.metadata()
        content_length = cursor.i64()
        content_offset = cursor.pos
        content = cursor.take(content_length) if load_content else cursor.skip(content_length)
        footer = cursor.metadata()
    except _UnknownKey as exc:  # framing verified: a newer writer's key, not damage
        known = ", ".join(f"{k.value} {k.name}" for k in HeaderKey)
        raise _unsupported(where, start, f"header key {exc.ordinal}", f"keys {known}") from None
    if cursor.pos != end - 8:
        raise _BadBlock(f"block fields end at {cursor.pos}, expected {end - 8}")
    return LogBlock(
        block_type=block_type,
        header=header,
        footer=footer,
        content=content,
        offset=start,
        size=end - start,
        format_version=LOG_FORMAT_VERSION,
        content_offset=content_offset,
        content_length=content_length,
    )


def _read_legacy_block(src: _Source, start: int, body_start: int, end: int, load_content: bool) -> LogBlock:
    """Best-effort version-0 block: no type, header, footer or trailer; content is the rest.

    Version 0 predates the block type field; its only block kind was an Avro
    data block with the schema inside the content (see
    :func:`pyhudi.io.log_blocks.decode_avro_data_block`). Without a trailer the
    only sanity check is that a magic or EOF follows.
    """
    _check_followed_by_magic(src, end)
    content_offset = body_start + 4
    length = end - content_offset
    return LogBlock(
        block_type=BlockType.AVRO_DATA_BLOCK,
        header={},
        footer={},
        content=src.read_at(content_offset, length) if load_content else b"",
        offset=start,
        size=end - start,
        format_version=0,
        content_offset=content_offset,
        content_length=length,
    )


class _Cursor:
    """Bounds-checked sequential reader over ``[pos, limit)`` of a source."""

    def __init__(self, src: _Source, pos: int, limit: int) -> None:
        self.src = src
        self.pos = pos
        self.limit = limit

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.limit:
            raise _BadBlock(f"field of {n} bytes at {self.pos} overruns the block")

    def take(self, n: int) -> bytes:
        self._need(n)
        out = self.src.read_at(self.pos, n)
        self.pos += n
        return out

    def skip(self, n: int) -> bytes:
        self._need(n)
        self.pos += n
        return b""

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self.take(8))[0])

    def metadata(self) -> dict[HeaderKey, str]:
        count = self.i32()
        if count < 0 or count * 8 > self.limit - self.pos:
            raise _BadBlock(f"implausible metadata entry count {count}")
        entries: dict[HeaderKey, str] = {}
        for _ in range(count):
            ordinal = self.i32()
            try:
                key = HeaderKey(ordinal)
            except ValueError:  # a negative ordinal is damage; a new one, a newer writer's key
                raise (_BadBlock(f"header key {ordinal}") if ordinal < 0 else _UnknownKey(ordinal)) from None
            raw = self.take(self.i32())
            try:
                entries[key] = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _BadBlock(f"header value for {key.name} is not UTF-8") from None
        return entries


# ---------------------------------------------------------------------------
# Log file names
# ---------------------------------------------------------------------------

# The log-file name lives with the other file names in the model layer; re-exported here.
LogFileName = _LogFileName
