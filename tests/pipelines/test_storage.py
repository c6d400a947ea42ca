"""Specifications of ``pipelines.storage``: catalog registration of the Delta tables, and how Python
tasks read object-store URIs with ``pyarrow.fs`` configured from the job's Hadoop settings.

The S3/GCS/Azure readers are checked by their arguments (translated from the Hadoop settings, then
accepted by the installed pyarrow); S3 files are also read from a server speaking the S3 API on
127.0.0.1 (moto, ``s3_server``). Only the region lookup of AWS buckets, which asks AWS itself, goes
to a recording stand-in for ``S3FileSystem``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DeltaRsTable
from pyarrow import fs as pafs
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampNTZType, TimestampType

from conf import StorageSettings, load_config
from pipelines import storage
from pipelines.progress import file_predicate
from pipelines.storage import (
    ArrowTarget,
    Lakehouse,
    Table,
    UnsupportedSchemeError,
    Write,
    arrow_target,
    azure_filesystem_kwargs,
    gcs_filesystem_kwargs,
    hadoop_filesystem_options,
    open_arrow_input,
    s3_filesystem_kwargs,
)
from pipelines.tables import Col, Layer, TableSpec
from tests.harness.s3 import S3Server, free_port
from tests.harness.sample_lake import commit_engines

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def overwrite(lake: Lakehouse, frame: Any, table: Table) -> None:
    """Write ``frame`` as the whole of ``table`` (a spec made from the frame's own schema)."""
    spec = TableSpec(
        table.layer, table.name, "test rows", tuple(Col(f.name, f.dataType, f.name) for f in frame.schema), ()
    )
    lake.write(Write(spec, frame, mode="overwrite"))


SAMPLE = PROJECT_ROOT / "tests" / "fixtures" / "mariadb" / "sample"

# S3A ---------------------------------------------------------------------------------------------


def test_s3a_endpoint_ssl_region_and_path_style_become_s3_filesystem_arguments() -> None:
    hadoop = {
        "fs.s3a.endpoint": "minio.internal:9000",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.endpoint.region": "us-west-2",
        "fs.s3a.path.style.access": "true",
    }
    assert s3_filesystem_kwargs("logs", hadoop) == {
        "endpoint_override": "minio.internal:9000",
        "scheme": "http",
        "region": "us-west-2",
    }


def test_a_scheme_written_in_the_s3a_endpoint_wins_over_connection_ssl_enabled() -> None:
    hadoop = {"fs.s3a.endpoint": "https://ceph.internal:7480/", "fs.s3a.connection.ssl.enabled": "false"}
    assert s3_filesystem_kwargs("logs", hadoop) == {
        "endpoint_override": "ceph.internal:7480",
        "force_virtual_addressing": True,
    }


def test_a_custom_endpoint_without_path_style_access_keeps_s3a_virtual_host_addressing() -> None:
    assert s3_filesystem_kwargs("logs", {"fs.s3a.endpoint": "http://minio:9000"}) == {
        "endpoint_override": "minio:9000",
        "force_virtual_addressing": True,
        "scheme": "http",
    }


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("s3.eu-west-3.amazonaws.com", {"region": "eu-west-3"}),
        ("https://s3-ap-south-1.amazonaws.com", {"region": "ap-south-1"}),
        ("s3.cn-north-1.amazonaws.com.cn", {"region": "cn-north-1"}),
        ("s3.amazonaws.com", {}),
    ],
)
def test_an_aws_endpoint_gives_its_region_and_no_endpoint_override(endpoint: str, expected: dict[str, object]) -> None:
    assert s3_filesystem_kwargs("logs", {"fs.s3a.endpoint": endpoint}) == expected


def test_per_bucket_s3a_settings_win_over_the_global_ones_for_that_bucket_only() -> None:
    hadoop = {
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.bucket.eu-logs.endpoint.region": "eu-central-1",
        "fs.s3a.access.key": "AKIAGLOBAL",
        "fs.s3a.secret.key": "global-secret",
        "fs.s3a.bucket.eu-logs.access.key": "AKIABUCKET",
        "fs.s3a.bucket.eu-logs.secret.key": "bucket-secret",
    }
    assert s3_filesystem_kwargs("eu-logs", hadoop) == {
        "region": "eu-central-1",
        "access_key": "AKIABUCKET",
        "secret_key": "bucket-secret",
    }
    assert s3_filesystem_kwargs("us-logs", hadoop) == {
        "region": "us-east-1",
        "access_key": "AKIAGLOBAL",
        "secret_key": "global-secret",
    }


