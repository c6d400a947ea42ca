"""Schema history of one server from seed, DDL replay and table-map shapes (no Spark session).

Positions order like one server's binlog: files by sequence number (``mysql-bin.1000000`` follows
``mysql-bin.999999`` although its path sorts first), then offset, then inner index; a seed
version comes before every event.  Every version ends where the next version of its table starts.
"""

from __future__ import annotations

from typing import Any

from pipelines.silver.ddl import parse_seed
from pipelines.silver.history import event_key, names_at, position_key, replay_history

# MySQL and MariaDB number a binlog past 999999 with a seventh digit: path order is not binlog order
A, B = "/logs/mysql-bin.999999", "/logs/mysql-bin.1000000"
SEQUENCE = {A: 999999, B: 1000000}


def ddl(
    file: str, offset: int, statement: str, default_schema: str | None = None, inner: int | None = None
) -> dict[str, Any]:
    return {
        "file": file,
        "offset": offset,
        "inner_index": inner,
        "sequence": SEQUENCE[file],
        "default_schema": default_schema,
        "statement": statement,
    }


def shape(file: str, offset: int, table: str, fingerprint: str, columns: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "file": file,
        "offset": offset,
        "inner_index": None,
        "sequence": SEQUENCE[file],
        "schema_name": "shop",
        "table_name": table,
        "fingerprint": fingerprint,
        "columns": [
            {"position": i + 1, "name": n, "type": t, "nullable": True, "charset": None, "collation": None}
            for i, (n, t) in enumerate(columns)
        ],
    }


