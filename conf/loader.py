"""Load an ``AppConfig`` from a YAML file plus ``BINLOG_LAKEHOUSE__...`` environment overrides."""

from __future__ import annotations

import os
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from conf.common import DEFAULT_CONFIG, ENV_PREFIX, ConfigError
from conf.models import AppConfig
from conf.paths import default_base_dir

__all__ = ["DEFAULT_CONFIG", "ENV_PREFIX", "ConfigError", "env_overrides", "load_config", "read_config"]


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML loader that rejects duplicate keys instead of keeping the last one (libyaml's parser
    when PyYAML has it)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    """Build a mapping, failing on a key that appears twice."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_config(path: str | Path | None = None, env: Mapping[str, str] = os.environ) -> AppConfig:
    """Read the YAML config at ``path`` (default: ``conf/local.yaml``), apply environment overrides.

    An override is an environment variable ``BINLOG_LAKEHOUSE__<SECTION>__<KEY>`` (double
    underscores separate the levels, names are case-insensitive) whose value is parsed as YAML, so
    ``true``, ``4`` and ``null`` arrive typed::

        >>> cfg = load_config(env={"BINLOG_LAKEHOUSE__SPARK__MASTER": "local[2]"})
        >>> cfg.spark.master
        'local[2]'

    Relative local paths resolve against the project root (see ``conf.models``). Raises
    ``ConfigError`` naming the offending key for unknown keys and invalid values.
    """
    source = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        content = source.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read config file: {exc.strerror}") from None
    return read_config(content, source, env)[1]


def read_config(content: bytes, source: Path, env: Mapping[str, str] = os.environ) -> tuple[dict[str, Any], AppConfig]:
    """The settings ``content`` (the bytes of the file ``source``) holds, with the overrides of ``env``
    applied, and the configuration they validate to; raises ``ConfigError`` as :func:`load_config` does."""
    data = _parse_yaml(content.decode("utf-8"), source)
    origins: dict[str, str] = {}
    for env_name, keys, value in env_overrides(env):
        dotted = _apply_override(data, AppConfig, keys, value, env_name)
        origins[dotted] = env_name
    try:
        return data, AppConfig.model_validate(data, context={"base_dir": default_base_dir()})
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, origins)) from None


def env_overrides(env: Mapping[str, str]) -> list[tuple[str, list[str], Any]]:
    """The ``(variable, key path, parsed value)`` of every ``BINLOG_LAKEHOUSE__`` variable, sorted."""
    found = []
    for name in sorted(env):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        keys = name[len(ENV_PREFIX) :].split("__")
        if not all(keys):
            raise ConfigError(f"{name}: malformed override name (empty key between double underscores)")
        found.append((name, keys, _parse_scalar(env[name])))
    return found


def _parse_scalar(raw: str) -> Any:
    """Parse an override value as YAML (``true`` -> True, ``2`` -> 2); unparsable text stays a string."""
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def _parse_yaml(text: str, source: Path) -> dict[str, Any]:
    """The YAML mapping ``text`` (the content of ``source``) holds; an empty file is an empty mapping."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections, not {type(data).__name__}")
    return data


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``annotation`` (``Model`` or ``Model | None``), if any."""
    candidates = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _is_mapping(annotation: Any) -> bool:
    """True for ``dict[...]`` annotations (free-form sections such as ``spark.conf``)."""
    return get_origin(annotation) is dict


def _apply_override(data: dict[str, Any], model: type[BaseModel], keys: list[str], value: Any, env_name: str) -> str:
    """Set ``value`` at ``keys`` inside ``data``, checking each key against ``model``; return the dotted key."""
    trail: list[str] = []
    node = data
    current: type[BaseModel] | None = model
    for position, raw_key in enumerate(keys):
        last = position == len(keys) - 1
        if current is None:  # inside a free-form mapping: the rest of the name is one key, as written
            rest = "__".join(keys[position:])
            node[rest] = value
            return ".".join([*trail, rest])
        key = raw_key.lower()
        fields = current.model_fields
        if key not in fields:
            where = ".".join(trail) or "the top level"
            raise ConfigError(
                f"{env_name}: unknown setting {'.'.join([*trail, key])!r}; known keys in {where}: {', '.join(fields)}"
            )
        trail.append(key)
        annotation = fields[key].annotation
        if last:
            existing = node.get(key)
            if _is_mapping(annotation) and isinstance(value, dict) and isinstance(existing, dict):
                node[key] = {**existing, **value}
            else:
                node[key] = value
            return ".".join(trail)
        nested = _model_of(annotation)
        if nested is None and not _is_mapping(annotation):
            raise ConfigError(f"{env_name}: {'.'.join(trail)!r} is a single value, not a section")
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node, current = child, nested
    raise AssertionError("unreachable: keys is never empty")


def _describe(exc: ValidationError, source: Path, origins: Mapping[str, str]) -> str:
    """One line: the file, then per pydantic error the dotted key, what is wrong, and the override it
    came from (``conf.yaml: input.recursve: unknown key; storage.root: Field required``)."""
    parts = []
    for error in exc.errors():
        dotted = ".".join(str(part) for part in error["loc"])
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        origin = next((env for key, env in origins.items() if dotted == key or dotted.startswith(f"{key}.")), None)
        suffix = f" (from {origin})" if origin else ""
        parts.append(f"{dotted}: {message}{suffix}")
    return f"{source}: " + "; ".join(parts)