KEYS = {"fs.s3a.access.key": "AKIA1", "fs.s3a.secret.key": "s3cr3t"}
TOKEN = {**KEYS, "fs.s3a.session.token": "tok"}


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        # no provider list: S3A's default chain (temporary, simple, environment, instance profile)
        ({}, {}),
        (KEYS, {"access_key": "AKIA1", "secret_key": "s3cr3t"}),
        (TOKEN, {"access_key": "AKIA1", "secret_key": "s3cr3t", "session_token": "tok"}),
        # the SDK's default chain ignores keys set in Hadoop, as S3A does with that provider
        (
            {
                **KEYS,
                "fs.s3a.aws.credentials.provider": "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
            },
            {},
        ),
        # temporary credentials need the session token: without it S3A goes on to the next provider
        (
            {
                **KEYS,
                "fs.s3a.aws.credentials.provider": (
                    "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider,\n"
                    "  org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
                ),
            },
            {"access_key": "AKIA1", "secret_key": "s3cr3t"},
        ),
        (
            {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"},
            {"anonymous": True},
        ),
        (
            {
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider",
                "fs.s3a.assumed.role.arn": "arn:aws:iam::123456789012:role/binlog-reader",
                "fs.s3a.assumed.role.session.name": "binlog-lakehouse",
            },
            {"role_arn": "arn:aws:iam::123456789012:role/binlog-reader", "session_name": "binlog-lakehouse"},
        ),
    ],
    ids=[
        "default-chain",
        "keys",
        "keys-and-token",
        "sdk-default",
        "temporary-then-simple",
        "anonymous",
        "assumed-role",
    ],
)
def test_s3a_credential_providers_translate_in_s3a_order(settings: dict[str, str], expected: dict[str, object]) -> None:
    assert s3_filesystem_kwargs("logs", settings) == expected


def test_s3a_proxy_settings_become_a_proxy_uri_with_quoted_credentials() -> None:
    hadoop = {
        "fs.s3a.proxy.host": "proxy.internal",
        "fs.s3a.proxy.port": "3128",
        "fs.s3a.proxy.username": "svc",
        "fs.s3a.proxy.password": "p@ss:word",
    }
    assert s3_filesystem_kwargs("logs", hadoop) == {"proxy_options": "http://svc:p%40ss%3Aword@proxy.internal:3128"}


def test_the_cluster_example_hadoop_settings_read_with_the_aws_default_chain() -> None:
    cfg = load_config(PROJECT_ROOT / "conf" / "cluster.example.yaml", env={})
    hadoop = {
        key.removeprefix("spark.hadoop."): str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in cfg.spark.conf.items()
        if key.startswith("spark.hadoop.")
    }
    bucket = cfg.input.path.removeprefix("s3a://").partition("/")[0]
    assert arrow_target(f"{cfg.input.path}mysql-bin.000001", hadoop) == ArrowTarget(
        "S3FileSystem", {"region": "eu-west-1"}, f"{bucket}/mysql-prod-01/mysql-bin.000001"
    )


# GCS and Azure -----------------------------------------------------------------------------------


def test_gcs_connector_settings_become_gcs_filesystem_arguments() -> None:
    assert gcs_filesystem_kwargs({}) == {}
    assert gcs_filesystem_kwargs(
        {
            "fs.gs.auth.type": "UNAUTHENTICATED",
            "fs.gs.project.id": "analytics-1",
            "fs.gs.storage.root.url": "http://localhost:4443/",
            "fs.gs.auth.impersonation.service.account": "reader@analytics-1.iam.gserviceaccount.com",
        }
    ) == {
        "anonymous": True,
        "target_service_account": "reader@analytics-1.iam.gserviceaccount.com",
        "project_id": "analytics-1",
        "endpoint_override": "localhost:4443",
        "scheme": "http",
    }
    assert gcs_filesystem_kwargs({"fs.gs.storage.root.url": "https://storage.googleapis.com/"}) == {}


ACCOUNT = "acct.dfs.core.windows.net"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {"account_name": "acct"}),
        # the account-qualified key wins over the plain one
        (
            {"fs.azure.account.key": "cGxhaW4=", f"fs.azure.account.key.{ACCOUNT}": "YWNjb3VudA=="},
            {"account_name": "acct", "account_key": "YWNjb3VudA=="},
        ),
        (
            {"fs.azure.account.auth.type": "SAS", "fs.azure.sas.fixed.token": "?sv=2024-01-01&sig=abc"},
            {"account_name": "acct", "sas_token": "sv=2024-01-01&sig=abc"},
        ),
        (
            {
                f"fs.azure.account.auth.type.{ACCOUNT}": "OAuth",
                "fs.azure.account.oauth.provider.type": "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider",
                "fs.azure.account.oauth2.client.id": "app-id",
                "fs.azure.account.oauth2.client.secret": "app-secret",
                "fs.azure.account.oauth2.client.endpoint": "https://login.microsoftonline.com/tenant-42/oauth2/token",
            },
            {"account_name": "acct", "tenant_id": "tenant-42", "client_id": "app-id", "client_secret": "app-secret"},
        ),
        (
            {
                "fs.azure.account.auth.type": "OAuth",
                "fs.azure.account.oauth.provider.type": "org.apache.hadoop.fs.azurebfs.oauth2.MsiTokenProvider",
                "fs.azure.account.oauth2.client.id": "identity-id",
            },
            {"account_name": "acct", "client_id": "identity-id"},
        ),
        # a custom token provider: Azure's default credential
        (
            {"fs.azure.account.auth.type": "Custom", "fs.azure.account.key": "unused"},
            {"account_name": "acct"},
        ),
    ],
    ids=["default-credential", "shared-key", "sas", "client-secret", "managed-identity", "custom"],
)
def test_abfs_authentication_settings_translate_to_azure_filesystem_arguments(
    settings: dict[str, str], expected: dict[str, object]
) -> None:
    assert azure_filesystem_kwargs(ACCOUNT, True, settings) == expected


