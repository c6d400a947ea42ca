"""Specifications of ``pipelines.filesystems``: how Python tasks read object-store URIs (and write
table files) with ``pyarrow.fs`` configured from the job's Hadoop settings.

The S3/GCS/Azure file systems are checked by their arguments (translated from the Hadoop settings,
then accepted by the installed pyarrow); S3 files are also read from a server speaking the S3 API on
127.0.0.1 (moto, ``s3_server``). Only the region lookup of AWS buckets, which asks AWS itself, goes
to a recording stand-in for ``S3FileSystem``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyarrow import fs as pafs

from conf import load_config
from pipelines import filesystems
from pipelines.filesystems import (
    ArrowTarget,
    UnsupportedSchemeError,
    arrow_filesystem,
    arrow_target,
    azure_filesystem_kwargs,
    gcs_filesystem_kwargs,
    open_arrow_input,
    s3_filesystem_kwargs,
)
from tests.harness.s3 import S3Server, free_port

PROJECT_ROOT = Path(__file__).resolve().parents[2]
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
    filesystems._arrow_filesystem.cache_clear()
    first = open_arrow_input("s3a://opening/mysql-bin.000001", s3_server.hadoop())
    second = open_arrow_input("s3a://opening/mysql-bin.000002", s3_server.hadoop())
    with first() as stream:
        assert stream.read(4) == b"\xfebin"
    with second() as stream:
        assert stream.read() == (SAMPLE / "mysql-bin.000002").read_bytes()
    assert (filesystems._arrow_filesystem.cache_info().misses, filesystems._arrow_filesystem.cache_info().currsize) == (
        1,
        1,
    )


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

    filesystems._arrow_filesystem.cache_clear()
    monkeypatch.setattr(pafs, "HadoopFileSystem", no_libhdfs)
    with pytest.raises(UnsupportedSchemeError) as raised:
        open_arrow_input("hdfs://nn1:8020/binlogs/mysql-bin.000001", {})
    assert str(raised.value) == (
        "hdfs://nn1:8020/binlogs/mysql-bin.000001: cannot read this file: pyarrow.fs.HadoopFileSystem needs a JVM "
        "(JAVA_HOME), libhdfs (HADOOP_HOME or ARROW_LIBHDFS_DIR) and the Hadoop jars "
        "(CLASSPATH=$(hadoop classpath --glob)) on every executor: "
        "Unable to load libhdfs: libhdfs.so: cannot open shared object file"
    )


def test_a_local_path_or_file_uri_is_the_local_file_system(tmp_path: Path) -> None:
    for uri in (str(tmp_path), f"file:{tmp_path}", f"file://{tmp_path}"):
        filesystem, path = arrow_filesystem(uri, {})
        assert isinstance(filesystem, pafs.LocalFileSystem) and path == str(tmp_path)


def test_table_files_are_written_to_and_read_back_from_an_s3_server(s3_server: S3Server) -> None:
    s3_server.upload(SAMPLE, "writing", ["mysql-bin.000001"])
    filesystem, path = arrow_filesystem("s3a://writing/lake/bronze/t/part-0.parquet", s3_server.hadoop())
    with filesystem.open_output_stream(path) as out:
        out.write(b"PAR1")
    with filesystem.open_input_stream(path) as back:
        assert back.read() == b"PAR1"
