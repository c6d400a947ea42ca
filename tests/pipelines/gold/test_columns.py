"""TABLE_MAP columns completed from the schema history: only what the map leaves open, only where the types agree."""

from __future__ import annotations

from typing import Any

from binlog_core.charsets import BINARY_COLLATION
from binlog_core.constants import ColumnType
from binlog_core.table_map import Column
from pipelines.gold.columns import completed_columns


def _map_column(index: int, type_code: int, **known: Any) -> Column:
    return Column(index, type_code, type_code, 0, True, **known)


def _spec(name: str, type_text: str, charset: str | None = None, collation: str | None = None) -> dict[str, Any]:
    return {
        "position": 1,
        "name": name,
        "type": type_text,
        "nullable": True,
        "charset": charset,
        "collation": collation,
    }


def test_a_map_without_metadata_takes_names_signedness_labels_and_charsets_from_the_history() -> None:
    columns = [
        _map_column(0, ColumnType.LONGLONG),
        _map_column(1, ColumnType.LONG),
        _map_column(2, ColumnType.ENUM),
        _map_column(3, ColumnType.SET),
        _map_column(4, ColumnType.STRING),
        _map_column(5, ColumnType.STRING),
        _map_column(6, ColumnType.VARCHAR),
        _map_column(7, ColumnType.BLOB),
        _map_column(8, ColumnType.NEWDECIMAL),
    ]
    history = [
        _spec("id", "bigint unsigned"),
        _spec("n", "int(10) unsigned zerofill"),
        _spec("state", "enum('new','it''s','a,b')"),
        _spec("tags", "set('x','y')"),
        _spec("key16", "binary(16)"),
        _spec("addr", "inet6"),
        _spec("label", "varchar(20)", "latin1"),
        _spec("note", "text", "utf8mb4", "utf8mb4_bin"),
        _spec("price", "decimal(10,2)"),
    ]
    got = completed_columns(columns, history)
    assert [c.name for c in got] == [s["name"] for s in history]
    assert [c.unsigned for c in got] == [True, True, None, None, None, None, None, None, False]
    assert (got[2].enum_values, got[3].set_values) == (("new", "it's", "a,b"), ("x", "y"))
    assert [c.collation for c in got[4:8]] == [BINARY_COLLATION, BINARY_COLLATION, 5, 46]


def test_what_the_map_says_wins_and_a_history_of_another_type_adds_only_the_name() -> None:
    columns = [
        _map_column(0, ColumnType.LONG, name="id", unsigned=False),
        _map_column(1, ColumnType.VARCHAR, collation=8),
        _map_column(2, ColumnType.LONG),
        _map_column(3, ColumnType.ENUM, enum_values=("a",)),
    ]
    history = [
        _spec("ID", "int unsigned"),
        _spec("v", "varbinary(3)"),
        _spec("x", "varchar(5)", "latin1"),  # another shape at this position: the map's type decides
        _spec("e", "enum('b')"),
    ]
    got = completed_columns(columns, history)
    assert [(c.name, c.unsigned, c.collation) for c in got[:3]] == [
        ("id", False, None),
        ("v", None, 8),
        ("x", None, None),
    ]
    assert got[3].enum_values == ("a",)


def test_a_history_of_another_column_count_changes_nothing() -> None:
    columns = (_map_column(0, ColumnType.LONG), _map_column(1, ColumnType.LONG))
    assert completed_columns(columns, [_spec("a", "int unsigned")]) == columns
    assert completed_columns(columns, None) == columns
