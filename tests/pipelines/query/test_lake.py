"""Catalog names to Delta paths, and S3A settings to delta-rs storage options (no object store needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conf import StorageSettings
from pipelines.filesystems import s3_filesystem_kwargs
from pipelines.query.lake import (
    LakeTables,
    TableNotFoundError,
    delta_storage_options,
    hadoop_settings,
    layer_databases,
)
from pipelines.storage import Lakehouse
from pipelines.tables import CATALOGED


def _lake(settings: StorageSettings) -> LakeTables:
    return LakeTables(settings.root, settings.layers())


def test_every_layer_s_database_names_its_folder_as_the_pipeline_registers_it(spark: SparkSession) -> None:
    settings = StorageSettings(root="/lake", gold_database="Analytics", quality_database="ops")
    lake = Lakehouse(spark, settings)
    expected = {lake.database(layer).lower(): (layer.value,) for layer in CATALOGED}

    assert layer_databases(settings.layers()) == expected
    assert expected["analytics"] == ("gold",)


def test_a_table_resolves_to_the_folder_of_its_layer_case_insensitively() -> None:
    lake = _lake(StorageSettings(root="s3a://bucket/lake/", silver_database="shared", gold_database="shared"))
    assert lake.candidates("BINLOG_BRONZE", "Binlog_Events") == ["s3a://bucket/lake/bronze/binlog_events"]
    assert lake.candidates("shared", "table_maps") == [
        "s3a://bucket/lake/silver/table_maps",
        "s3a://bucket/lake/gold/table_maps",
    ]


@pytest.mark.parametrize(
    ("database", "name", "message"),
    [
        ("binlog_gold", "_progress", "binlog_gold._progress: no such table"),
        ("binlog_gold", "a/b", "binlog_gold.a/b: no such table"),
        (
            "nodb",
            "t",
            "nodb.t: no database nodb in this lakehouse (it has binlog_bronze, binlog_current, binlog_gold, "
            "binlog_history, binlog_quality, binlog_silver)",
        ),
    ],
)
def test_bookkeeping_folders_and_unknown_databases_are_not_tables(database: str, name: str, message: str) -> None:
    with pytest.raises(TableNotFoundError) as raised:
        _lake(StorageSettings(root="/lake")).candidates(database, name)
    assert str(raised.value) == message


def test_a_missing_table_on_a_local_root_lists_what_the_database_holds(tmp_path: Path) -> None:
    for folder in ("gold/orders/_delta_log", "gold/_progress/_delta_log", "gold/not_delta", "silver/maps/_delta_log"):
        (tmp_path / folder).mkdir(parents=True)
    lake = _lake(StorageSettings(root=str(tmp_path)))
    assert (
        str(lake.not_found("binlog_gold", "refunds")) == "binlog_gold.refunds: no such table (binlog_gold has orders)"
    )
    assert (
        str(lake.not_found("binlog_quality", "x"))
        == "binlog_quality.x: no such table (binlog_quality has no tables yet)"
    )
    assert str(_lake(StorageSettings(root="s3a://b/lake")).not_found("binlog_gold", "x")) == (
        "binlog_gold.x: no such table (no Delta table at s3a://b/lake/gold/x)"
    )


def test_the_hadoop_settings_are_the_spark_hadoop_entries_of_the_config() -> None:
    conf = {"spark.hadoop.fs.s3a.path.style.access": True, "spark.hadoop.fs.s3a.endpoint": "minio:9000"}
    assert hadoop_settings({**conf, "spark.executor.memory": "4g"}) == {
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint": "minio:9000",
    }


@pytest.mark.parametrize(
    ("hadoop", "expected"),
    [
        ({}, {}),
        (
            {
                "fs.s3a.endpoint": "http://minio:9000",
                "fs.s3a.path.style.access": "true",
                "fs.s3a.access.key": "AK",
                "fs.s3a.secret.key": "SK",
            },
            {
                "AWS_ENDPOINT_URL": "http://minio:9000",
                "AWS_ALLOW_HTTP": "true",
                "AWS_ACCESS_KEY_ID": "AK",
                "AWS_SECRET_ACCESS_KEY": "SK",
            },
        ),
        (
            {"fs.s3a.endpoint": "storage.example.com", "fs.s3a.connection.ssl.enabled": "false"},
            {
                "AWS_ENDPOINT_URL": "http://lake.storage.example.com",
                "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true",
                "AWS_ALLOW_HTTP": "true",
            },
        ),
        ({"fs.s3a.endpoint": "s3.eu-west-1.amazonaws.com"}, {"AWS_REGION": "eu-west-1"}),
        (
            {"fs.s3a.endpoint.region": "us-east-2", "fs.s3a.bucket.lake.endpoint.region": "ap-south-1"},
            {"AWS_REGION": "ap-south-1"},
        ),
        (
            {"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", "fs.s3a.session.token": "T"},
            {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "T"},
        ),
        (
            {
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider",
                "fs.s3a.access.key": "AK",
                "fs.s3a.secret.key": "SK",
            },
            {"AWS_SKIP_SIGNATURE": "true"},
        ),
        (
            {
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider",
                "fs.s3a.assumed.role.arn": "arn:aws:iam::1:role/reader",
                "fs.s3a.assumed.role.session.name": "lake",
            },
            {"AWS_IAM_ROLE_ARN": "arn:aws:iam::1:role/reader", "AWS_IAM_ROLE_SESSION_NAME": "lake"},
        ),
        (
            {"fs.s3a.aws.credentials.provider": "com.amazonaws.auth.InstanceProfileCredentialsProvider"},
            {},
        ),
        (
            {"fs.s3a.proxy.host": "proxy", "fs.s3a.proxy.port": "3128", "fs.s3a.proxy.username": "u@x"},
            {"proxy_url": "http://u%40x:@proxy:3128"},
        ),
    ],
    ids=[
        "nothing",
        "minio-path-style",
        "virtual-hosted-http",
        "aws-endpoint-region",
        "per-bucket-wins",
        "session-token",
        "anonymous",
        "assumed-role",
        "default-chain",
        "proxy",
    ],
)
def test_s3a_settings_translate_to_delta_rs_options(hadoop: dict[str, str], expected: dict[str, str]) -> None:
    assert delta_storage_options("s3a://lake/tables/gold/changes", hadoop) == expected


@pytest.mark.parametrize(
    "hadoop",
    [
        {"fs.s3a.endpoint": "https://minio:9000", "fs.s3a.path.style.access": "true", "fs.s3a.endpoint.region": "x"},
        {"fs.s3a.endpoint": "s3-us-west-2.amazonaws.com", "fs.s3a.access.key": "A", "fs.s3a.secret.key": "S"},
        {"fs.s3a.bucket.lake.access.key": "A", "fs.s3a.bucket.lake.secret.key": "S", "fs.s3a.session.token": "T"},
    ],
)
def test_delta_rs_options_say_what_the_pipeline_s_pyarrow_arguments_say(hadoop: dict[str, str]) -> None:
    arrow = s3_filesystem_kwargs("lake", hadoop)
    delta = delta_storage_options("s3a://lake/t", hadoop)
    endpoint = (
        f"{arrow.get('scheme', 'https')}://{arrow['endpoint_override']}" if "endpoint_override" in arrow else None
    )
    assert delta.get("AWS_ENDPOINT_URL") == endpoint
    assert delta.get("AWS_REGION") == arrow.get("region")
    assert delta.get("AWS_ACCESS_KEY_ID") == arrow.get("access_key")
    assert delta.get("AWS_SECRET_ACCESS_KEY") == arrow.get("secret_key")
    assert delta.get("AWS_SESSION_TOKEN") == arrow.get("session_token")


def test_local_and_other_roots_get_no_options() -> None:
    hadoop = {"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK"}
    assert delta_storage_options("/data/lake/gold/changes", hadoop) == {}
    assert delta_storage_options("gs://lake/gold/changes", hadoop) == {}