# Which file system reads which URI ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "hadoop", "expected"),
    [
        ("s3a://logs/db1/mysql-bin.000001", {}, ArrowTarget("S3FileSystem", {}, "logs/db1/mysql-bin.000001")),
        ("s3://logs/mysql-bin.000001", {}, ArrowTarget("S3FileSystem", {}, "logs/mysql-bin.000001")),
        ("gs://logs/a/mysql-bin.000001", {}, ArrowTarget("GcsFileSystem", {}, "logs/a/mysql-bin.000001")),
        (
            "abfss://binlogs@acct.dfs.core.windows.net/db1/mysql-bin.000001",
            {},
            ArrowTarget("AzureFileSystem", {"account_name": "acct"}, "binlogs/db1/mysql-bin.000001"),
        ),
        # abfs:// is served over HTTPS unless fs.azure.always.use.https is false; other clouds keep their hosts
        (
            "abfs://binlogs@acct.dfs.core.chinacloudapi.cn/mysql-bin.000001",
            {"fs.azure.always.use.https": "false"},
            ArrowTarget(
                "AzureFileSystem",
                {
                    "account_name": "acct",
                    "blob_storage_authority": ".blob.core.chinacloudapi.cn",
                    "dfs_storage_authority": ".dfs.core.chinacloudapi.cn",
                    "blob_storage_scheme": "http",
                    "dfs_storage_scheme": "http",
                },
                "binlogs/mysql-bin.000001",
            ),
        ),
        (
            "wasbs://binlogs@acct.blob.core.windows.net/mysql-bin.000001",
            {"fs.azure.account.key.acct.blob.core.windows.net": "a2V5"},
            ArrowTarget("AzureFileSystem", {"account_name": "acct", "account_key": "a2V5"}, "binlogs/mysql-bin.000001"),
        ),
        (
            "hdfs://nn1:8020/binlogs/mysql-bin.000001",
            {},
            ArrowTarget("HadoopFileSystem", {"host": "nn1", "port": 8020}, "/binlogs/mysql-bin.000001"),
        ),
        # an HA nameservice or fs.defaultFS: port 0 lets libhdfs resolve it from hdfs-site.xml
        (
            "hdfs://prodNS/binlogs/x.000001",
            {},
            ArrowTarget("HadoopFileSystem", {"host": "prodNS", "port": 0}, "/binlogs/x.000001"),
        ),
        (
            "hdfs:///binlogs/x.000001",
            {},
            ArrowTarget("HadoopFileSystem", {"host": "default", "port": 0}, "/binlogs/x.000001"),
        ),
    ],
)
def test_each_scheme_is_read_by_its_pyarrow_filesystem(uri: str, hadoop: dict[str, str], expected: ArrowTarget) -> None:
    assert arrow_target(uri, hadoop) == expected


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("viewfs://cluster/binlogs/mysql-bin.000001", "not viewfs://"),
        ("http://example.com/mysql-bin.000001", "not http://"),
        ("s3a:///mysql-bin.000001", "names no bucket or container"),
    ],
)
def test_unreadable_uris_raise_unsupported_scheme_naming_the_file(uri: str, reason: str) -> None:
    with pytest.raises(UnsupportedSchemeError) as raised:
        arrow_target(uri, {})
    assert str(raised.value).startswith(f"{uri}: cannot read this file: ")
    assert reason in str(raised.value)
    assert raised.value.code == "UNSUPPORTED_SCHEME"
    assert raised.value.uri == uri


def test_translated_arguments_are_accepted_by_the_installed_pyarrow() -> None:
    s3 = s3_filesystem_kwargs(
        "logs",
        {
            "fs.s3a.endpoint": "http://minio:9000",
            "fs.s3a.endpoint.region": "us-west-2",
            "fs.s3a.proxy.host": "proxy",
            "fs.s3a.proxy.port": "3128",
            **TOKEN,
        },
    )
    options = pafs.S3FileSystem(**s3).__reduce__()[1][0]
    assert {key: options[key] for key in ("endpoint_override", "scheme", "region", "access_key", "session_token")} == {
        "endpoint_override": "minio:9000",
        "scheme": "http",
        "region": "us-west-2",
        "access_key": "AKIA1",
        "session_token": "tok",
    }
    assert options["force_virtual_addressing"] is True
    assert options["proxy_options"] == {"scheme": "http", "host": "proxy", "port": 3128, "username": "", "password": ""}
    gcs = pafs.GcsFileSystem(**gcs_filesystem_kwargs({"fs.gs.storage.root.url": "http://localhost:4443"}))
    assert gcs.__reduce__()[1][0]["endpoint_override"] == "localhost:4443"
    azure_kwargs = arrow_target("abfss://c@acct.dfs.core.usgovcloudapi.net/x", {"fs.azure.account.key": "a2V5"}).kwargs
    azure = pafs.AzureFileSystem(**azure_kwargs).__reduce__()[1][0]
    assert (azure["account_name"], azure["dfs_storage_authority"], azure["account_key"]) == (
        "acct",
        ".dfs.core.usgovcloudapi.net",
        "a2V5",
    )