def summary(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(table, version, valid from, valid to, source, column names) of each history row."""
    return [
        (
            r["table_name"],
            r["version"],
            (r["valid_from_sequence"], r["valid_from_offset"]),
            (r["valid_to_sequence"], r["valid_to_offset"]),
            r["source"],
            None if r["columns"] is None else [c["name"] for c in r["columns"]],
        )
        for r in rows
    ]


def test_versions_follow_create_alter_rename_drop_and_recreate_in_binlog_order() -> None:
    statements = [
        ddl(B, 10, "ALTER TABLE shop.t2 ADD COLUMN c INT FIRST"),  # sequence order beats list and path order
        ddl(A, 100, "CREATE TABLE shop.t (id INT NOT NULL, a INT)"),
        ddl(A, 200, "ALTER TABLE t ADD COLUMN b VARCHAR(5) AFTER id", default_schema="shop"),
        ddl(A, 300, "RENAME TABLE shop.t TO shop.t2"),
        ddl(A, 400, "DROP TABLE IF EXISTS shop.t2"),
        ddl(A, 500, "CREATE TABLE shop.t2 (k CHAR(3) NOT NULL)"),
    ]
    rows, results = replay_history(None, statements, [])
    a, b = SEQUENCE[A], SEQUENCE[B]
    assert summary(rows) == [
        ("t", 1, (a, 100), (a, 200), "ddl", ["id", "a"]),
        ("t", 2, (a, 200), (a, 300), "ddl", ["id", "b", "a"]),
        ("t", 3, (a, 300), (None, None), "ddl", None),
        ("t2", 1, (a, 300), (a, 400), "ddl", ["id", "b", "a"]),
        ("t2", 2, (a, 400), (a, 500), "ddl", None),
        ("t2", 3, (a, 500), (b, 10), "ddl", ["k"]),
        ("t2", 4, (b, 10), (None, None), "ddl", ["c", "k"]),
    ]
    assert [(r["valid_from_file"], r["valid_to_file"]) for r in rows[-2:]] == [(A, B), (B, None)]
    assert rows[0]["statement"] == "CREATE TABLE shop.t (id INT NOT NULL, a INT)"
    assert [c["type"] for c in rows[1]["columns"]] == ["int", "varchar(5)", "int"]
    assert list(results) == [(A, 100, -1), (A, 200, -1), (A, 300, -1), (A, 400, -1), (A, 500, -1), (B, 10, -1)]
    assert all(r.error is None for r in results.values())
    assert results[event_key(A, 300, None)].objects == [("shop", "t", "rename_from"), ("shop", "t2", "rename_to")]


def test_event_keys_name_an_event_with_minus_one_outside_a_compressed_transaction() -> None:
    assert event_key(A, 4711, None) == (A, 4711, -1)
    assert event_key(A, 4711, 0) == (A, 4711, 0)
    rows, results = replay_history(None, [ddl(A, 900, "CREATE TABLE shop.x (id INT)", inner=2)], [])
    assert list(results) == [(A, 900, 2)]
    assert (rows[0]["valid_from_offset"], rows[0]["valid_from_inner_index"]) == (900, 2)


def test_positions_sort_by_sequence_then_file_offset_and_inner_index_with_the_seed_first() -> None:
    ordered = [
        position_key(None, None, None),  # a seed version
        position_key(A, 4, None, 999999),
        position_key(A, 4, 0, 999999),
        position_key(A, 4, 1, 999999),
        position_key(A, 5, None, 999999),
        position_key(B, 4, None, 1000000),
    ]
    assert sorted(reversed(ordered)) == ordered
    assert position_key(A, 4, None, 999999) == (999999, A, 4, -1)


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
    a, b = SEQUENCE[A], SEQUENCE[B]
    assert summary(rows) == [
        ("t", 1, (a, 100), (a, 900), "ddl", ["id", "a"]),
        ("t", 2, (a, 900), (b, 50), "table_map", ["id", "a", "z"]),
        ("t", 3, (b, 50), (None, None), "table_map", ["id", "a", "z"]),
    ]
    assert [r["fingerprint"] for r in rows] == [None, "f2", "f3"]


def test_ddl_on_a_table_only_its_maps_showed_is_replayed_over_the_maps_columns() -> None:
    rows, results = replay_history(
        None,
        [ddl(A, 500, "ALTER TABLE shop.old ADD COLUMN note TEXT"), ddl(A, 600, "RENAME TABLE shop.old TO shop.new")],
        [shape(A, 100, "old", "f1", [("id", "int"), ("v", "varchar(10)")])],
    )
    a = SEQUENCE[A]
    assert summary(rows) == [
        ("old", 1, (a, 100), (a, 500), "table_map", ["id", "v"]),
        ("old", 2, (a, 500), (a, 600), "ddl", ["id", "v", "note"]),
        ("old", 3, (a, 600), (None, None), "ddl", None),
        ("new", 1, (a, 600), (None, None), "ddl", ["id", "v", "note"]),
    ]
    assert all(r.error is None for r in results.values())


def test_seed_versions_come_first_and_drop_database_closes_its_tables() -> None:
    seed = parse_seed("USE shop;\nCREATE TABLE `t` (`id` int NOT NULL, `n` decimal(10,2) DEFAULT NULL);")
    rows, _ = replay_history(seed, [ddl(A, 100, "DROP DATABASE shop")], [])
    a = SEQUENCE[A]
    assert summary(rows) == [
        ("t", 1, (None, None), (a, 100), "seed", ["id", "n"]),
        ("t", 2, (a, 100), (None, None), "ddl", None),
    ]
    assert (rows[0]["valid_from_file"], rows[0]["valid_to_file"]) == (None, A)
    assert rows[0]["columns"][1] == {
        "position": 2,
        "name": "n",
        "type": "decimal(10,2)",
        "nullable": True,
        "charset": None,
        "collation": None,
        "default": None,
        "primary_key": False,
    }


def test_names_at_gives_the_columns_of_the_version_in_force_at_a_position_of_the_server() -> None:
    rows, _ = replay_history(
        parse_seed("CREATE TABLE shop.t (id INT)"),
        [
            ddl(A, 100, "ALTER TABLE shop.t ADD COLUMN a INT"),
            ddl(B, 40, "DROP TABLE shop.t"),
        ],
        [],
    )

    def names(file: str, offset: int, table: str = "t") -> list[str] | None:
        columns = names_at(rows, "SHOP", table, file, offset, None, SEQUENCE[file])
        return None if columns is None else [c["name"] for c in columns]

    assert names(A, 50) == ["id"]
    assert names(A, 100) == ["id", "a"]  # a version holds from its own position on
    assert names(B, 39) == ["id", "a"]
    assert names(B, 40) is None  # dropped
    assert names(B, 5000) is None
    assert names(A, 50, "missing") is None
