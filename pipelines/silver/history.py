"""Schema history: each table's column list version by version (no Spark here).

:func:`replay_history` merges the three sources of one server in binlog order (files by their
sequence number, then path, then offset and inner index; a seed snapshot before everything):

* ``seed``: the user's ``SHOW CREATE TABLE`` snapshot (``silver.seed_path``), version 1 of the
  tables it lists;
* ``ddl``: every DDL statement replayed with :class:`pipelines.silver.ddl.SchemaRegistry`; a
  version is added when the statement leaves a table with a different column list (names and
  types), and a version with ``columns = None`` when it drops or renames the table away;
* ``table_map``: the column list a TABLE_MAP shows when the file carries names
  (``binlog_row_metadata=FULL``); a version is added when the table has none yet, when the
  names differ from the version in force, or when the version in force came from a map of
  another shape (fingerprint) - a map that merely confirms a DDL version adds nothing.

:func:`names_at` answers "which columns did ``schema.table`` have at this binlog position"
from schema-history rows (the DataFrame form is
:func:`pipelines.silver.transforms.resolve_columns`)::

    columns = names_at(history_rows, "shop", "orders", "s3a://b/mysql-bin.000007", 4711)
    [c["name"] for c in columns]      # ['id', 'total', 'note'], or None when unknown/dropped
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipelines.silver.ddl import ColumnSpec, DdlResult, SchemaRegistry

Position = tuple[int, str, int, int]
"""``(sequence, file, offset, inner index)``, ``-1``/``""`` for missing parts: sorts like one server's
binlog (a seed version, without a position, sorts first)."""

Key = tuple[str, int, int]
"""``(file, offset, inner index)``: names an event."""


def position_key(
    file: str | None, offset: int | None, inner_index: int | None, sequence: int | None = None
) -> Position:
    """The sort key of a binlog position within one server (a seed version sorts first)."""
    if file is None:
        return (-2, "", -1, -1)
    return (
        -1 if sequence is None else sequence,
        file,
        -1 if offset is None else offset,
        -1 if inner_index is None else inner_index,
    )


def event_key(file: str, offset: int, inner_index: int | None) -> Key:
    """The key of an event's replay result."""
    return (file, offset, -1 if inner_index is None else inner_index)


def spec_column(position: int, spec: ColumnSpec) -> dict[str, Any]:
    """A schema-history column (``HISTORY_COLUMN``) for a DDL/seed column."""
    return {
        "position": position,
        "name": spec.name,
        "type": spec.type,
        "nullable": spec.nullable,
        "charset": spec.charset,
        "collation": spec.collation,
        "default": spec.default,
        "primary_key": spec.primary_key,
    }


