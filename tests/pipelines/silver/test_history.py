"""Schema history from seed, DDL replay and table-map shapes; the columns in force at a position."""

from __future__ import annotations

from typing import Any

from pipelines.silver.ddl import parse_seed
from pipelines.silver.history import names_at, replay_history

A, B = "/logs/mysql-bin.000001", "/logs/mysql-bin.000002"


def ddl(file: str, offset: int, statement: str, default_schema: str | None = None) -> dict[str, Any]:
    return {
        "file": file,
        "offset": offset,
        "inner_index": None,
        "default_schema": default_schema,
        "statement": statement,
    }


def shape(file: str, offset: int, table: str, fingerprint: str, columns: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "file": file,
        "offset": offset,
        "inner_index": None,
        "schema_name": "shop",
        "table_name": table,
        "fingerprint": fingerprint,
        "columns": [
            {"position": i + 1, "name": n, "type": t, "nullable": True, "charset": None, "collation": None}
            for i, (n, t) in enumerate(columns)
        ],
    }


def summary(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            r["table_name"],
            r["version"],
            r["valid_from_file"],
            r["valid_from_offset"],
            r["source"],
            None if r["columns"] is None else [c["name"] for c in r["columns"]],
        )
        for r in rows
    ]


def test_versions_follow_create_alter_rename_drop_and_recreate_in_file_order() -> None:
    statements = [
        ddl(B, 10, "ALTER TABLE shop.t2 ADD COLUMN c INT FIRST"),  # file order beats list order
        ddl(A, 100, "CREATE TABLE shop.t (id INT NOT NULL, a INT)"),
        ddl(A, 200, "ALTER TABLE t ADD COLUMN b VARCHAR(5) AFTER id", default_schema="shop"),
        ddl(A, 300, "RENAME TABLE shop.t TO shop.t2"),
        ddl(A, 400, "DROP TABLE IF EXISTS shop.t2"),
        ddl(A, 500, "CREATE TABLE shop.t2 (k CHAR(3) NOT NULL)"),
    ]
    rows, results = replay_history(None, statements, [])
    assert summary(rows) == [
        ("t", 1, A, 100, "ddl", ["id", "a"]),
        ("t", 2, A, 200, "ddl", ["id", "b", "a"]),
        ("t", 3, A, 300, "ddl", None),
        ("t2", 1, A, 300, "ddl", ["id", "b", "a"]),
        ("t2", 2, A, 400, "ddl", None),
        ("t2", 3, A, 500, "ddl", ["k"]),
        ("t2", 4, B, 10, "ddl", ["c", "k"]),
    ]
    assert rows[0]["statement"] == "CREATE TABLE shop.t (id INT NOT NULL, a INT)"
    assert [c["type"] for c in rows[1]["columns"]] == ["int", "varchar(5)", "int"]
    assert all(r.error is None for r in results.values()) and len(results) == 6


def test_a_map_confirming_the_ddl_adds_no_version_and_a_new_shape_without_ddl_does() -> None:
    rows, _ = replay_history(
        None,
        [ddl(A, 100, "CREATE TABLE shop.t (id INT, a INT)")],
        [
            shape(A, 150, "t", "f1", [("id", "int"), ("a", "int")]),  # same names as the DDL version
            shape(A, 900, "t", "f2", [("id", "int"), ("a", "int"), ("z", "date")]),  # ALTER not in the binlogs
            shape(B, 50, "t", "f3", [("id", "bigint"), ("a", "int"), ("z", "date")]),  # type change only
        ],
    )
    assert summary(rows) == [
        ("t", 1, A, 100, "ddl", ["id", "a"]),
        ("t", 2, A, 900, "table_map", ["id", "a", "z"]),
        ("t", 3, B, 50, "table_map", ["id", "a", "z"]),
    ]
    assert [r["fingerprint"] for r in rows] == [None, "f2", "f3"]


def test_ddl_on_a_table_only_its_maps_showed_is_replayed_over_the_maps_columns() -> None:
    rows, results = replay_history(
        None,
        [ddl(A, 500, "ALTER TABLE shop.old ADD COLUMN note TEXT"), ddl(A, 600, "RENAME TABLE shop.old TO shop.new")],
        [shape(A, 100, "old", "f1", [("id", "int"), ("v", "varchar(10)")])],
    )
    assert summary(rows) == [
        ("old", 1, A, 100, "table_map", ["id", "v"]),
        ("old", 2, A, 500, "ddl", ["id", "v", "note"]),
        ("old", 3, A, 600, "ddl", None),
        ("new", 1, A, 600, "ddl", ["id", "v", "note"]),
    ]
    assert all(r.error is None for r in results.values())


def test_seed_versions_come_first_and_drop_database_closes_its_tables() -> None:
    seed = parse_seed("USE shop;\nCREATE TABLE `t` (`id` int NOT NULL, `n` decimal(10,2) DEFAULT NULL);")
    rows, _ = replay_history(seed, [ddl(A, 100, "DROP DATABASE shop")], [])
    assert summary(rows) == [("t", 1, None, None, "seed", ["id", "n"]), ("t", 2, A, 100, "ddl", None)]
    assert rows[0]["columns"][1] == {
        "position": 2,
        "name": "n",
        "type": "decimal(10,2)",
        "nullable": True,
        "charset": None,
        "collation": None,
    }


def test_names_at_gives_the_columns_of_the_version_in_force_at_a_position() -> None:
    rows, _ = replay_history(
        parse_seed("CREATE TABLE shop.t (id INT)"),
        [
            ddl(A, 100, "ALTER TABLE shop.t ADD COLUMN a INT"),
            ddl(B, 40, "DROP TABLE shop.t"),
        ],
        [],
    )

    def names(file: str, offset: int, table: str = "t") -> list[str] | None:
        columns = names_at(rows, "SHOP", table, file, offset)
        return None if columns is None else [c["name"] for c in columns]

    assert names(A, 50) == ["id"]
    assert names(A, 100) == ["id", "a"]  # a version holds from its own position on
    assert names(B, 39) == ["id", "a"]
    assert names(B, 40) is None
    assert names(A, 50, "missing") is None
