"""Typed configuration of the binlog lakehouse: pydantic models and the YAML/environment loader.

>>> from conf import load_config
>>> cfg = load_config("conf/local.yaml")
>>> cfg.storage.bronze_database
'binlog_bronze'

The names below are imported from their modules on first use: importing a pydantic-free module of
this package (:mod:`conf.query`, :mod:`conf.paths`) imports neither pydantic nor YAML.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conf.common import DEFAULT_CONFIG, ENV_PREFIX, ConfigError
    from conf.loader import load_config
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
    )
    from conf.paths import project_root

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

_MODULES = {
    "conf.common": ("DEFAULT_CONFIG", "ENV_PREFIX", "ConfigError"),
    "conf.loader": ("load_config",),
    "conf.paths": ("project_root",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A name of ``__all__``, imported from its module on first use (the models' names from ``conf.models``)."""
    if name not in __all__:
        raise AttributeError(f"module 'conf' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME.get(name, "conf.models")), name)
    globals()[name] = value
    return value