# Opening: file systems built once per worker, region lookup, clear errors -----------------------------


def test_s3a_files_open_from_an_s3_server_with_the_translated_settings_and_one_filesystem_per_worker(
    s3_server: S3Server,
) -> None:
    s3_server.upload(SAMPLE, "opening", ["mysql-bin.000001", "mysql-bin.000002"])
    storage._arrow_filesystem.cache_clear()
    first = open_arrow_input("s3a://opening/mysql-bin.000001", s3_server.hadoop())
    second = open_arrow_input("s3a://opening/mysql-bin.000002", s3_server.hadoop())
    with first() as stream:
        assert stream.read(4) == b"\xfebin"
    with second() as stream:
        assert stream.read() == (SAMPLE / "mysql-bin.000002").read_bytes()
    assert (storage._arrow_filesystem.cache_info().misses, storage._arrow_filesystem.cache_info().currsize) == (1, 1)


def test_per_bucket_s3a_settings_reach_the_server_where_the_global_ones_do_not(s3_server: S3Server) -> None:
    s3_server.upload(SAMPLE, "per-bucket", ["mysql-bin.000003"])
    hadoop = {
        **{key.replace("fs.s3a.", "fs.s3a.bucket.per-bucket.", 1): value for key, value in s3_server.hadoop().items()},
        "fs.s3a.endpoint": f"http://127.0.0.1:{free_port()}",  # nothing listens there
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.connection.ssl.enabled": "false",
    }
    with open_arrow_input("s3a://per-bucket/mysql-bin.000003", hadoop)() as stream:
        assert stream.read() == (SAMPLE / "mysql-bin.000003").read_bytes()
    with pytest.raises(OSError, match=r"(?i)connect"):
        open_arrow_input("s3a://other-bucket/mysql-bin.000003", hadoop)().read()


def test_an_s3a_key_the_bucket_does_not_hold_fails_the_read_with_the_stores_word(s3_server: S3Server) -> None:
    s3_server.upload(SAMPLE, "holding", ["mysql-bin.000001"])
    with pytest.raises(FileNotFoundError, match=r"holding/mysql-bin\.000009"):
        open_arrow_input("s3a://holding/mysql-bin.000009", s3_server.hadoop())()


