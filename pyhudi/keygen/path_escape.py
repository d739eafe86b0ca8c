"""Partition values in directory names, escaped as Hudi escapes them with
`hoodie.datasource.write.partitionpath.urlencode=true`.

Hudi 0.14/0.15 call `PartitionPathEncodeUtils.escapePathName` (Hive's `FileUtils.escapePathName`), not
Java's `URLEncoder`: only the control characters U+0000-U+001F, `"#%'*/:=?\\`, U+007F and `{[]^` become
`%XX` (upper-case hex of the UTF-16 code unit); spaces, `+` and non-ASCII text stay as they are. A writer
that used `URLEncoder` (space -> `+`, `é` -> `%C3%A9`) would put the same value in another directory
than Hudi does, so an upsert into a Hudi-written table would duplicate its keys. Unescaping is Hive's
`unescapePathName`: `%` followed by two hex digits is that character, anything else is kept.
"""

from __future__ import annotations

import re

ESCAPED = [chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{[]^")
_ESCAPED_SET = frozenset(ESCAPED)
_HEX_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def escape_path_name(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED_SET else c for c in value)


def unescape_path_name(text: str) -> str:
    return _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
