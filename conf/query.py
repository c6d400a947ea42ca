"""What the query commands need of a configuration, without validating an unchanged file again.

``binlog-lakehouse sql`` with the embedded engine needs three things of the configuration, its
:class:`QuerySettings`: the lakehouse root, each layer's catalog database and ``spark.conf`` (its
Hadoop settings and session time zone). Validating the file (:func:`conf.load_config`) imports
pydantic and YAML and builds the models, which takes longer than answering a query. So
:func:`load_query_settings` validates a file in full the first time, exactly as ``load_config``
does (every section; unknown keys and invalid values are errors), and keeps its query settings in
a small JSON file in a cache folder; later commands read them from there as long as nothing the
validation depended on has changed:

* the file: its path, its bytes and its modification time;
* the ``conf`` package's sources (the models, the loader, this module);
* the installed pydantic, pydantic-core and PyYAML, and the Python version.

A file that fails validation is never kept: it fails on every run, with the same message. With
any ``BINLOG_LAKEHOUSE__...`` override in the environment the file is validated every time (and
nothing is kept). ``storage.root`` is kept as the file writes it and resolved on every read, as
validation resolves it: a relative path against the project root or the working directory of the
moment, ``~`` and symbolic links as they are then.

The cache folder is ``$BINLOG_LAKEHOUSE_CONFIG_CACHE``, else ``$XDG_CACHE_HOME/binlog-lakehouse/config``,
else ``~/.cache/binlog-lakehouse/config``; ``BINLOG_LAKEHOUSE_CONFIG_CACHE=off`` turns the cache off.
A configuration file has one entry there (named by a hash of its path, replaced when the file
changes), readable by its owner only: it holds the file's ``spark.conf``, with any credentials the
file has. A folder that cannot be written costs only the validation's time.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conf.common import DEFAULT_CONFIG, ENV_PREFIX, SparkConfValue
from conf.paths import absolute_path

if TYPE_CHECKING:
    from conf.models import AppConfig

__all__ = ["CACHE_OFF", "CACHE_VARIABLE", "QuerySettings", "cache_folder", "load_query_settings"]

CACHE_VARIABLE = "BINLOG_LAKEHOUSE_CONFIG_CACHE"
"""The cache folder, or ``off``."""
CACHE_OFF = "off"
ENTRY_FORMAT = 1
"""The layout of an entry: a change makes every older entry a miss."""
VALIDATORS = ("pydantic", "pydantic_core", "yaml")
"""The libraries whose installed files a validation's verdict depends on."""

_CONF_FOLDER = Path(__file__).resolve().parent


@dataclass(frozen=True)
class QuerySettings:
    """What the embedded query engine needs of a validated configuration."""

    root: str
    """``storage.root``, resolved: a local path or a URI."""
    layers: Mapping[str, str]
    """Each layer folder's catalog database, ``{"bronze": "binlog_bronze", ...}`` (``storage.<layer>_database``)."""
    spark_conf: Mapping[str, SparkConfValue]
    """``spark.conf``: its Hadoop settings reach object stores, its session time zone shows timestamps."""

    @classmethod
    def of(cls, cfg: AppConfig) -> QuerySettings:
        """The query settings of a validated configuration."""
        return cls(root=cfg.storage.root, layers=cfg.storage.layers(), spark_conf=dict(cfg.spark.conf))


def load_query_settings(path: str | Path | None = None, env: Mapping[str, str] = os.environ) -> QuerySettings:
    """The query settings of the config file at ``path`` (default: ``conf/local.yaml``), validated in full.

    Served from the cache while the file and the validation are unchanged (see the module); else
    validated by :func:`conf.loader.read_config`, which raises ``ConfigError`` for any unknown key
    or invalid value of any section, and kept when valid.
    """
    source = Path(path) if path is not None else DEFAULT_CONFIG
    folder = cache_folder(env)
    if folder is None or any(name.upper().startswith(ENV_PREFIX) for name in env):
        return _validated(source, env)
    try:
        with open(source, "rb") as file:
            content = file.read()
            modified = os.fstat(file.fileno()).st_mtime_ns
    except OSError:
        return _validated(source, env)  # the loader says why it cannot be read
    where = os.path.abspath(source)
    key = _key(where, content, modified)
    entry = folder / f"{hashlib.sha256(where.encode()).hexdigest()[:32]}.json"
    settings = _read_entry(entry, key)
    if settings is not None:
        return settings
    from conf.loader import read_config  # noqa: PLC0415 (pydantic and YAML only for a file not validated yet)

    data, cfg = read_config(content, source, env)
    settings = QuerySettings.of(cfg)
    _write_entry(entry, key, data["storage"]["root"], settings)
    return settings


def cache_folder(env: Mapping[str, str] = os.environ) -> Path | None:
    """Where validated files' query settings are kept (None: the cache is off)."""
    chosen = env.get(CACHE_VARIABLE, "").strip()
    if chosen.lower() == CACHE_OFF:
        return None
    if chosen:
        return Path(chosen).expanduser()
    home = env.get("XDG_CACHE_HOME", "").strip()
    base = Path(home) if os.path.isabs(home) else Path("~/.cache").expanduser()
    return base / "binlog-lakehouse" / "config"


def _validated(source: Path, env: Mapping[str, str]) -> QuerySettings:
    """The query settings of ``source`` validated now, without the cache."""
    from conf.loader import load_config  # noqa: PLC0415

    return QuerySettings.of(load_config(source, env))


def _key(where: str, content: bytes, modified: int) -> str:
    """What a validation's verdict on the file at ``where`` depends on, as one digest."""
    digest = hashlib.sha256()
    for part in (str(ENTRY_FORMAT), sys.version, where, str(modified), *_validator_stamps()):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for name in sorted(os.listdir(_CONF_FOLDER)):
        if name.endswith(".py"):
            digest.update(name.encode() + b"\0" + (_CONF_FOLDER / name).read_bytes() + b"\0")
    digest.update(content)
    return digest.hexdigest()


def _validator_stamps() -> list[str]:
    """Each validating library's installed file (its path, inode, size and modification time)."""
    stamps = []
    for name in VALIDATORS:
        spec = find_spec(name)
        origin = spec.origin if spec is not None else None
        try:
            stat = os.stat(origin) if origin else None
        except OSError:
            stat = None
        seen = f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}" if stat is not None else "missing"
        stamps.append(f"{name}:{origin}:{seen}")
    return stamps


def _read_entry(entry: Path, key: str) -> QuerySettings | None:
    """The settings ``entry`` keeps for ``key``; None when it is missing, stale or unreadable."""
    try:
        with open(entry, encoding="utf-8") as file:
            data: Any = json.load(file)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    root, layers, spark_conf = data.get("root"), data.get("layers"), data.get("spark_conf")
    if not (
        isinstance(root, str)
        and isinstance(layers, dict)
        and all(isinstance(value, str) for value in layers.values())
        and isinstance(spark_conf, dict)
        and all(isinstance(value, str | bool | int | float) for value in spark_conf.values())
    ):
        return None
    return QuerySettings(root=absolute_path(root), layers=layers, spark_conf=spark_conf)


def _write_entry(entry: Path, key: str, root: str, settings: QuerySettings) -> None:
    """Keep ``settings`` for ``key`` (``root`` as the file writes it), readable by the owner only."""
    data = {"key": key, "root": root, "layers": dict(settings.layers), "spark_conf": dict(settings.spark_conf)}
    partial = entry.with_name(f".{entry.name}.{os.getpid()}")
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.replace(partial, entry)
    except OSError:
        with suppress(OSError):
            partial.unlink(missing_ok=True)
