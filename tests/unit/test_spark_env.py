"""The session hints: no Spark needed, a stand-in SparkContext carries the configuration."""

from __future__ import annotations

import logging

import pytest

from pyhudi import spark_env


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Context:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)

    def getConf(self) -> _Conf:  # noqa: N802 - SparkContext's name
        return self.conf


@pytest.mark.parametrize("values, hinted", [
    ({}, True),
    ({spark_env.UDS_KEY: "false"}, True),
    ({spark_env.UDS_KEY: "true"}, False),
    ({spark_env.UDS_KEY: "TRUE"}, False),
])
def test_loopback_tcp_workers_get_one_hint(values, hinted, caplog):
    sc = _Context(values)
    with caplog.at_level(logging.INFO, logger="pyhudi.spark_env"):
        spark_env._hint_unix_domain_socket(sc)
        spark_env._hint_unix_domain_socket(sc)  # once per context
    said = [r for r in caplog.records if spark_env.UDS_KEY in r.getMessage()]
    assert len(said) == (1 if hinted else 0)


def test_the_hint_never_breaks_a_write():
    class Broken:
        def getConf(self):  # noqa: N802
            raise RuntimeError("no JVM")

    spark_env._hint_unix_domain_socket(Broken())  # no exception
