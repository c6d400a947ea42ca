"""``binlog_core.names``: TABLE_MAPs without column names are completed from a FULL map of the same
table seen earlier in the files, carried through the ALTER TABLE statements between -- and only then.

The bundled ``sample`` switches to ``binlog_row_metadata=NO_LOG`` before file 3 and modifies a
column of ``products`` in file 3; a private server runs a longer chain of ALTERs after the switch,
and its script replayed on a fresh server must rebuild the tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from binlog_core.cli import EXIT_ERRORS, EXIT_WARNINGS
from binlog_core.columns import DecodeOptions
from binlog_core.decoder import RowChange, decode_file
from binlog_core.names import ColumnNames
from binlog_core.table_map import TableMap
from tests.binlog_core.sql_servers import apply_script, dump_script, table_contents
from tests.fixtures.truth import FIXTURES
from tests.harness.mariadb import DEFAULT_BINLOG_OPTIONS, MariaDBServer, ServerFactory

SAMPLE = sorted((FIXTURES / "sample").glob("mysql-bin.*"))


def completed_maps(paths: Sequence[Path]) -> dict[tuple[str, str, str], TableMap]:
    """The table map of the last row change of each table per file, as :class:`ColumnNames` completes it."""
    names = ColumnNames(DecodeOptions())
    found: dict[tuple[str, str, str], TableMap] = {}
    for path in paths:
        names.begin_file(path.name)
        for item in decode_file(path):
            changes = names.observe(item)
            assert not isinstance(changes, Exception)
            for change in changes:
                assert isinstance(change, RowChange)
                found[(path.name, change.schema, change.table)] = change.table_map
    return found


def test_a_map_of_the_same_shape_as_the_last_full_map_takes_all_it_said() -> None:
    maps = completed_maps(SAMPLE)
    full, completed = maps[("mysql-bin.000002", "shop", "customers")], maps[("mysql-bin.000004", "shop", "customers")]
    assert completed.column_names == ("id", "email", "full_name", "country", "loyalty_tier", "created_at", "status")
    assert [(c.unsigned, c.collation, c.enum_values) for c in completed.columns] == [
        (c.unsigned, c.collation, c.enum_values) for c in full.columns
    ]
    assert completed.primary_key == (0,)


def test_a_column_an_alter_table_modified_takes_its_name_and_nothing_else_from_the_statement() -> None:
    # file 3: ALTER TABLE shop.products MODIFY name VARCHAR(200) NOT NULL, under NO_LOG
    completed = completed_maps(SAMPLE)[("mysql-bin.000003", "shop", "products")]
    assert completed.column_names == ("id", "sku", "name", "price", "attributes", "stock", "updated_at")
    assert [(c.name, c.length, c.collation) for c in completed.columns[1:3]] == [
        ("sku", 128, 45),
        ("name", 800, None),
    ]
    assert (completed.columns[0].unsigned, completed.primary_key) == (True, (0,))


def test_rows_of_a_completed_map_are_decoded_again_with_what_it_says() -> None:
    # file 4: customer 36 closed and removed; under NO_LOG the decoder alone gives the ENUM index
    decoded = [c for p in SAMPLE[3:4] for item in decode_file(p) for c in item.rows if c.table == "customers"]
    assert decoded[-1].before is not None and decoded[-1].before[-1] == 3
    maps = completed_maps(SAMPLE)
    names = ColumnNames(DecodeOptions())
    last: RowChange | None = None
    for path in SAMPLE:
        names.begin_file(path.name)
        for item in decode_file(path):
            changes = names.observe(item)
            assert not isinstance(changes, Exception)
            if path.name == "mysql-bin.000004" and changes and changes[-1].table == "customers":
                last = changes[-1]
    assert last is not None and last.before is not None
    assert (last.op, last.before[0], last.before[-1]) == ("delete", 36, "closed")
    assert last.table_map == maps[("mysql-bin.000004", "shop", "customers")]


# -- a private server: FULL, then NO_LOG and a chain of ALTERs --------------------------------

FULL_PART = (
    "CREATE DATABASE nm",
    "CREATE TABLE nm.t (id INT UNSIGNED NOT NULL PRIMARY KEY, a INT UNSIGNED, b VARCHAR(10) CHARACTER SET latin1,"
    " c CHAR(3), e ENUM('p','q')) DEFAULT CHARSET=utf8mb4",
    "INSERT INTO nm.t VALUES (1, 4000000000, _latin1 X'E9', 'x', 'q'), (2, NULL, NULL, 'yy', 'p')",
    "CREATE TABLE nm.u (id INT NOT NULL PRIMARY KEY, s VARCHAR(10) CHARACTER SET latin1)",
    "INSERT INTO nm.u VALUES (1, 'one')",
)
NO_LOG_PART = (
    "INSERT INTO nm.t VALUES (3, 4000000001, _latin1 X'E0', 'z', 'p')",
    "ALTER TABLE nm.t ADD COLUMN z INT FIRST, CHANGE b b2 VARCHAR(20) CHARACTER SET latin1,"
    " RENAME COLUMN c TO c3, MODIFY a BIGINT UNSIGNED",
    "UPDATE nm.t SET a = a + 1, b2 = _latin1 X'FC', z = -5 WHERE id = 1",
    "DELETE FROM nm.t WHERE id = 2",
    "UPDATE nm.t SET c3 = 'w' WHERE id = 3",
)
NOT_FOLLOWED = (
    "ALTER TABLE nm.u CONVERT TO CHARACTER SET utf8mb4",
    "INSERT INTO nm.u VALUES (2, 'two')",
)


@pytest.fixture
def switched(mariadb_factory: ServerFactory) -> tuple[MariaDBServer, list[Path]]:
    """A server that ran :data:`FULL_PART` with FULL metadata, then the rest with NO_LOG: the files of
    the first two parts, and the file of the third."""
    server = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    server.flush_binary_logs()
    first = server.current_binlog()
    with server.connect() as conn, conn.cursor() as cur:
        for statement in FULL_PART:
            cur.execute(statement)
        cur.execute("SET GLOBAL binlog_row_metadata = NO_LOG")
    with server.connect() as conn, conn.cursor() as cur:  # a new session takes the new setting
        for statement in NO_LOG_PART:
            cur.execute(statement)
        cur.execute("FLUSH BINARY LOGS")
        for statement in NOT_FOLLOWED:
            cur.execute(statement)
    server.flush_binary_logs()
    names = server.binlog_files()
    return server, [server.binlog_dir / name for name in names[names.index(first) : -1]]


@pytest.mark.mariadb
def test_names_followed_through_add_first_change_rename_and_modify_replay_exactly(
    switched: tuple[MariaDBServer, list[Path]], mariadb_factory: ServerFactory, tmp_path: Path
) -> None:
    source, files = switched
    status, script = dump_script(tmp_path / "names.sql", "--rows-as", "sql", *files[:-1])
    # the latin1 bytes of b2 do not decode in the default charset (the file names none): a warning
    assert status == EXIT_WARNINGS
    assert "UPDATE `nm`.`t` SET `z` = -5, `id` = 1, `a` = 4000000001, `b2` = X'FC', `c3` = 'x', `e` = 'q'" in script
    target = mariadb_factory(dict(DEFAULT_BINLOG_OPTIONS))
    apply_script(target, tmp_path / "names.sql")
    expected = table_contents(source)
    expected[("nm", "u")] = [(1, "one")]  # the NOT_FOLLOWED part is in the last file, not replayed
    assert table_contents(target) == expected


@pytest.mark.mariadb
def test_a_convert_to_character_set_is_not_followed_and_the_next_rows_are_refused(
    switched: tuple[MariaDBServer, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _source, files = switched
    status, script = dump_script(tmp_path / "names.sql", "--rows-as", "sql", *files)
    assert status == EXIT_ERRORS
    problems = [line for line in capsys.readouterr().err.splitlines() if "\tUNDECODABLE_TEXT\t" not in line]
    assert len(problems) == 1
    assert problems[0].startswith(f"{files[-1].name}\t")
    assert "\tCOLUMN_NAMES_UNKNOWN\tWRITE_ROWS_V1 -> row 0 -> col 1 @1: after image:" in problems[0]
    assert "ALTER TABLE nm.u CONVERT TO CHARACTER SET utf8mb4;" in script
