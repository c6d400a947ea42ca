"""Render the configuration reference (Markdown) from the pydantic models, for the README."""

from __future__ import annotations

import types
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from conf.loader import ENV_PREFIX
from conf.models import AppConfig, resolve_local_path, resolve_path

__all__ = ["render_reference"]

_SCALARS = {str: "string", bool: "boolean", int: "integer", float: "number", datetime: "datetime"}


def render_reference(root: type[BaseModel] = AppConfig) -> str:
    """A Markdown table per section of ``root``: key, type, default and description of each field."""
    out = [
        f"Every key can be overridden from the environment: `{ENV_PREFIX}<SECTION>__<KEY>=value` "
        f"(e.g. `{ENV_PREFIX}SPARK__MASTER=local[2]`), the value parsed as YAML (`true`, `4`, `null`, "
        "`[a, b]`); a mapping such as `spark.conf` is merged into the file's.",
    ]
    for name, field in root.model_fields.items():
        section = _section_model(field.annotation)
        if section is None:
            continue
        required = " (required section)" if field.is_required() else ""
        out += ["", f"### `{name}`{required}", "", _one_line(section.__doc__ or ""), ""]
        out += ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"]
        for key, info in section.model_fields.items():
            out.append(f"| `{name}.{key}` | {_type_name(info)} | {_default(info)} | {_cell(info.description or '')} |")
    return "\n".join(out) + "\n"


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The section model behind a root field, if it is one."""
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _one_line(text: str) -> str:
    """Collapse a docstring into one line."""
    return " ".join(text.split())


def _cell(text: str) -> str:
    """Escape a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _path_kind(metadata: list[Any]) -> str | None:
    """``path or URI`` or ``local path`` when ``metadata`` holds the resolver of ``PathOrUri`` or ``LocalPath``."""
    for item in metadata:
        func = getattr(item, "func", None)
        if func is resolve_path:
            return "path or URI"
        if func is resolve_local_path:
            return "local path"
    return None


def _type_of(annotation: Any) -> str:
    """A reader's name for a type annotation."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *metadata = get_args(annotation)
        return _path_kind(metadata) or _type_of(inner)
    if origin in (Union, types.UnionType):
        parts = [_type_of(arg) for arg in get_args(annotation) if arg is not type(None)]
        suffix = " or null" if type(None) in get_args(annotation) else ""
        return " or ".join(parts) + suffix
    if origin is list:
        return f"list of {_type_of(get_args(annotation)[0])}"
    if origin is dict:
        return "mapping"
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _type_name(info: FieldInfo) -> str:
    """The type of a field, noting path fields (their resolver sits in the field metadata)."""
    name = _type_of(info.annotation)
    kind = _path_kind(info.metadata)
    return name.replace("string", kind, 1) if kind else name


def _default(info: FieldInfo) -> str:
    """The default as it would be written in YAML, or *required*."""
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "*required*"
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return "see below"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | dict) and not value:
        return f"`{value}`"
    if isinstance(value, list):
        return ", ".join(f"`{item}`" for item in value)
    return _cell(f"`{value}`")