def test_an_s3_bucket_without_configured_region_or_endpoint_is_asked_its_region_once(
    recording_s3: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def resolve(bucket: str) -> str:
        asked.append(bucket)
        return "ap-northeast-1"

    monkeypatch.setattr(pafs, "resolve_s3_region", resolve)
    open_arrow_input("s3a://binlogs/mysql-bin.000001", {})
    open_arrow_input("s3a://binlogs/mysql-bin.000002", {})
    assert asked == ["binlogs"]
    assert recording_s3 == [{"region": "ap-northeast-1"}]


def test_abfss_without_azure_support_in_pyarrow_is_an_unsupported_scheme_naming_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(pafs, "AzureFileSystem")
    uri = "abfss://binlogs@acct.dfs.core.windows.net/mysql-bin.000001"
    with pytest.raises(UnsupportedSchemeError, match=r"has no pyarrow\.fs\.AzureFileSystem") as raised:
        open_arrow_input(uri, {})
    assert raised.value.uri == uri


def test_hdfs_without_libhdfs_is_an_unsupported_scheme_saying_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_libhdfs(**kwargs: object) -> pafs.FileSystem:
        raise OSError("Unable to load libhdfs: libhdfs.so: cannot open shared object file\ndlopen(...) failed")

    storage._arrow_filesystem.cache_clear()
    monkeypatch.setattr(pafs, "HadoopFileSystem", no_libhdfs)
    with pytest.raises(UnsupportedSchemeError) as raised:
        open_arrow_input("hdfs://nn1:8020/binlogs/mysql-bin.000001", {})
    assert str(raised.value) == (
        "hdfs://nn1:8020/binlogs/mysql-bin.000001: cannot read this file: pyarrow.fs.HadoopFileSystem needs a JVM "
        "(JAVA_HOME), libhdfs (HADOOP_HOME or ARROW_LIBHDFS_DIR) and the Hadoop jars "
        "(CLASSPATH=$(hadoop classpath --glob)) on every executor: "
        "Unable to load libhdfs: libhdfs.so: cannot open shared object file"
    )


# Catalog registration ------------------------------------------------------------------------------


def _lake(spark: SparkSession, root: Path, suffix: str) -> Lakehouse:
    return Lakehouse(
        spark,
        StorageSettings(
            root=str(root), gold_database=f"storage_gold_{suffix}", bronze_database=f"storage_bronze_{suffix}"
        ),
    )


def test_written_tables_are_registered_by_location_and_read_by_name(spark: SparkSession, tmp_path: Path) -> None:
    lake = _lake(spark, tmp_path / "lake", "named")
    overwrite(lake, spark.createDataFrame([Row(id=1, total=9.5), Row(id=2, total=3.0)]), Table.gold("shop__orders"))
    rows = spark.sql("SELECT id, total FROM storage_gold_named.shop__orders ORDER BY id").collect()
    assert rows == [Row(id=1, total=9.5), Row(id=2, total=3.0)]
    location = spark.sql("DESCRIBE DETAIL storage_gold_named.shop__orders").first()
    assert location is not None and location["location"] == f"file:{tmp_path}/lake/gold/shop__orders"


def test_a_name_registered_for_another_lakehouse_root_is_pointed_at_this_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    first = _lake(spark, tmp_path / "first", "moved")
    overwrite(first, spark.createDataFrame([Row(id=1)]), Table.gold("t"))
    second = _lake(spark, tmp_path / "second", "moved")
    overwrite(second, spark.createDataFrame([Row(id=2), Row(id=3)]), Table.gold("t"))
    assert spark.sql("SELECT id FROM storage_gold_moved.t ORDER BY id").collect() == [Row(id=2), Row(id=3)]
    # dropping the external registration left the first root's table in place
    assert first.read(Table.gold("t")).collect() == [Row(id=1)]


def test_a_mixed_case_table_name_is_found_in_the_catalog_and_pointed_at_this_lakehouse(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = Table.gold("Shop__Orders")  # the catalog keeps names in lower case
    overwrite(_lake(spark, tmp_path / "first", "cased"), spark.createDataFrame([Row(id=1)]), table)
    overwrite(_lake(spark, tmp_path / "second", "cased"), spark.createDataFrame([Row(id=2)]), table)
    assert spark.sql("SELECT id FROM storage_gold_cased.shop__orders").collect() == [Row(id=2)]


def test_a_registration_whose_files_were_deleted_is_replaced(spark: SparkSession, tmp_path: Path) -> None:
    gone = _lake(spark, tmp_path / "gone", "deleted")
    overwrite(gone, spark.createDataFrame([Row(id=1)]), Table.gold("t"))
    shutil.rmtree(tmp_path / "gone")
    overwrite(_lake(spark, tmp_path / "new", "deleted"), spark.createDataFrame([Row(id=5)]), Table.gold("t"))
    assert spark.sql("SELECT id FROM storage_gold_deleted.t").collect() == [Row(id=5)]


def test_tables_written_while_registering_at_end_are_registered_together_when_the_block_ends(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = _lake(spark, tmp_path / "lake", "batched")
    with lake.registering_at_end():
        overwrite(lake, spark.createDataFrame([Row(id=1)]), Table.gold("a"))
        overwrite(lake, spark.createDataFrame([Row(id=2)]), Table.bronze("b"))
        assert not spark.catalog.tableExists("storage_gold_batched.a")
    assert spark.sql("SELECT id FROM storage_gold_batched.a").collect() == [Row(id=1)]
    assert spark.sql("SELECT id FROM storage_bronze_batched.b").collect() == [Row(id=2)]
    remembered = json.loads((tmp_path / "lake" / "_state" / storage.REGISTERED_FILE).read_text())["tables"]
    assert remembered == {
        "storage_gold_batched.a": f"{tmp_path}/lake/gold/a",
        "storage_bronze_batched.b": f"{tmp_path}/lake/bronze/b",
    }


def test_a_table_a_killed_run_wrote_before_registering_it_is_registered_by_the_next_run(
    spark: SparkSession, tmp_path: Path
) -> None:
    killed = _lake(spark, tmp_path / "lake", "killed")
    with pytest.raises(KeyboardInterrupt), killed.registering_at_end():
        overwrite(killed, spark.createDataFrame([Row(id=3)]), Table.gold("t"))
        raise KeyboardInterrupt  # killed after the commit, before the registration
    assert not spark.catalog.tableExists("storage_gold_killed.t")
    with _lake(spark, tmp_path / "lake", "killed").registering_at_end():
        pass  # the next run writes nothing new
    assert spark.sql("SELECT id FROM storage_gold_killed.t").collect() == [Row(id=3)]


def test_a_name_held_by_a_managed_table_is_not_dropped(spark: SparkSession, tmp_path: Path) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS storage_gold_managed")
    spark.sql("CREATE TABLE storage_gold_managed.t (id BIGINT) USING DELTA")
    spark.sql("INSERT INTO storage_gold_managed.t VALUES (7)")
    lake = _lake(spark, tmp_path / "lake", "managed")
    with pytest.raises(RuntimeError, match=r"storage_gold_managed`\.`t` is a managed table at file:.*: rename it"):
        overwrite(lake, spark.createDataFrame([Row(id=1)]), Table.gold("t"))
    assert spark.sql("SELECT id FROM storage_gold_managed.t").collect() == [Row(id=7)]


def test_hadoop_filesystem_options_hand_the_sessions_object_store_settings_to_tasks(spark: SparkSession) -> None:
    configuration = spark.sparkContext._jsc.hadoopConfiguration()
    configuration.set("fs.s3a.endpoint", "http://minio:9000")
    configuration.set("fs.azure.account.key.acct.dfs.core.windows.net", "a2V5")
    try:
        options = hadoop_filesystem_options(spark)
    finally:
        configuration.unset("fs.s3a.endpoint")
        configuration.unset("fs.azure.account.key.acct.dfs.core.windows.net")
    assert options["fs.s3a.endpoint"] == "http://minio:9000"
    assert options["fs.azure.account.key.acct.dfs.core.windows.net"] == "a2V5"
    assert not [key for key in options if not key.startswith(("fs.s3a.", "fs.gs.", "fs.azure."))]


# A Hive catalog persists registrations across sessions -------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pyspark.sql import Row
    from conf import load_config
    from pipelines.session import build_spark
    from pipelines.storage import Lakehouse, Write
    from pipelines.tables import Col, Layer, TableSpec

    cfg = load_config(sys.argv[1], env={})
    spark = build_spark(cfg.spark)
    rows = spark.createDataFrame([Row(op="insert", id=1, total="9.50"), Row(op="update", id=1, total="12.00")])
    columns = tuple(Col(f.name, f.dataType, f.name) for f in rows.schema)
    spec = TableSpec(Layer.GOLD, "shop__orders", "test rows", columns, ())
    Lakehouse(spark, cfg.storage).write(Write(spec, rows, mode="overwrite"))
    spark.stop()
    """
)


@pytest.mark.slow
def test_hive_catalog_registrations_are_read_by_name_from_a_later_session(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    config = tmp_path / "lake.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            spark:
              master: local[1]
              ui_enabled: false
              log_level: ERROR
              shuffle_partitions: 1
              catalog: hive
              conf:
                spark.databricks.delta.snapshotPartitions: 1
            input:
              path: {SAMPLE}
            storage:
              root: {lake}
            """
        ),
        encoding="utf-8",
    )
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("PYSPARK_GATEWAY", "BINLOG_LAKEHOUSE__"))
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode == 0, done.stderr[-4000:]
        return done

    run("-c", WRITER, str(config))
    query = "SELECT op, id, total FROM binlog_gold.shop__orders ORDER BY total"
    done = run("-m", "pipelines.session", "--config", str(config), "--sql", query)
    assert done.stdout.splitlines() == ["op\tid\ttotal", "update\t1\t12.00", "insert\t1\t9.50"]
    assert (lake / "_metastore" / "metastore_db").is_dir()
    assert (lake / "_metastore" / "derby.log").is_file()
    assert (lake / "_warehouse" / "binlog_gold.db").is_dir()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["lake", "lake.yaml"]  # nothing in the working dir


