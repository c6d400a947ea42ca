"""What the loader (:mod:`conf.loader`) and the cache of validated files (:mod:`conf.query`) share:
the default file, the prefix of environment overrides, the error and the type of ``spark.conf``'s values,
without pydantic or YAML."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_CONFIG", "ENV_PREFIX", "ConfigError", "SparkConfValue"]

DEFAULT_CONFIG = Path(__file__).resolve().parent / "local.yaml"
ENV_PREFIX = "BINLOG_LAKEHOUSE__"

SparkConfValue = str | bool | int | float
"""A value of ``spark.conf`` (YAML scalars, kept with their type)."""


class ConfigError(ValueError):
    """A configuration file or override is unreadable, has unknown keys or invalid values."""
