"""delete_partition's partition list: the option's split and wildcard resolution (Hudi 0.14's
HoodieSparkSqlWriter.resolvePartitionWildcards), without Spark."""

from __future__ import annotations

import pytest

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import HudiError, InvalidConfigError
from pyhudi.writer.delete_partition import refuse_empty, resolve, split_option, wildcard_regex
from pyhudi.writer.operation import WriteOperation

TABLE = ["2024/01/01", "2024/01/02", "2024/02/01", "2025/01/01", "eu", "eu-west", "a.b", "axb", "x*y", "x y"]


def test_option_and_operation_are_declared():
    opts = Options.parse({K.OPERATION.key: "delete_partition", "hoodie.datasource.write.partitions.to.delete": "a,b"})
    assert WriteOperation(opts.get(K.OPERATION)) is WriteOperation.DELETE_PARTITION
    assert opts.get(K.PARTITIONS_TO_DELETE) == "a,b"
    assert WriteOperation.DELETE_PARTITION.operation_type == "DELETE_PARTITION"


@pytest.mark.parametrize("value, expected", [
    ("a,b", ["a", "b"]),
    ("a", ["a"]),
    ("a,,b", ["a", "", "b"]),       # Java keeps inner empty entries
    ("a,b,,", ["a", "b"]),          # and drops trailing ones
    (" a , b", [" a ", " b"]),      # no trimming: a partition value may hold spaces
    ("", []),
])
def test_split_like_java(value, expected):
    assert split_option(value) == expected


@pytest.mark.parametrize("requested, expected", [
    (["2024/*"], ["2024/01/01", "2024/01/02", "2024/02/01"]),         # '*' crosses '/'
    (["2024/01/*"], ["2024/01/01", "2024/01/02"]),
    (["*/01/01"], ["2024/01/01", "2025/01/01"]),
    (["eu*"], ["eu", "eu-west"]),                                    # '*' matches the empty run too
    (["eu"], ["eu"]),                                                # no wildcard: exact, no prefix match
    (["a.b*"], ["a.b"]),                                             # '.' is literal, not a regex dot
    (["x*y"], ["x*y", "x y"]),                                       # '*' in a pattern is always a wildcard
    (["*"], TABLE),
    (["2023/*"], []),
    (["eu", "eu*"], ["eu", "eu-west"]),                              # named first, then matches, distinct
    (["gone", "2025/*"], ["gone", "2025/01/01"]),                    # named partitions kept even if absent
    (["2024/0[1]/*"], []),                                           # only '*' is special: '[' is literal
])
def test_resolve(requested, expected):
    assert resolve(requested, TABLE) == expected


def test_wildcard_regex_is_anchored():
    assert wildcard_regex("01*").fullmatch("2024/01/01") is None
    assert wildcard_regex("*01").fullmatch("2024/01/01") is not None


def test_nothing_to_delete_is_refused_with_the_fix():
    refuse_empty(["a"], ["a"], "/t")  # something to delete: no error
    with pytest.raises(InvalidConfigError, match="delete='2023/\\*' names no partition"):
        refuse_empty([], ["2023/*"], "/t")
    with pytest.raises(InvalidConfigError, match="is not set and the DataFrame has no records"):
        refuse_empty([], None, "/t")
    assert issubclass(InvalidConfigError, HudiError)
