"""Specifications of the typed configuration: loading, strictness, overrides, path resolution."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic import BaseModel

from conf import AppConfig, ConfigError, SparkSettings, load_config
from conf.models import default_delta_package, hadoop_aws_package

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = PROJECT_ROOT / "conf"

MINIMAL_YAML = "input:\n  path: in\nstorage:\n  root: out\n"


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def all_models(model: type[BaseModel]) -> list[type[BaseModel]]:
    found = [model]
    for field in model.model_fields.values():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found += all_models(annotation)
    return found


@pytest.mark.parametrize("path", sorted(CONF_DIR.glob("*.yaml")), ids=lambda path: path.name)
def test_every_yaml_under_conf_loads(path: Path) -> None:
    cfg = load_config(path, env={})
    assert isinstance(cfg, AppConfig)


def test_conf_folder_holds_the_local_and_cluster_configs() -> None:
    assert {path.name for path in CONF_DIR.glob("*.yaml")} >= {"local.yaml", "cluster.example.yaml"}


def test_default_config_is_local_yaml_with_local_master_and_delta_package() -> None:
    cfg = load_config(env={})
    assert cfg.spark.master == "local[*]"
    assert cfg.spark.driver_memory == "1536m"
    assert cfg.spark.packages == ["io.delta:delta-spark_4.2_2.13:4.4.0"]
    assert cfg.storage.root == str(PROJECT_ROOT / "lakehouse")


def test_local_yaml_keeps_registrations_in_a_derby_metastore_below_the_lakehouse_root() -> None:
    cfg = load_config(CONF_DIR / "local.yaml", env={})
    assert cfg.spark.catalog == "hive"
    assert cfg.spark.metastore_dir == str(PROJECT_ROOT / "lakehouse" / "_metastore")
    assert cfg.spark.warehouse_dir == str(PROJECT_ROOT / "lakehouse" / "_warehouse")


def test_cluster_example_takes_master_from_spark_submit_and_keeps_s3a_uris() -> None:
    cfg = load_config(CONF_DIR / "cluster.example.yaml", env={})
    assert cfg.spark.master is None
    assert (cfg.spark.catalog, cfg.spark.metastore_dir, cfg.spark.warehouse_dir) == (None, None, None)
    assert cfg.input.path == "s3a://example-binlogs/mysql-prod-01/"
    assert cfg.storage.root == "s3a://example-lakehouse/binlog/"
    assert cfg.input.modified_after == datetime(2024, 1, 1, tzinfo=UTC)
    # the jars spark-submit is given (`python -m pipelines.session --jars`): Delta as installed, and s3a
    assert cfg.spark.packages == [default_delta_package(), "org.apache.hadoop:hadoop-aws:3.5.0"]


def test_default_delta_package_matches_delta_spark_pip_helper() -> None:
    from delta.pip_utils import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    builder = configure_spark_with_delta_pip(SparkSession.builder)
    assert builder._options["spark.jars.packages"] == default_delta_package()


def test_hadoop_aws_package_names_the_hadoop_version_spark_runs(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    assert hadoop_aws_package() == f"org.apache.hadoop:hadoop-aws:{jvm.org.apache.hadoop.util.VersionInfo.getVersion()}"


def test_every_field_of_every_model_has_a_description() -> None:
    undocumented = [
        f"{model.__name__}.{name}"
        for model in all_models(AppConfig)
        for name, field in model.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert undocumented == []


def test_unknown_top_level_key_is_rejected_by_name(tmp_path: Path) -> None:
    path = write_config(tmp_path, MINIMAL_YAML + "sparkk:\n  master: local\n")
    with pytest.raises(ConfigError, match=r"sparkk: unknown key"):
        load_config(path, env={})


def test_unknown_nested_key_is_rejected_by_name(tmp_path: Path) -> None:
    path = write_config(tmp_path, MINIMAL_YAML + "spark:\n  mastr: local[2]\n")
    with pytest.raises(ConfigError, match=r"spark\.mastr: unknown key"):
        load_config(path, env={})


def test_unknown_key_in_a_section_is_rejected_when_constructed_in_code() -> None:
    with pytest.raises(ValueError, match="mastr"):
        SparkSettings.model_validate({"mastr": "local[2]"})


def test_missing_required_section_is_named(tmp_path: Path) -> None:
    path = write_config(tmp_path, "input:\n  path: in\n")
    with pytest.raises(ConfigError, match=r"storage: Field required"):
        load_config(path, env={})


def test_duplicate_yaml_key_is_rejected(tmp_path: Path) -> None:
    path = write_config(tmp_path, MINIMAL_YAML + "spark:\n  master: local\n  master: local[2]\n")
    with pytest.raises(ConfigError, match="duplicate key 'master'"):
        load_config(path, env={})


def test_malformed_yaml_and_a_top_level_that_is_not_a_mapping_are_config_errors(tmp_path: Path) -> None:
    path = write_config(tmp_path, MINIMAL_YAML + "spark: [local\n")
    with pytest.raises(ConfigError, match=r"(?s)config\.yaml: invalid YAML: while parsing .*line 6"):
        load_config(path, env={})
    path = write_config(tmp_path, "- input\n- storage\n")
    with pytest.raises(ConfigError, match="the top level must be a mapping of sections, not list"):
        load_config(path, env={})


def test_quoted_boolean_is_rejected_as_not_a_real_boolean(tmp_path: Path) -> None:
    path = write_config(tmp_path, MINIMAL_YAML + 'spark:\n  ui_enabled: "false"\n')
    with pytest.raises(ConfigError, match=r"spark\.ui_enabled: Input should be a valid boolean"):
        load_config(path, env={})


def test_missing_config_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "absent.yaml", env={})


def test_env_overrides_apply_with_yaml_types() -> None:
    cfg = load_config(
        env={
            "BINLOG_LAKEHOUSE__SPARK__MASTER": "local[2]",
            "BINLOG_LAKEHOUSE__SPARK__UI_ENABLED": "true",
            "BINLOG_LAKEHOUSE__SPARK__SHUFFLE_PARTITIONS": "8",
            "BINLOG_LAKEHOUSE__SPARK__DRIVER_MEMORY": "null",
            "BINLOG_LAKEHOUSE__INPUT__MODIFIED_AFTER": "2024-05-01T12:00:00+02:00",
            "BINLOG_LAKEHOUSE__DECODER__VERIFY_CHECKSUMS": "false",
            "BINLOG_LAKEHOUSE__STORAGE__GOLD_DATABASE": "audit",
            "UNRELATED": "ignored",
        }
    )
    assert cfg.spark.master == "local[2]"
    assert cfg.spark.ui_enabled is True
    assert cfg.spark.shuffle_partitions == 8
    assert cfg.spark.driver_memory is None
    assert cfg.input.modified_after == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert cfg.decoder.verify_checksums is False
    assert cfg.storage.gold_database == "audit"


def test_env_override_names_are_case_insensitive_for_model_keys() -> None:
    cfg = load_config(env={"binlog_lakehouse__Spark__App_Name": "nightly"})
    assert cfg.spark.app_name == "nightly"


def test_env_override_of_an_invalid_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"spark\.shuffle_partitions: .*BINLOG_LAKEHOUSE__SPARK__SHUFFLE_PARTITIONS"):
        load_config(env={"BINLOG_LAKEHOUSE__SPARK__SHUFFLE_PARTITIONS": "0"})


def test_unknown_env_override_is_rejected_by_name() -> None:
    with pytest.raises(ConfigError, match=r"BINLOG_LAKEHOUSE__SPARK__MASTR: unknown setting 'spark\.mastr'"):
        load_config(env={"BINLOG_LAKEHOUSE__SPARK__MASTR": "local[2]"})


def test_unknown_env_section_is_rejected_by_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting 'sprak'"):
        load_config(env={"BINLOG_LAKEHOUSE__SPRAK__MASTER": "local[2]"})


def test_env_override_below_a_single_value_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"'spark\.master' is a single value"):
        load_config(env={"BINLOG_LAKEHOUSE__SPARK__MASTER__X": "1"})


def test_env_override_into_spark_conf_keeps_key_case_and_other_entries() -> None:
    cfg = load_config(
        env={
            "BINLOG_LAKEHOUSE__SPARK__CONF__spark.sql.adaptive.coalescePartitions.enabled": "false",
            "BINLOG_LAKEHOUSE__SPARK__CONF": "{spark.executor.memory: 4g}",
        }
    )
    assert cfg.spark.conf["spark.sql.adaptive.coalescePartitions.enabled"] is False
    assert cfg.spark.conf["spark.executor.memory"] == "4g"
    assert cfg.spark.conf["spark.driver.maxResultSize"] == "512m"  # from local.yaml


def test_relative_paths_resolve_against_the_project_root_not_the_working_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load_config(CONF_DIR / "local.yaml", env={})
    assert cfg.input.path == str(PROJECT_ROOT / "tests" / "fixtures" / "mariadb" / "sample")
    assert cfg.storage.root == str(PROJECT_ROOT / "lakehouse")
    assert cfg.spark.ivy_dir == str(PROJECT_ROOT / ".cache" / "ivy")
    assert cfg.spark.warehouse_dir == str(PROJECT_ROOT / "lakehouse" / "_warehouse")


def test_relative_path_from_an_env_override_resolves_against_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load_config(env={"BINLOG_LAKEHOUSE__STORAGE__ROOT": "elsewhere/lake"})
    assert cfg.storage.root == str(PROJECT_ROOT / "elsewhere" / "lake")


def test_absolute_paths_and_uris_are_kept(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        f"input:\n  path: {tmp_path}/binlogs\nstorage:\n  root: file:/data/lake\n"
        "spark:\n  jars: [hdfs://nn/jars/delta.jar, lib/delta.jar]\n",
    )
    cfg = load_config(path, env={})
    assert cfg.input.path == f"{tmp_path}/binlogs"
    assert cfg.storage.root == "file:/data/lake"
    assert cfg.spark.jars == ["hdfs://nn/jars/delta.jar", str(PROJECT_ROOT / "lib" / "delta.jar")]


def test_naive_modified_after_is_taken_as_utc(tmp_path: Path) -> None:
    path = write_config(tmp_path, MINIMAL_YAML.replace("path: in", "path: in\n  modified_after: 2024-05-01 08:30:00"))
    cfg = load_config(path, env={})
    assert cfg.input.modified_after == datetime(2024, 5, 1, 8, 30, tzinfo=UTC)


def test_date_only_modified_after_means_midnight_utc(tmp_path: Path) -> None:
    path = write_config(tmp_path, MINIMAL_YAML.replace("path: in", "path: in\n  modified_after: 2024-05-01"))
    assert load_config(path, env={}).input.modified_after == datetime(2024, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("packages", ["io.delta:delta-spark"], "not a Maven coordinate"),
        ("driver_memory", "2 GB", "not a JVM memory size"),
        ("master", "", "use null to take the master from spark-submit"),
        ("log_level", "VERBOSE", "Input should be"),
    ],
)
def test_invalid_spark_values_are_rejected(key: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SparkSettings.model_validate({key: value})


def test_a_moved_storage_root_moves_the_derived_metastore_and_warehouse_with_it(tmp_path: Path) -> None:
    cfg = load_config(CONF_DIR / "local.yaml", env={"BINLOG_LAKEHOUSE__STORAGE__ROOT": f"file://{tmp_path}/lake"})
    assert cfg.spark.metastore_dir == f"{tmp_path}/lake/_metastore"
    assert cfg.spark.warehouse_dir == f"{tmp_path}/lake/_warehouse"


def test_a_uri_storage_root_derives_no_derby_metastore_and_no_warehouse() -> None:
    cfg = AppConfig.model_validate(
        {"spark": {"catalog": "hive"}, "input": {"path": "s3a://b/in"}, "storage": {"root": "s3a://b/lake"}}
    )
    assert (cfg.spark.catalog, cfg.spark.metastore_dir, cfg.spark.warehouse_dir) == ("hive", None, None)


def test_explicit_metastore_and_warehouse_dirs_are_kept(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        MINIMAL_YAML + "spark:\n  catalog: hive\n  metastore_dir: file:/srv/meta\n  warehouse_dir: s3a://b/wh\n",
    )
    cfg = load_config(path, env={})
    assert (cfg.spark.metastore_dir, cfg.spark.warehouse_dir) == ("/srv/meta", "s3a://b/wh")


def test_the_in_memory_catalog_derives_a_warehouse_but_no_metastore(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, MINIMAL_YAML + "spark:\n  catalog: in-memory\n"), env={})
    assert (cfg.spark.metastore_dir, cfg.spark.warehouse_dir) == (None, str(PROJECT_ROOT / "out" / "_warehouse"))


@pytest.mark.parametrize(
    ("spark", "message"),
    [
        ({"catalog": "hive", "metastore_dir": "s3a://b/meta"}, "must be a local path or file: URI"),
        ({"catalog": "hive", "metastore_dir": "/srv/a;b"}, "cannot contain ';'"),
        ({"metastore_dir": "/srv/meta"}, "metastore_dir is only used with catalog: hive"),
        ({"catalog": "derby"}, "Input should be 'hive' or 'in-memory'"),
    ],
)
def test_invalid_catalog_settings_are_rejected(spark: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SparkSettings.model_validate(spark)