class _History:
    """Versions as they are added, with the version in force per table."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.current: dict[tuple[str, str], dict[str, Any]] = {}

    def in_force(self, schema: str, table: str) -> dict[str, Any] | None:
        return self.current.get((schema.lower(), table.lower()))

    def add(
        self, schema: str, table: str, columns: list[dict[str, Any]] | None, source: str, at: Mapping[str, Any]
    ) -> None:
        key = (schema.lower(), table.lower())
        previous = self.current.get(key)
        row = {
            "schema_name": schema,
            "table_name": table,
            "version": (previous["version"] + 1) if previous is not None else 1,
            "valid_from_sequence": at.get("sequence"),
            "valid_from_file": at.get("file"),
            "valid_from_offset": at.get("offset"),
            "valid_from_inner_index": at.get("inner_index"),
            "columns": columns,
            "source": source,
            "statement": at.get("statement"),
            "fingerprint": at.get("fingerprint"),
        }
        self.current[key] = row
        self.rows.append(row)


def _shape(columns: list[dict[str, Any]] | None) -> tuple[tuple[Any, ...], ...] | None:
    return None if columns is None else tuple((c["name"], c["type"], c["charset"], c["collation"]) for c in columns)


def _names(columns: list[dict[str, Any]] | None) -> tuple[str | None, ...] | None:
    return None if columns is None else tuple((c["name"] or "").lower() for c in columns)


def _spec_of_map_column(column: Mapping[str, Any]) -> ColumnSpec:
    return ColumnSpec(
        column["name"],
        column["type"],
        bool(column["nullable"]),
        column["charset"],
        column["collation"],
        column.get("default"),
    )


def _apply_result(history: _History, registry: SchemaRegistry, result: DdlResult, row: Mapping[str, Any]) -> None:
    """New versions for what one replayed DDL statement did (drops and renames close versions)."""
    moved: dict[tuple[str, str], list[dict[str, Any]] | None] = {}
    renamed_from: tuple[str, str] | None = None
    for schema, name, action in result.objects:
        if schema is None:
            continue
        if action == "drop_database":
            for key, version in list(history.current.items()):
                if key[0] == schema.lower() and version["columns"] is not None:
                    history.add(version["schema_name"], version["table_name"], None, "ddl", row)
        elif action in {"drop", "rename_from"}:
            before = history.in_force(schema, name)
            if action == "rename_from":
                renamed_from = (schema, name)
                moved[(schema, name)] = None if before is None else before["columns"]
            if before is not None and before["columns"] is not None:
                history.add(schema, name, None, "ddl", row)
        elif action == "rename_to" and renamed_from is not None:
            columns = moved.get(renamed_from)
            if registry.columns(schema, name) is None and columns is not None:
                # a table the replay does not know, only its maps: carry the history's columns over
                history.add(schema, name, columns, "ddl", row)
                registry.tables[registry.key(schema, name)] = [_spec_of_map_column(c) for c in columns]
            renamed_from = None
    for schema, table in result.changed:
        specs = registry.columns(schema, table) or []
        columns = [spec_column(i + 1, s) for i, s in enumerate(specs)]
        current = history.in_force(schema, table)
        if current is None or _shape(current["columns"]) != _shape(columns):
            history.add(schema, table, columns, "ddl", row)


def replay_history(
    seed: SchemaRegistry | None,
    ddl: Iterable[Mapping[str, Any]],
    map_shapes: Iterable[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], dict[Key, DdlResult]]:
    """``schema_history`` rows of one server and each DDL event's replay result (keyed by :func:`event_key`).

    ``ddl``: DDL events (``file, offset, inner_index, default_schema, statement``, and the file's
    ``sequence``); ``map_shapes``: table maps with names where a table's shape may change
    (``file, offset, inner_index, sequence, schema_name, table_name, fingerprint, columns``:
    schema-history columns).  Each version's ``valid_to_*`` is where the next version of its
    table starts (null: still in force).
    Versions are numbered from 1 per table (names compared case-insensitively, as MySQL does
    on Linux for schemas only - good enough for a history keyed by what the binlog says).
    """
    registry = SchemaRegistry()
    history = _History()
    if seed is not None:
        for (schema, table), specs in sorted(seed.tables.items()):
            registry.tables[(schema, table)] = list(specs)
            history.add(schema, table, [spec_column(i + 1, s) for i, s in enumerate(specs)], "seed", {})
    timeline = [("ddl", row) for row in ddl] + [("table_map", row) for row in map_shapes]
    timeline.sort(key=lambda item: (_position_of(item[1]), item[0]))
    results: dict[Key, DdlResult] = {}
    for source, row in timeline:
        if source == "ddl":
            result = registry.apply(row["statement"], row["default_schema"])
            results[event_key(row["file"], row["offset"], row["inner_index"])] = result
            _apply_result(history, registry, result, row)
            continue
        columns = list(row["columns"])
        schema, table = row["schema_name"], row["table_name"]
        current = history.in_force(schema, table)
        if (
            current is None
            or current["columns"] is None
            or _names(current["columns"]) != _names(columns)
            or (current["source"] == "table_map" and current["fingerprint"] != row["fingerprint"])
        ):
            history.add(schema, table, columns, "table_map", row)
        known = registry.columns(schema, table)
        if known is None or _names([spec_column(i + 1, s) for i, s in enumerate(known)]) != _names(columns):
            # the map is the truth here: later DDL (ALTER, RENAME) is replayed over it
            registry.tables[registry.key(schema, table)] = [_spec_of_map_column(c) for c in columns]
    return with_valid_to(history.rows), results


def _position_of(row: Mapping[str, Any]) -> Position:
    return position_key(row["file"], row["offset"], row["inner_index"], row.get("sequence"))


def with_valid_to(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History rows with ``valid_to_*``: where the next version of the same table starts."""
    following: dict[tuple[str, str], dict[str, Any]] = {}
    for row in reversed(rows):
        key = (row["schema_name"].lower(), row["table_name"].lower())
        after = following.get(key)
        row["valid_to_sequence"] = None if after is None else after["valid_from_sequence"]
        row["valid_to_file"] = None if after is None else after["valid_from_file"]
        row["valid_to_offset"] = None if after is None else after["valid_from_offset"]
        row["valid_to_inner_index"] = None if after is None else after["valid_from_inner_index"]
        following[key] = row
    return rows


def names_at(
    history_rows: Iterable[Mapping[str, Any]],
    schema: str,
    table: str,
    file: str,
    offset: int,
    inner_index: int | None = None,
    sequence: int | None = None,
) -> list[dict[str, Any]] | None:
    """The columns (``position, name, type, nullable, charset, collation, ...``) of ``schema.table``
    in force at a binlog position of one server, from its ``schema_history`` rows (dicts or Rows'
    ``asDict()``; a row without ``valid_from_sequence`` orders by path).

    The version in force is the latest one that starts at or before the position (files by
    sequence, then path, then offset, then inner index; seed versions first).  None when the table
    is not known there or was dropped.
    """
    here = position_key(file, offset, inner_index, sequence)
    best: tuple[Position, int] | None = None
    found: Mapping[str, Any] | None = None
    for row in history_rows:
        if row["schema_name"].lower() != schema.lower() or row["table_name"].lower() != table.lower():
            continue
        start = position_key(
            row["valid_from_file"],
            row["valid_from_offset"],
            row["valid_from_inner_index"],
            row.get("valid_from_sequence"),
        )
        if start <= here and (best is None or (start, row["version"]) > best):
            best, found = (start, row["version"]), row
    if found is None or found["columns"] is None:
        return None
    return [dict(c) if isinstance(c, Mapping) else c.asDict() for c in found["columns"]]


__all__ = ["Key", "Position", "event_key", "names_at", "position_key", "replay_history", "spec_column", "with_valid_to"]
