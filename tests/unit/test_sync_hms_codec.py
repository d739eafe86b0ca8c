"""The Hive Metastore client without a metastore: the generic Thrift codec keeps every field it reads, the
records map onto Hudi's structs, and the connection options are read as Hive's client reads them."""

from __future__ import annotations

import pytest

pytest.importorskip("thrift")

from thrift.protocol import TBinaryProtocol, TCompactProtocol  # noqa: E402
from thrift.Thrift import TType  # noqa: E402
from thrift.transport import TTransport  # noqa: E402

from pyhudi.errors import MetaSyncError  # noqa: E402
from pyhudi.sync import hms_thrift as ht  # noqa: E402
from pyhudi.sync.catalog import Column, PartitionDef, TableDef  # noqa: E402
from pyhudi.sync.hms import (  # noqa: E402
    ConnectionSettings,
    changed_partition_sd,
    new_partition_sd,
    parse_uris,
    partition_struct,
    table_def,
    table_struct,
)
from pyhudi.sync.hms_thrift import StorageDescriptorF, TableF, TStruct  # noqa: E402


def round_trip(struct: TStruct, protocol=TBinaryProtocol.TBinaryProtocol) -> tuple[TStruct, bytes]:
    out = TTransport.TMemoryBuffer()
    ht.write_struct(protocol(out), struct)
    data = out.getvalue()
    return ht.read_struct(protocol(TTransport.TMemoryBuffer(data))), data


def sample_table() -> TableDef:
    return TableDef("db", "t", [Column("id", "bigint", "key"), Column("v", "string")], [Column("dt", "string")],
                    "s3a://bucket/t", "in.Format", "out.Format", "the.SerDe",
                    {"path": "s3a://bucket/t", "serialization.format": "1"}, {"EXTERNAL": "TRUE", "a": "b"},
                    comment="hello")


@pytest.mark.parametrize("protocol", [TBinaryProtocol.TBinaryProtocol, TCompactProtocol.TCompactProtocol])
def test_every_thrift_type_round_trips_including_unknown_fields(protocol):
    inner = TStruct().put(1, TType.STRING, "x").put(40, TType.I64, 2**40)
    struct = (TStruct().put(1, TType.STRING, "naïve").put(2, TType.STRING, b"\xff\xfe")
              .put(3, TType.BOOL, True).put(4, TType.BYTE, -3).put(5, TType.I16, -1).put(6, TType.I32, 7)
              .put(7, TType.DOUBLE, 1.5).put(8, TType.STRUCT, inner)
              .put(9, TType.LIST, ht.TList(TType.STRUCT, [inner, inner]))
              .put(10, TType.SET, ht.TList(TType.I32, [1, 2], is_set=True))
              .put(11, TType.MAP, ht.TMap(TType.STRING, TType.LIST, [("k", ht.TList(TType.STRING, ["a"]))])))
    back, data = round_trip(struct, protocol)
    assert back == struct
    assert round_trip(back, protocol)[1] == data  # byte for byte


def test_a_table_record_round_trips_through_its_struct():
    table = sample_table()
    back, _ = round_trip(table_struct(table))
    assert table_def(back) == table
    assert ht.map_to_dict(back.get(TableF.PARAMETERS))["comment"] == "hello"  # Hive's table comment


def test_update_replaces_the_modelled_fields_and_keeps_the_others():
    base = table_struct(sample_table())
    base.put(16, TType.STRING, "hive")  # Hive 3's catName, unknown to the Hive 2.3 ids
    base.put(TableF.RETENTION, TType.I32, 9)
    base.get(TableF.SD).put(StorageDescriptorF.BUCKET_COLS, TType.LIST, ht.string_list(["id"]))
    changed = sample_table()
    changed.columns = [Column("id", "bigint")]
    changed.parameters = {"x": "y"}
    changed.comment = None
    new = table_struct(changed, base=base)
    assert table_def(new) == TableDef(**{**changed.__dict__, "parameters": {"x": "y", "EXTERNAL": "TRUE"}})
    assert new.get(16) == "hive" and new.get(TableF.RETENTION) == 9
    assert new.get(TableF.SD).get(StorageDescriptorF.BUCKET_COLS).items == ["id"]
    assert len(base.get(TableF.SD).get(StorageDescriptorF.COLS).items) == 2  # the base is not changed


def test_partition_descriptors_are_hudis():
    table = sample_table()
    sd = table_struct(table).get(TableF.SD)
    sd.put(StorageDescriptorF.BUCKET_COLS, TType.LIST, ht.string_list(["id"]))
    added = new_partition_sd(sd, "s3a://bucket/t/dt=1")
    assert sorted(added.fields) == [1, 2, 3, 4, 5, 6, 7]  # cols, location, formats, compressed, buckets, serde
    assert added.get(StorageDescriptorF.SERDE_INFO) == sd.get(StorageDescriptorF.SERDE_INFO)
    changed = changed_partition_sd(sd, "s3a://bucket/t/dt=2")
    assert changed.get(StorageDescriptorF.BUCKET_COLS).items == ["id"]
    assert changed.get(StorageDescriptorF.LOCATION) == "s3a://bucket/t/dt=2"
    assert sd.get(StorageDescriptorF.LOCATION) == "s3a://bucket/t"
    part = partition_struct(table, PartitionDef(("1",), "x"), added)
    assert part.get(1).items == ["1"] and part.get(4) == 0 and part.get(7) is None


def test_connection_settings():
    settings = ConnectionSettings.from_options({
        "hoodie.datasource.hive_sync.metastore.uris": "thrift://a:1, thrift://b",
        "hive.metastore.client.socket.timeout": "1500ms", "hive.metastore.connect.retries": "0",
        "hive.metastore.client.connect.retry.delay": "2", "hoodie.datasource.hive_sync.batch_num": "50",
        "hive.metastore.thrift.framed.transport.enabled": "true",
        "hoodie.datasource.hive_sync.username": "ignored: jdbc mode only"})
    assert settings.uris == (("a", 1), ("b", 9083))
    assert (settings.timeout_s, settings.retries, settings.retry_delay_s) == (1.5, 0, 2.0)
    assert settings.batch_size == 50 and settings.framed and not settings.compact
    assert ConnectionSettings.from_options({}).uris == (("localhost", 9083),)  # Hudi's default
    assert parse_uris("thrift://[::1]:9") == (("::1", 9),)
    with pytest.raises(MetaSyncError, match="is not a metastore URI"):
        parse_uris("a:9083")
    with pytest.raises(MetaSyncError, match="is empty"):
        parse_uris(" , ")
    with pytest.raises(MetaSyncError, match="is not a time"):
        ConnectionSettings.from_options({"hive.metastore.client.socket.timeout": "soon"})
    with pytest.raises(MetaSyncError, match="TLS"):
        ConnectionSettings.from_options({"hive.metastore.use.SSL": "TRUE"})
