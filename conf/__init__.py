"""Typed configuration of the binlog lakehouse: pydantic models and the YAML/environment loader.

>>> from conf import load_config
>>> cfg = load_config("conf/local.yaml")
>>> cfg.storage.bronze_database
'binlog_bronze'
"""

from conf.loader import DEFAULT_CONFIG, ENV_PREFIX, ConfigError, load_config
from conf.models import (
    AppConfig,
    CurrentSettings,
    DecoderSettings,
    InputSettings,
    PathOrUri,
    QualitySettings,
    Section,
    SilverSettings,
    SparkSettings,
    StorageSettings,
    default_delta_package,
    hadoop_aws_package,
    project_root,
)

__all__ = [
    "DEFAULT_CONFIG",
    "ENV_PREFIX",
    "AppConfig",
    "ConfigError",
    "CurrentSettings",
    "DecoderSettings",
    "InputSettings",
    "PathOrUri",
    "QualitySettings",
    "Section",
    "SilverSettings",
    "SparkSettings",
    "StorageSettings",
    "default_delta_package",
    "hadoop_aws_package",
    "load_config",
    "project_root",
]