# Writes --------------------------------------------------------------------------------------------


def _spec(*columns: Col) -> TableSpec:
    return TableSpec(Layer.GOLD, "shop__visits", "a visit", columns, ("id",))


def test_a_datetime_column_can_join_an_existing_table_by_schema_merge_or_overwrite(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    ident = Col("id", LongType(), "id")
    seen = Col("seen", TimestampNTZType(), "a DATETIME")
    wide = spark.createDataFrame([(2, datetime(2024, 3, 1, 11, 3))], "id long, seen timestamp_ntz")
    for write, expected in (
        (
            Write(_spec(ident, seen), wide, mode="append", merge_schema=True),
            [(1, None), (2, datetime(2024, 3, 1, 11, 3))],
        ),
        (Write(_spec(ident, seen), wide, mode="overwrite"), [(2, datetime(2024, 3, 1, 11, 3))]),
    ):
        shutil.rmtree(tmp_path / "lake", ignore_errors=True)
        lake.write(Write(_spec(ident), spark.createDataFrame([(1,)], "id long")))
        lake.write(write)
        assert sorted(tuple(r) for r in lake.read(_spec(ident, seen)).collect()) == expected, write.mode


def test_a_merge_with_keep_deletes_the_rows_it_marks_gone_and_inserts_only_the_kept(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    spec = _spec(Col("id", LongType(), "id"), Col("v", LongType(), "v"))
    rows = "id long, v long, keep boolean"
    lake.write(Write(spec, spark.createDataFrame([(1, 1, True), (2, 2, True), (3, 3, False)], rows), keep="keep"))
    assert sorted(lake.read(spec).collect()) == [Row(id=1, v=1), Row(id=2, v=2)]  # a new table: the kept only
    again = spark.createDataFrame([(1, 10, True), (2, 2, False), (4, 4, True), (5, 5, False)], rows)
    for _ in range(2):  # merging the same rows again changes nothing
        lake.write(Write(spec, again, mode="merge", keep="keep"))
        assert sorted(lake.read(spec).collect()) == [Row(id=1, v=10), Row(id=4, v=4)]


# Small tables read on the driver ---------------------------------------------------------------------


SMALL_ROWS = (
    "id long, name string, n int, ok boolean, at timestamp, wall timestamp_ntz, "
    "counts map<string,long>, described map<long,string>, names array<string>, "
    "columns array<struct<name:string,key:boolean>>, first struct<name:string,at:timestamp>"
)


def _jobs_of(spark: SparkSession, read: Any) -> tuple[Any, list[int]]:
    """What ``read()`` returns, and the Spark jobs it ran."""
    context = spark.sparkContext
    group = f"small-table-read-{uuid.uuid4().hex}"
    context.setJobGroup(group, "rows read on the driver")
    try:
        found = read()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return found, list(context.statusTracker().getJobIdsForGroup(group))


def test_a_small_table_is_read_on_the_driver_without_a_spark_job_as_spark_collects_it(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")  # a timestamp reads in the local time zone, as PySpark gives it
    time.tzset()
    try:
        lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
        spec = TableSpec(Layer.STATE, "small", "a small table", (), ("id",))
        frame = spark.createDataFrame(
            [
                (
                    1,
                    "a",
                    7,
                    True,
                    datetime(2024, 3, 1, 11, 3, 4, 123456),
                    datetime(2024, 3, 1, 11, 3),
                    {"events": 281, "gaps": 0},
                    {4: '{"binlog_version": 4}'},
                    ["x", "y"],
                    [("id", True), ("v", None)],
                    ("id", datetime(2024, 3, 1, 11, 3)),
                ),
                (2, None, None, None, None, None, {}, {}, [], [], (None, None)),
                (3, "c", -1, False, datetime(1999, 12, 31, 23, 59, 59, 1), None, None, None, None, None, None),
            ],
            SMALL_ROWS,
        )
        assert _jobs_of(spark, lambda: lake.rows(spec))[0] == []  # before its first write
        frame.write.format("delta").save(lake.path(spec))
        collected = sorted((row.asDict() for row in lake.read(spec).collect()), key=lambda r: r["id"])
        found, jobs = _jobs_of(spark, lambda: lake.rows(spec))
        assert jobs == []
        assert sorted(found, key=lambda r: r["id"]) == collected
        assert all(list(row) == lake.read(spec).columns for row in found)  # the table's column order
        assert collected[0]["at"] == datetime(2024, 3, 1, 11, 3, 4, 123456)
        first = sorted(found, key=lambda r: r["id"])[0]  # structs as the Rows Spark gives, fields by name
        assert [c.asDict() for c in first["columns"]] == [{"name": "id", "key": True}, {"name": "v", "key": None}]
        assert first["first"].name == "id" and first["first"].at == datetime(2024, 3, 1, 11, 3)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_small_table_with_a_type_the_driver_read_does_not_map_is_collected_through_spark_unless_left_out(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    spec = TableSpec(Layer.STATE, "bodies", "a table with bytes", (), ("id",))
    spark.createDataFrame([(1, bytearray(b"\x00\xfe"), "k")], "id long, body binary, code string").write.format(
        "delta"
    ).save(lake.path(spec))
    found, jobs = _jobs_of(spark, lambda: lake.rows(spec))
    assert found == [{"id": 1, "body": bytearray(b"\x00\xfe"), "code": "k"}] and jobs  # through Spark
    found, jobs = _jobs_of(spark, lambda: lake.rows(spec, ["code", "id"]))
    assert found == [{"code": "k", "id": 1}] and jobs == []


# Small work written on the driver ------------------------------------------------------------------

VISITS = TableSpec(
    Layer.GOLD,
    "shop__visits",
    "a visit",
    (
        Col("file", StringType(), "the binlog", nullable=False),
        Col("offset", LongType(), "where", nullable=False),
        Col("seen", TimestampNTZType(), "a DATETIME"),
        Col("at", TimestampType(), "a TIMESTAMP"),
        Col("who", StructType([StructField("name", StringType()), StructField("id", LongType())]), "a struct"),
        Col("kind", StringType(), "the partition"),
    ),
    ("file", "offset"),
    partition_by=("kind",),
    skipping=("seen",),
)
VISITS_ROWS = "file string, offset long, seen timestamp_ntz, at timestamp, who struct<name:string,id:long>, kind string"
LONG_FOLDER = "/binlogs/" + "a-folder-whose-name-runs-past-the-sixty-four-characters-delta-rs-keeps/" * 2


def _visits(spark: SparkSession, *rows: tuple[str, int]) -> Any:
    return spark.createDataFrame(
        [
            (file, offset, datetime(2024, 3, 1, 11, offset % 60), datetime(2024, 3, 1, 11, 3), ("ann", offset), "k")
            for file, offset in rows
        ],
        VISITS_ROWS,
    )


def test_small_work_is_written_by_delta_rs_into_the_table_spark_would_write_and_then_reads_and_writes(
    spark: SparkSession, tmp_path: Path
) -> None:
    lakes = {
        small: Lakehouse(
            spark, StorageSettings(root=str(tmp_path / str(small)), register_tables=False), small_work=lambda s=small: s
        )
        for small in (False, True)
    }
    quoted = LONG_FOLDER + "it's\\1"
    first = _visits(spark, (LONG_FOLDER + "b.000001", 4), (LONG_FOLDER + "b.000001", 90), (quoted, 4))
    again = _visits(spark, (quoted, 120))
    for lake in lakes.values():
        lake.write(Write(VISITS, first, mode="append"))
        lake.write(Write(VISITS, again, file_predicate([quoted])))  # replaces the rows of one file only
    spark_lake, driver_lake = lakes[False], lakes[True]
    assert commit_engines(Path(driver_lake.path(VISITS))) == ["delta-rs"] * 3  # made, appended, replaced
    assert commit_engines(Path(spark_lake.path(VISITS))) == ["Apache-Spark"] * 2
    read = {small: lake.read(VISITS) for small, lake in lakes.items()}
    nullable = StructType([StructField(f.name, f.dataType, True, f.metadata) for f in VISITS.schema])
    assert read[True].schema == read[False].schema == nullable  # with the comments
    assert sorted(read[True].collect()) == sorted(read[False].collect())
    assert sorted((r.file, r.offset) for r in read[True].collect()) == [
        (LONG_FOLDER + "b.000001", 4),
        (LONG_FOLDER + "b.000001", 90),
        (quoted, 120),
    ]
    tables = {small: DeltaRsTable(lake.path(VISITS)) for small, lake in lakes.items()}
    protocols = {small: t.protocol() for small, t in tables.items()}
    assert (protocols[True].min_reader_version, protocols[True].min_writer_version) == (3, 7)
    assert protocols[True].reader_features == protocols[False].reader_features == ["timestampNtz"]
    assert set(protocols[True].writer_features or []) <= set(protocols[False].writer_features or [])
    assert tables[True].metadata().configuration == tables[False].metadata().configuration == VISITS.properties
    assert tables[True].metadata().partition_columns == ["kind"]
    stats = pa.table(tables[True].get_add_actions(flatten=True))
    bounds = {*stats.column("min.file").to_pylist(), *stats.column("max.file").to_pylist()}
    assert bounds == {LONG_FOLDER + "b.000001", quoted}  # not cut at 64 characters
    assert sorted(n for n in stats.column_names if n.startswith("min.")) == ["min.file", "min.offset", "min.seen"]
    driver_lake.small_work = lambda: False  # Spark appends to the table delta-rs made
    driver_lake.write(Write(VISITS, _visits(spark, ("x", 1)), mode="append"))
    assert commit_engines(Path(driver_lake.path(VISITS)))[-1] == "Apache-Spark"
    assert driver_lake.read(VISITS).count() == 4


def test_a_small_write_delta_rs_would_not_write_as_spark_does_goes_through_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(
        spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False), small_work=lambda: True
    )
    lake.write(Write(VISITS, _visits(spark, ("a", 1)), mode="append"))
    wider = TableSpec(
        VISITS.layer, VISITS.name, VISITS.row, (*VISITS.columns, Col("note", StringType(), "new")), VISITS.key
    )
    lake.write(Write(wider, _visits(spark, ("b", 2)).withColumn("note", F.lit("n")), mode="append", merge_schema=True))
    newline = _visits(spark, ("c\n", 3)).withColumn("note", F.lit("n"))
    lake.write(Write(wider, newline, "`file` = 'c\\n'"))  # Spark reads the escape as a line break
    lake.write(Write(wider, _visits(spark, ("a", 1)).withColumn("note", F.lit("m")), mode="merge"))
    engines = commit_engines(Path(lake.path(VISITS)))
    assert engines == ["delta-rs"] * 2 + ["Apache-Spark"] * 3  # made and appended; a new column, an escape, a merge
    assert sorted((r.file, r.note) for r in lake.read(wider).collect()) == [("a", "m"), ("b", "n"), ("c\n", "n")]


@pytest.mark.parametrize(
    ("spark_sql", "datafusion"),
    [
        ("`file` IN ('a', 'b')", "\"file\" IN ('a', 'b')"),
        ("stage = 'gold' AND (`file` IN ('it\\'s', 'C:\\\\x'))", "stage = 'gold' AND (\"file\" IN ('it''s', 'C:\\x'))"),
        ("`we``ird` = 'x'", "\"we`ird\" = 'x'"),
        ("false", "false"),
    ],
)
def test_a_replace_predicate_reads_in_delta_rs_as_spark_reads_it(spark_sql: str, datafusion: str) -> None:
    assert storage.datafusion_predicate(spark_sql) == datafusion


@pytest.mark.parametrize("spark_sql", ["a = 'x\\n'", 'a = "x"', "File = 'x'", "a = 'open"])
def test_a_predicate_delta_rs_could_read_otherwise_than_spark_is_left_to_spark(spark_sql: str) -> None:
    assert storage.datafusion_predicate(spark_sql) is None
